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
    ("secret", f"STRIPE_SECRET=sk_live_{_generic[2][:24]}", _generic[2][:24]),
    ("secret", f"AUTH_TOKEN={_generic[3]}", _generic[3]),
    ("secret", f'api_key: "{_generic[4]}"', _generic[4]),
    ("secret", f"SOMETHING_KEY={_generic[5]}", _generic[5]),
    (
        "secret",
        f"POST /token client_secret={_generic[6]}&grant_type=client_credentials",
        _generic[6],
    ),
    ("secret", f"const config = {{ apiKey: '{_generic[7]}' }};", _generic[7]),
    ("secret", f"export HF_TOKEN=hf_{_generic[8]}", _generic[8]),
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
