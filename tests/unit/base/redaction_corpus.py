"""Realistic fake secrets for test_redact: ``(kind, sample_text, secret_substring)``.

Each secret is assembled at import time from a seeded generator in the shape
the vendor uses (prefix, length, alphabet), so the samples look real to the
redactor while this file holds no literal a push-protection scanner would flag,
and every run sees the same samples. ``NEGATIVES`` is text that must come out
of redaction untouched.
"""

from __future__ import annotations

import base64
import json
import random
import string

from memtray.core.base.redact import add_known_secret

_rng = random.Random(0x5EC12E7)

UPPER = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def pem(label: str, lines: int = 6) -> tuple[str, str]:
    body = [rand(B64, 64) for _ in range(lines)] + [rand(B64, 20) + "=="]
    block = f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----"
    return block, body[2]


def jwt(claims: dict[str, object]) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{rand(B64URL, 43)}"


def password() -> str:
    return rand(ALNUM, 6) + _rng.choice("!#%^*") + rand(ALNUM, 5)


# --- secrets ---------------------------------------------------------------------------

_openai = [
    "sk-" + "proj-" + rand(B64URL, 156),
    "sk-" + rand(ALNUM, 20) + "T3Blbk" + "FJ" + rand(ALNUM, 20),
    "sk-" + "svcacct-" + rand(B64URL, 120),
    "sk-" + rand(ALNUM, 48),
    "sk-" + "admin-" + rand(B64URL, 80),
]
_anthropic = ["sk-" + "ant-" + "api03-" + rand(B64URL, 93) + "AA" for _ in range(3)]
_aws_ids = ["AKIA" + rand(UPPER, 16), "ASIA" + rand(UPPER, 16), "AKIA" + rand(UPPER, 16)]
_aws_secrets = [rand(ALNUM + "/+", 40) for _ in range(3)]
_github = [
    "ghp_" + rand(ALNUM, 36),
    "gho_" + rand(ALNUM, 36),
    "ghu_" + rand(ALNUM, 36),
    "ghs_" + rand(ALNUM, 36),
    "ghr_" + rand(ALNUM, 36),
    "github_" + "pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59),
]
_slack_tokens = [
    "xoxb-" + rand(string.digits, 12) + "-" + rand(string.digits, 13) + "-" + rand(ALNUM, 24),
    "xoxp-" + rand(string.digits, 12) + "-" + rand(string.digits, 12) + "-" + rand(HEX, 32),
    "xapp-1-A0" + rand(UPPER, 9) + "-" + rand(string.digits, 13) + "-" + rand(HEX, 64),
]
_slack_hooks = [
    f"T{rand(UPPER, 8)}/B{rand(UPPER, 10)}/{rand(ALNUM, 24)}",
    f"T{rand(UPPER, 10)}/B{rand(UPPER, 11)}/{rand(ALNUM, 24)}",
    f"T{rand(UPPER, 9)}/A{rand(UPPER, 10)}/{rand(string.digits, 18)}/{rand(ALNUM, 24)}",
]
_google = ["AIza" + rand(B64URL, 35) for _ in range(3)]
_jwts = [
    jwt({"sub": "1234567890", "name": "Sam Example", "iat": 1716239022}),
    jwt({"iss": "https://auth.example.com", "aud": "memtray", "exp": 1900000000}),
    jwt({"email": "sam@example.com", "scope": "read write"}),
]
_rsa, _rsa_line = pem("RSA PRIVATE KEY")
_ssh, _ssh_line = pem("OPENSSH PRIVATE KEY")
_pkcs8, _pkcs8_line = pem("PRIVATE KEY", 4)
_pgp, _pgp_line = pem("PGP PRIVATE KEY BLOCK")
_enc, _enc_line = pem("ENCRYPTED PRIVATE KEY")
_passwords = [password() for _ in range(12)]
_bearers = [rand(ALNUM, 40), rand(B64URL, 32) + "9", rand(HEX, 64), rand(ALNUM + "._~+/", 30) + "7"]
_generic = [rand(ALNUM, 32) for _ in range(10)]

CORPUS: list[tuple[str, str, str]] = [
    # OpenAI
    ("openai-key", f"export OPENAI_API_KEY={_openai[0]}", _openai[0]),
    ("openai-key", f"Using key {_openai[1]} for the request", _openai[1]),
    ("openai-key", f'{{"api_key": "{_openai[2]}", "model": "gpt-4o"}}', _openai[2]),
    (
        "openai-key",
        f"litellm.AuthenticationError: Incorrect API key provided: {_openai[3]}.",
        _openai[3],
    ),
    ("openai-key", f"openai.api_key='{_openai[4]}'", _openai[4]),
    # Anthropic
    ("anthropic-key", f"ANTHROPIC_API_KEY={_anthropic[0]}", _anthropic[0]),
    ("anthropic-key", f"x-api-key: {_anthropic[1]}\ncontent-type: application/json", _anthropic[1]),
    ("anthropic-key", f"client = Anthropic(api_key='{_anthropic[2]}')", _anthropic[2]),
    # AWS access key ids and secret keys
    ("aws-access-key-id", f"aws_access_key_id = {_aws_ids[0]}", _aws_ids[0]),
    ("aws-access-key-id", f'{{"AccessKeyId": "{_aws_ids[1]}", "Expiration": "2025"}}', _aws_ids[1]),
    ("aws-access-key-id", f"the key {_aws_ids[2]} was rotated yesterday", _aws_ids[2]),
    ("aws-secret-key", f"[default]\naws_secret_access_key = {_aws_secrets[0]}\n", _aws_secrets[0]),
    ("aws-secret-key", f'"SecretAccessKey": "{_aws_secrets[1]}",', _aws_secrets[1]),
    ("aws-secret-key", f"AWS_SECRET_ACCESS_KEY={_aws_secrets[2]}", _aws_secrets[2]),
    # GitHub
    ("github-token", f"GITHUB_TOKEN={_github[0]}", _github[0]),
    ("github-token", f"gh auth login gave me {_github[1]} this morning", _github[1]),
    ("github-token", f"token: {_github[2]}", _github[2]),
    (
        "github-token",
        f"git clone https://x-access-token:{_github[3]}@github.com/org/repo.git",
        _github[3],
    ),
    ("github-token", f"refresh={_github[4]}", _github[4]),
    ("github-token", f"Use this PAT: {_github[5]}", _github[5]),
    # Slack
    ("slack-token", f"SLACK_BOT_TOKEN={_slack_tokens[0]}", _slack_tokens[0]),
    ("slack-token", f"user token {_slack_tokens[1]} (do not share)", _slack_tokens[1]),
    ("slack-token", f'app_token = "{_slack_tokens[2]}"', _slack_tokens[2]),
    (
        "slack-webhook",
        f"Post alerts to https://hooks.slack.com/services/{_slack_hooks[0]} please",
        _slack_hooks[0],
    ),
    (
        "slack-webhook",
        f'{{"webhook_url": "https://hooks.slack.com/services/{_slack_hooks[1]}"}}',
        _slack_hooks[1],
    ),
    (
        "slack-webhook",
        f"curl -X POST https://hooks.slack.com/workflows/{_slack_hooks[2]} -d @msg.json",
        _slack_hooks[2],
    ),
    # Google
    (
        "google-api-key",
        f"https://maps.googleapis.com/maps/api/js?key={_google[0]}&callback=initMap",
        _google[0],
    ),
    ("google-api-key", f'GOOGLE_API_KEY="{_google[1]}"', _google[1]),
    ("google-api-key", f"Gemini key is {_google[2]}", _google[2]),
    # JWTs
    ("jwt", f"Cookie: session={_jwts[0]}; Path=/", _jwts[0]),
    ("jwt", f"Authorization: Bearer {_jwts[1]}", _jwts[1]),
    ("jwt", f"https://app.example.com/cb#id_token={_jwts[2]}&state=xyz", _jwts[2]),
    # PEM private keys (the secret checked is a line of the body)
    ("private-key", f"Here is my key:\n{_rsa}\nthanks", _rsa_line),
    ("private-key", f"{_ssh}\n", _ssh_line),
    ("private-key", json.dumps({"type": "service_account", "private_key": _pkcs8}), _pkcs8_line),
    ("private-key", f"gpg export:\n{_pgp}", _pgp_line),
    ("private-key", _enc.split("\n-----END")[0], _enc_line),  # cut off before its END line
    # Passwords in URLs
    ("url-password", f"postgres://admin:{_passwords[0]}@db.internal:5432/app", _passwords[0]),
    ("url-password", f"redis://:{_passwords[1]}@cache.local:6379/0", _passwords[1]),
    (
        "url-password",
        f"mongodb+srv://bob:{_passwords[2]}@x@cluster0.example.mongodb.net/?retryWrites=true",
        f"{_passwords[2]}@x",
    ),
    ("url-password", f"DATABASE_URL=mysql://root:{_passwords[3]}@localhost/shop", _passwords[3]),
    ("url-password", f"feed: https://sam:{_passwords[4]}@example.com/private.xml", _passwords[4]),
    # Bearer tokens and Authorization headers
    ("bearer-token", f"Authorization: Bearer {_bearers[0]}", _bearers[0]),
    (
        "bearer-token",
        f'curl -H "Authorization: Bearer {_bearers[1]}" https://api.example.com',
        _bearers[1],
    ),
    ("bearer-token", f"call it with bearer {_bearers[2]} from the vault", _bearers[2]),
    ("bearer-token", f"headers={{'Authorization': 'Bearer {_bearers[3]}'}}", _bearers[3]),
    (
        "authorization",
        "Authorization: Basic " + base64.b64encode(f"sam:{_passwords[5]}".encode()).decode(),
        base64.b64encode(f"sam:{_passwords[5]}".encode()).decode(),
    ),
    ("authorization", f"Authorization: Token {_generic[0]}", _generic[0]),
    ("authorization", f"proxy-authorization={_generic[1]}", _generic[1]),
    # Labelled passwords
    ("password", f"PASSWORD={_passwords[6]}", _passwords[6]),
    ("password", f"DB_PASSWORD='{_passwords[7]} with spaces'", f"{_passwords[7]} with spaces"),
    ("password", f"smtp:\n  host: mail.example.com\n  password: {_passwords[8]}\n", _passwords[8]),
    ("password", f'{{"user": "sam", "password": "{_passwords[9]}"}}', _passwords[9]),
    ("password", f"mysql -u root --password={_passwords[10]} shop", _passwords[10]),
    ("password", f"gpg --passphrase '{_passwords[11]}' --batch", _passwords[11]),
    ("password", f"smtp_pass = {_passwords[0]}x", f"{_passwords[0]}x"),
    # Labelled keys, tokens and secrets
    ("stripe-key", f"STRIPE_SECRET=sk_live_{_generic[2][:24]}", _generic[2][:24]),
    ("secret", f"AUTH_TOKEN={_generic[3]}", _generic[3]),
    ("secret", f'api_key: "{_generic[4]}"', _generic[4]),
    ("secret", f"SOMETHING_KEY={_generic[5]}", _generic[5]),
    (
        "secret",
        f"POST /token client_secret={_generic[6]}&grant_type=client_credentials",
        _generic[6],
    ),
    ("secret", f"const config = {{ apiKey: '{_generic[7]}' }};", _generic[7]),
    ("huggingface-token", f"export HF_TOKEN=hf_{_generic[8]}", _generic[8]),
    ("secret", f"tool --api-key {_generic[9]} --verbose", _generic[9]),
    ("secret", f'api_key = "ab\\"{_generic[0][:8]}"', _generic[0][:8]),
]

#: Text that looks a little like secrets but is not; redaction must leave it alone.
NEGATIVES: list[str] = [
    "The skeleton key to success is practice.",
    "I use scikit-learn (sk-learn) and the sk-ant colony simulator.",
    "Event 01ARZ3NDEKTSV4RRFFQ69G5FAV was written after 01HQ3Z5W6X7Y8Z9ABCDEFGHJKM.",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "Fixed in a94a8fe5ccb19ba61c4c0873d391e987982fbbd3.",
    "session 123e4567-e89b-12d3-a456-426614174000 started",
    "The bearer of this letter is a friend. Bearer tokens go in a header.",
    "bearer authentication is described in RFC 6750",
    "Reset your password via the settings page.",
    "My password manager is 1Password and my secret is that I like cats.",
    "The secret to good bread is time; the key is patience.",
    "Key: practise every day. Token: the smallest unit of text.",
    "monkey=3 donkey: yes turkey = 1",
    "max_tokens=4096 TOKEN_LIMIT=8000 keyboard: us",
    "password_reset_url=https://example.com/reset",
    "Visit https://example.com:8080/path?x=1 or ssh://git@github.com:22/org/repo.git",
    "Email bob@example.com at 10:30, ratio 16:9.",
    "AKIA is the prefix of AWS access key ids; ghp_ is GitHub's; AIza is Google's.",
    "eyJ is how base64 JSON starts: eyJhbGciOi",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "xoxo, Sam",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "https://en.wikipedia.org/wiki/Password",
    "User lives in Berlin and works as a data engineer at Acme.",
    "The user's dog is named Rex; they prefer dark mode in all editors.",
    "Authorization is handled by the gateway.",
    "Run `pytest -q` then `git push --force-with-lease` and pass --verbose.",
    "Flight LH1234 departs at 07:45 from gate A12.",
    "[REDACTED:openai-key] was already removed; password: [REDACTED:password]",
]

# --- shapes from detect-secrets' plugins, vendor prefixes, entropy, prose, known keys -------

LOWER_ALNUM = string.ascii_lowercase + string.digits
UUIDISH = HEX + "-"


def _uuid() -> str:
    return "-".join(rand(HEX, n) for n in (8, 4, 4, 4, 12))


# Free-standing contexts: no label, so the shape itself must be recognised.
_CONTEXTS = ("here it is: {s} (thanks)", "{s}", "- pasted from the dashboard:\n  {s}\n")


def _shapes(kind: str, secrets: list[str], contexts: tuple[str, ...] = _CONTEXTS) -> list[tuple[str, str, str]]:
    return [(kind, contexts[i % len(contexts)].format(s=s), s) for i, s in enumerate(secrets)]


_VENDOR: dict[str, list[str]] = {
    "stripe-key": ["sk_" + "live_" + rand(ALNUM, 24), "rk_" + "live_" + rand(ALNUM, 99), "sk_" + "test_" + rand(ALNUM, 24),
                   "whsec_" + rand(ALNUM, 32)],
    "huggingface-token": ["hf_" + rand(ALNUM, 34), "hf_" + rand(ALNUM, 37), "api_org_" + rand(ALNUM, 34)],
    "groq-key": ["gsk_" + rand(ALNUM, 52) for _ in range(3)],
    "npm-token": ["npm_" + rand(ALNUM, 36) for _ in range(3)],
    "gitlab-token": ["glpat-" + rand(B64URL, 20), "gldt-" + rand(B64URL, 20), "glrt-" + rand(B64URL, 26),
                     "glptt-" + rand(ALNUM, 40), "glcbt-" + rand(ALNUM, 24), "glsoat-" + rand(ALNUM, 20)],
    "sendgrid-key": ["SG." + rand(B64URL, 22) + "." + rand(B64URL, 43) for _ in range(3)],
    "xai-key": ["xai-" + rand(ALNUM, 80) for _ in range(3)],
    "perplexity-key": ["pplx-" + rand(ALNUM, 48) for _ in range(3)],
    "replicate-token": ["r8_" + rand(ALNUM, 37) for _ in range(3)],
    "digitalocean-token": ["dop_" + "v1_" + rand(HEX, 64), "doo_" + "v1_" + rand(HEX, 64), "dor_" + "v1_" + rand(HEX, 64)],
    "shopify-token": ["shpat_" + rand(HEX, 32), "shpss_" + rand(HEX, 32), "shpca_" + rand(HEX, 32)],
    "mailgun-key": ["key-" + rand(HEX, 32) for _ in range(3)],
    "databricks-token": ["dapi" + rand(HEX, 32) for _ in range(3)],
    "linear-key": ["lin_" + "api_" + rand(ALNUM, 40) for _ in range(3)],
    "notion-token": ["ntn_" + rand(ALNUM, 46), "secret_" + rand(ALNUM, 43), "ntn_" + rand(ALNUM, 40)],
    "atlassian-token": ["ATATT" + rand(B64URL, 180) for _ in range(3)],
    "figma-token": ["figd_" + rand(B64URL, 40) for _ in range(3)],
    "pulumi-token": ["pul-" + rand(HEX, 40) for _ in range(3)],
    "postman-key": ["PMAK-" + rand(HEX, 24) + "-" + rand(HEX, 34) for _ in range(3)],
    "tailscale-key": ["tskey-" + "auth-" + rand(ALNUM, 12) + "-" + rand(ALNUM, 32) for _ in range(3)],
    "vault-token": ["hvs." + rand(B64URL, 90), "hvb." + rand(B64URL, 120), "hvs." + rand(ALNUM, 24)],
    "age-secret-key": ["AGE-" + "SECRET-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58) for _ in range(3)],
    "newrelic-key": ["NRAK-" + rand(UPPER, 27) for _ in range(3)],
    "sentry-token": ["sntrys_" + rand(B64, 60), "sntryu_" + rand(HEX, 64), "sntrys_" + rand(ALNUM, 40)],
    "doppler-token": ["dp." + "pt." + rand(ALNUM, 43), "dp." + "st." + rand(ALNUM, 40), "dp." + "sa." + rand(ALNUM, 43)],
    "twilio-key": ["SK" + rand(HEX, 32), "AC" + rand(LOWER_ALNUM, 32), "SK" + rand(HEX, 32)],
    "google-oauth-secret": ["GOCSPX-" + rand(B64URL, 28) for _ in range(3)],
    "google-oauth-token": ["ya29." + rand(B64URL, 120) for _ in range(3)],
    "heroku-key": ["HRKU-" + rand(B64URL, 60) for _ in range(3)],
    "planetscale-token": ["pscale_" + "tkn_" + rand(B64URL, 43), "pscale_" + "pw_" + rand(B64URL, 43),
                          "pscale_" + "oauth_" + rand(B64URL, 43)],
    "supabase-key": ["sbp_" + rand(HEX, 40), "sb_" + "secret_" + rand(B64URL, 32), "sbp_" + rand(HEX, 40)],
    "cloudflare-token": ["cfut_" + rand(B64URL, 40), "cfat_" + rand(B64URL, 40), "cfk_" + rand(B64URL, 40)],
    "jfrog-token": ["cmVmdGtuOjAxOj" + rand(ALNUM, 50) for _ in range(3)],
    "artifactory-token": ["AKC" + rand(ALNUM, 70), "AP6" + rand(ALNUM, 40), "APB" + rand(ALNUM, 14)],
    "discord-bot-token": ["M" + rand(B64URL, 23) + "." + rand(B64URL, 6) + "." + rand(B64URL, 27),
                          "N" + rand(B64URL, 25) + "." + rand(B64URL, 6) + "." + rand(B64URL, 27),
                          "O" + rand(B64URL, 24) + "." + rand(B64URL, 6) + "." + rand(B64URL, 27)],
    "mailchimp-key": [rand(HEX, 32) + "-us" + str(n) for n in (6, 12, 21)],
    "pypi-token": ["pypi-" + "AgEIcHlwaS5vcmc" + rand(B64URL, 80), "pypi-" + "AgENdGVzdC5weXBpLm9yZw" + rand(B64URL, 80),
                   "pypi-" + "AgEIcHlwaS5vcmc" + rand(B64URL, 120)],
    "square-oauth-secret": ["sq0csp-" + rand(B64URL, 43) for _ in range(3)],
    "telegram-bot-token": [rand(string.digits, 9) + ":AA" + rand(B64URL, 33), rand(string.digits, 10) + ":AA" + rand(B64URL, 33),
                           rand(string.digits, 8) + ":AA" + rand(B64URL, 33)],
}
_LABELLED_DS = [  # detect-secrets' keyword plugins: a vendor's label, then the value
    ("azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core.windows.net",
     [rand(B64, 86) + "==" for _ in range(3)]),
    ("cloudant-credentials", "cloudant_password='{s}'", [rand(HEX, 64) for _ in range(3)]),
    ("ibm-cloud-iam-key", 'ibm_cloud_iam_api_key = "{s}"', [rand(B64URL, 44) for _ in range(3)]),
    ("ibm-cos-hmac", 'ibm_cos_hmac_secret_access_key = "{s}"', [rand(HEX, 48) for _ in range(3)]),
    ("softlayer-key", 'softlayer_api_key = "{s}"', [rand(LOWER_ALNUM, 64) for _ in range(3)]),
]
_npm_uuid = [_uuid() for _ in range(3)]
_discord_hooks = [rand(string.digits, 18) + "/" + rand(B64URL, 68) for _ in range(3)]
_sas = [rand(ALNUM + "%", 43) + "%3D" for _ in range(3)]
_aws_bare = [rand(ALNUM + "/+", 40) for _ in range(3)]
_random_tokens = [rand(ALNUM, 32), rand(B64URL, 48), rand(B64, 64)]
_prose_passwords = [password() for _ in range(6)]
#: Keys memtray knows (as if read from the keyring): redacted exactly, whatever their shape.
KNOWN_KEYS = ["Correct-Horse-Battery-Staple-Key", "plain words are my whole api key", "tr0ub4dor&3-memtray"]

CORPUS += [shape for kind, secrets in _VENDOR.items() for shape in _shapes(kind, secrets)]
CORPUS += [(kind, template.format(s=s), s) for kind, template, secrets in _LABELLED_DS for s in secrets]
CORPUS += [
    ("npm-token", f"//registry.npmjs.org/:_authToken={_npm_uuid[0]}", _npm_uuid[0]),
    ("npm-token", f"//npm.pkg.github.com/:_authToken={_npm_uuid[1]}\nalways-auth=true", _npm_uuid[1]),
    ("npm-token", f"echo '//registry.example.com/:_authToken={_npm_uuid[2]}' >> .npmrc", _npm_uuid[2]),
    ("discord-webhook", f"https://discord.com/api/webhooks/{_discord_hooks[0]}", _discord_hooks[0]),
    ("discord-webhook", f"hook: https://discordapp.com/api/webhooks/{_discord_hooks[1]} (ops)", _discord_hooks[1]),
    ("discord-webhook", f"curl -d @m.json discord.com/api/webhooks/{_discord_hooks[2]}", _discord_hooks[2]),
    ("azure-sas", f"https://acme.blob.core.windows.net/c/f.zip?sv=2022-11-02&sr=b&sig={_sas[0]}", _sas[0]),
    ("azure-sas", f"?sp=r&st=2026-01-01&se=2026-02-01&sig={_sas[1]}&spr=https", _sas[1]),
    ("azure-sas", f"BlobEndpoint=https://x.blob.core.windows.net/;SharedAccessSignature=sv=2022&sig={_sas[2]}", _sas[2]),
    ("high-entropy", f"the secret half of the AWS pair is {_aws_bare[0]} and the id is elsewhere", _aws_bare[0]),
    ("high-entropy", f"{_aws_bare[1]}", _aws_bare[1]),
    ("high-entropy", f"paste: {_aws_bare[2]}\n", _aws_bare[2]),
    ("high-entropy", f"my backup code {_random_tokens[0]}", _random_tokens[0]),
    ("high-entropy", f"({_random_tokens[1]})", _random_tokens[1]),
    ("high-entropy", f"webhook signing value {_random_tokens[2]} from the console", _random_tokens[2]),
    ("password", f"my password is {_prose_passwords[0]}", _prose_passwords[0]),
    ("password", f"By the way, my wifi password is {_prose_passwords[1]}. Don't tell anyone.", _prose_passwords[1]),
    ("password", f"The PIN is {_prose_passwords[2][:6]}, and the door code too", _prose_passwords[2][:6]),
    ("password", f"our new passcode will be '{_prose_passwords[3]} and more'", f"{_prose_passwords[3]} and more"),
    ("password", f"Her Netflix password was {_prose_passwords[4]}!", _prose_passwords[4]),
    ("password", f"my password has been changed to {_prose_passwords[5]}\nok", _prose_passwords[5]),
    ("known-key", f"I pasted {KNOWN_KEYS[0]} by mistake", KNOWN_KEYS[0]),
    ("known-key", f"key = {KNOWN_KEYS[1]}", KNOWN_KEYS[1]),
    ("known-key", f"{KNOWN_KEYS[2]}", KNOWN_KEYS[2]),
]

# An AWS secret access key has no shape of its own; low-entropy ones (the documentation's
# example) pass the entropy check, so only their key id (or its marker) beside them tells.
_aws_doc_secret = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCY" + "EXAMPLEKEY"
_aws_doc_id = "AKIA" + "IOSFODNN7" + "EXAMPLE"
_bare_prose = [password() for _ in range(3)]
CORPUS += [
    ("aws-secret-key", f"AWS key {_aws_doc_id} and its secret {_aws_doc_secret}", _aws_doc_secret),
    ("aws-secret-key", f"{_aws_doc_secret}\n(that is the secret for {_aws_doc_id})", _aws_doc_secret),
    ("aws-secret-key", f"id [REDACTED:aws-access-key-id], secret {_aws_doc_secret}", _aws_doc_secret),
    ("aws-secret-key", f"the AWS secret access key is {_aws_doc_secret}", _aws_doc_secret),
    ("password", f"passphrase is {_bare_prose[0]}", _bare_prose[0]),
    ("password", f"Password was {_bare_prose[1]}; do not share", _bare_prose[1]),
    ("password", "PIN is 4711", "4711"),
    ("password", f"my password: {_bare_prose[2]} and more words", f"{_bare_prose[2]} and more words"),
]

NEGATIVES += [
    "Password is required to log in; the passphrase is case-sensitive.",
    "pin is loose on the hinge",
    "pwd is /home/sam/projects and OLDPWD is /home/sam",
    "git commit 3f9a1c2b4d5e6f708192a3b4c5d6e7f809123456 by the release bot",
    "sk_test_ and rk_live_ are Stripe's prefixes; hf_ is Hugging Face's; gsk_ is Groq's.",
    "glpat- tokens come from GitLab; npm_ tokens from npm; SG. starts a SendGrid key.",
    "npm_config_cache=/tmp/npm and SG.1.2 release notes",
    "I saw AC/DC and the SK Slavia game; ya29 is a prefix.",
    "my password is not something I share; the PIN is in the drawer.",
    "My password is stored in the manager and the passcode is too long to remember.",
    "The password was reset yesterday.",
    "/home/sam/Projects/MyApp2/src/Components/Header.tsx",
    "call_Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7xC0bV and chatcmpl-Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7xC0bV9",
    "ThisIsAVeryLongCamelCaseIdentifierName and another_snake_case_identifier_name",
    "01HQ3Z5W6X7Y8Z9ABCDEFGHJKM01HQ3Z5W6X7Y8Z9ABCDEFGHJKM",
    "The IP 8.8.8.8 answers DNS.",
]

for _key in KNOWN_KEYS:
    add_known_secret(_key)
