"""Secret shapes from outside memtray's own rules, for :mod:`memtray.core.base.redact`.

* **detect-secrets** (Yelp, Apache-2.0; a pinned dependency): every regex-based
  plugin's ``denylist`` is used as is, imported on first use. Only the patterns
  are used; the plugins' ``verify`` methods (which call vendors' APIs) never run.
* **Prefixed tokens** that detect-secrets does not know (Hugging Face ``hf_``,
  Groq ``gsk_``, npm ``npm_``, Stripe restricted and test keys, xAI, Vault...):
  the vendor's documented prefix, then its alphabet.
* **Entropy**: a bare run of 32+ base64 characters with upper, lower case and
  digits and a Shannon entropy of 4.2 bits a character or more (an unlabelled
  AWS secret key, a random token); hex (git SHAs, hashes), UUIDs, ULIDs, paths
  and ``word_``-prefixed ids (``call_...``, ``chatcmpl-...``) are left alone.
* **Prose**: "my password is ...", "the wifi passcode was ...".
* **Known secrets**: the exact value of every key memtray knows (those it read from
  the keyring, and every environment variable whose name says it is a secret,
  ``OPENAI_API_KEY``...) wherever it appears, whatever its shape.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import os
import pkgutil
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "DETECT_SECRETS_KINDS",
    "PREFIXED",
    "VendorPattern",
    "add_known_secret",
    "detect_secrets_patterns",
    "entropy",
    "high_entropy_spans",
    "known_secret_spans",
    "known_secrets",
]

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True)
class VendorPattern:
    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]  # empty: always run
    folded: bool  # triggers are lowercase, looked for in the lowercased text
    #: the trigger is part of the secret's own run of 16+ non-space characters, so it is
    #: looked for only in the text's runs that long (see ``redact._scan``)
    token: bool


#: A rule whose matches are runs of at least this many non-space characters may look
#: for its trigger in those runs only: ordinary prose has few of them.
TOKEN_RUN = 16


def min_width(pattern: str) -> int:
    """The fewest characters ``pattern`` can match (0 when unknown)."""
    try:
        parser = importlib.import_module("re._parser")
        return int(parser.parse(pattern).getwidth()[0])
    except Exception:
        return 0


def extend_token(text: str, start: int, end: int, floor: int = 0) -> tuple[int, int]:
    """Grow ``[start, end)`` over neighbouring token characters (not back past ``floor``):
    a rule that matched a key's first 24 characters must not leave the rest behind."""
    while start > floor and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    while end < len(text) and text[end] in _TOKEN_CHARS:
        end += 1
    return start, end


# --- detect-secrets ------------------------------------------------------------------------

#: detect-secrets plugin -> (kind, triggers): the rule runs only on a text that contains
#: one of the triggers. The plugins that look for a label (``aws...key = "..."``) match
#: case-insensitively: their triggers are lowercase and looked for in the lowercased
#: text (:data:`_LABEL_PLUGINS`). A plugin not listed here still runs (as kind
#: "secret", on every text).
DETECT_SECRETS_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ArtifactoryDetector": ("artifactory-token", ("AKC", "AP")),
    "AWSKeyDetector": ("aws-access-key-id", ("aws", "a3t", "abia", "acca", "akia", "asia")),
    "AzureStorageKeyDetector": ("azure-storage-key", ("AccountKey=",)),
    "BasicAuthDetector": ("url-password", ("://",)),
    "CloudantDetector": ("cloudant-credentials", ("cl",)),
    "DiscordBotTokenDetector": ("discord-bot-token", (".",)),
    "GitHubTokenDetector": ("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    "GitLabTokenDetector": ("gitlab-token", ("gl", "GR1348941")),
    "IbmCloudIamDetector": ("ibm-cloud-iam-key", ("key", "pwd", "pass", "token")),
    "IbmCosHmacDetector": ("ibm-cos-hmac", ("secret",)),
    "JwtTokenDetector": ("jwt", ("eyJ",)),
    "MailchimpDetector": ("mailchimp-key", ("-us",)),
    "NpmDetector": ("npm-token", ("_authToken",)),
    "OpenAIDetector": ("openai-key", ("T3BlbkFJ",)),
    "PrivateKeyDetector": ("private-key", ("PRIVATE KEY", "PuTTY-User-Key-File")),
    "PypiTokenDetector": ("pypi-token", ("pypi-",)),
    "SendGridDetector": ("sendgrid-key", ("SG.",)),
    "SlackDetector": ("slack-token", ("xox", "hooks.slack.com")),
    "SoftlayerDetector": ("softlayer-key", ("key", "pwd", "pass", "token", "softlayer")),
    "SquareOAuthDetector": ("square-oauth-secret", ("sq0csp-",)),
    "StripeDetector": ("stripe-key", ("k_live_",)),
    "TelegramBotTokenDetector": ("telegram-bot-token", (":",)),
    "TwilioKeyDetector": ("twilio-key", ("AC", "SK")),
}
_LABEL_PLUGINS = frozenset({"AWSKeyDetector", "CloudantDetector", "IbmCloudIamDetector", "IbmCosHmacDetector",
                            "SoftlayerDetector"})
# Not secrets: a public IP address is not redacted.
_SKIPPED_PLUGINS = frozenset({"IPPublicDetector"})
# memtray's own rule keeps the webhook URL's host and path and redacts its secret part
_SKIPPED_PATTERNS = ("https://hooks",)
_lock = threading.Lock()


@functools.cache
def detect_secrets_patterns() -> tuple[VendorPattern, ...]:
    """Every regex of every regex-based detect-secrets plugin (imported once, ~50 ms)."""
    with _lock:
        import detect_secrets.plugins as plugins
        from detect_secrets.plugins.base import RegexBasedDetector

        out: list[VendorPattern] = []
        for info in sorted(pkgutil.iter_modules(plugins.__path__), key=lambda m: m.name):
            mod = importlib.import_module(f"detect_secrets.plugins.{info.name}")
            for name, cls in sorted(inspect.getmembers(mod, inspect.isclass)):
                if (cls.__module__ != mod.__name__ or not issubclass(cls, RegexBasedDetector)
                        or inspect.isabstract(cls) or name in _SKIPPED_PLUGINS):
                    continue
                kind, triggers = DETECT_SECRETS_KINDS.get(name, ("secret", ()))
                folded = name in _LABEL_PLUGINS
                token = not folded and name != "PrivateKeyDetector"
                out.extend(VendorPattern(kind, rx, tuple(t.lower() for t in triggers) if folded else triggers, folded,
                                         token and min_width(rx.pattern) >= TOKEN_RUN)
                           for rx in cls().denylist
                           if not rx.pattern.startswith(_SKIPPED_PATTERNS))
        return tuple(out)


# --- prefixed tokens detect-secrets does not know -------------------------------------------

_B = r"(?<![A-Za-z0-9_\-])"  # a token starts here
_E = r"(?![A-Za-z0-9_\-])"  # and ends here

#: (kind, trigger, pattern): each vendor's documented prefix and alphabet.
PREFIXED: tuple[tuple[str, str, str], ...] = (
    ("stripe-key", "k_live_", rf"{_B}(?:sk|rk)_live_[A-Za-z0-9]{{16,}}{_E}"),
    ("stripe-key", "k_test_", rf"{_B}(?:sk|rk)_test_[A-Za-z0-9]{{16,}}{_E}"),
    ("stripe-key", "whsec_", rf"{_B}whsec_[A-Za-z0-9]{{24,}}{_E}"),
    ("huggingface-token", "hf_", rf"{_B}hf_[A-Za-z0-9]{{30,}}{_E}"),
    ("huggingface-token", "api_org_", rf"{_B}api_org_[A-Za-z0-9]{{30,}}{_E}"),
    ("groq-key", "gsk_", rf"{_B}gsk_[A-Za-z0-9]{{40,}}{_E}"),
    ("npm-token", "npm_", rf"{_B}npm_[A-Za-z0-9]{{36}}{_E}"),
    ("gitlab-token", "gl", rf"{_B}gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|ffct|sa)-[A-Za-z0-9_\-]{{20,}}{_E}"),
    ("sendgrid-key", "SG.", rf"{_B}SG\.[A-Za-z0-9_\-]{{16,32}}\.[A-Za-z0-9_\-]{{16,64}}{_E}"),
    ("xai-key", "xai-", rf"{_B}xai-[A-Za-z0-9]{{40,}}{_E}"),
    ("perplexity-key", "pplx-", rf"{_B}pplx-[A-Za-z0-9]{{40,}}{_E}"),
    ("replicate-token", "r8_", rf"{_B}r8_[A-Za-z0-9]{{30,}}{_E}"),
    ("digitalocean-token", "do", rf"{_B}do[opr]_v1_[a-f0-9]{{64}}{_E}"),
    ("shopify-token", "shp", rf"{_B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_E}"),
    ("mailgun-key", "key-", rf"{_B}key-[a-f0-9]{{32}}{_E}"),
    ("databricks-token", "dapi", rf"{_B}dapi[a-f0-9]{{32}}(?:-\d)?{_E}"),
    ("linear-key", "lin_", rf"{_B}lin_(?:api|oauth)_[A-Za-z0-9]{{40}}{_E}"),
    ("notion-token", "ntn_", rf"{_B}ntn_[A-Za-z0-9]{{40,}}{_E}"),
    ("notion-token", "secret_", rf"{_B}secret_[A-Za-z0-9]{{43}}{_E}"),
    ("atlassian-token", "ATATT", rf"{_B}ATATT[A-Za-z0-9_\-=]{{50,}}{_E}"),
    ("figma-token", "figd_", rf"{_B}figd_[A-Za-z0-9_\-]{{40,}}{_E}"),
    ("pulumi-token", "pul-", rf"{_B}pul-[a-f0-9]{{40}}{_E}"),
    ("postman-key", "PMAK-", rf"{_B}PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}{_E}"),
    ("tailscale-key", "tskey-", rf"{_B}tskey-[A-Za-z0-9\-]{{20,}}{_E}"),
    ("vault-token", "hv", rf"{_B}hv[sbr]\.[A-Za-z0-9_\-]{{24,}}{_E}"),
    ("age-secret-key", "AGE-SECRET-KEY-", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("newrelic-key", "NRAK-", rf"{_B}NRAK-[A-Z0-9]{{27}}{_E}"),
    ("sentry-token", "sntry", rf"{_B}sntry[su]_[A-Za-z0-9_=+/\-]{{30,}}"),
    ("doppler-token", "dp.", rf"{_B}dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{{30,}}{_E}"),
    ("discord-webhook", "/api/webhooks/", r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{30,}"),
    ("telegram-bot-token", "bot", r"api\.telegram\.org/bot\d{8,10}:[A-Za-z0-9_\-]{35}"),
    ("twilio-key", "SK", rf"{_B}SK[a-f0-9]{{32}}{_E}"),
    ("openai-key", "sk-", rf"{_B}sk-(?:proj|svcacct|admin|or-v1)-[A-Za-z0-9_\-]{{20,}}"),
    ("google-oauth-secret", "GOCSPX-", rf"{_B}GOCSPX-[A-Za-z0-9_\-]{{28}}{_E}"),
    ("google-oauth-token", "ya29.", rf"{_B}ya29\.[A-Za-z0-9_\-]{{30,}}"),
    ("azure-sas", "sig=", r"(?<=[?&])sig=([A-Za-z0-9%+/=]{30,})"),
    ("heroku-key", "HRKU-", rf"{_B}HRKU-[A-Za-z0-9_\-]{{30,}}{_E}"),
    ("planetscale-token", "pscale_", rf"{_B}pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-=.]{{32,}}"),
    ("supabase-key", "sbp_", rf"{_B}sbp_[A-Za-z0-9_\-]{{30,}}{_E}"),
    ("supabase-key", "sb_secret_", rf"{_B}sb_secret_[A-Za-z0-9_\-]{{30,}}{_E}"),
    *(("cloudflare-token", f"{p}_", rf"{_B}{p}_[A-Za-z0-9_\-]{{30,}}{_E}") for p in ("cfut", "cfat", "cfk")),
    ("jfrog-token", "cmVmdGtu", r"cmVmdGtuOjAxOj[A-Za-z0-9]{40,}"),
)

# --- entropy ---------------------------------------------------------------------------------

_RUN_RE = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")
# a lowercase word and a separator before it: an id (call_, chatcmpl-, toolu_), not a bare key
_ID_PREFIX_RE = re.compile(r"[a-z]{2,12}[_\-]")
_HEX_RE = re.compile(r"[0-9a-fA-F\-]+")
ENTROPY_BITS = 4.2
MIN_LENGTH = 32


def entropy(s: str) -> float:
    """Shannon entropy of ``s`` in bits a character."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) if n else 0.0


def _runs_at(text: str, words: list[str]) -> list[tuple[int, int]]:
    """Where each of ``words`` (``text.split()``'s, in order) is in ``text``."""
    out, pos = [], 0
    for word in words:
        start = text.find(word, pos)
        out.append((start, start + len(word)))
        pos = start + len(word)
    return out


def high_entropy_spans(text: str, long_words: list[str] | None = None) -> list[tuple[int, int]]:
    """Bare runs that look random enough to be keys. ``long_words``: the words of
    ``text.split()`` of 16 characters or more, in order, if the caller has them."""
    out = []
    words = long_words if long_words is not None else [w for w in text.split() if len(w) >= TOKEN_RUN]
    runs = _runs_at(text, [w for w in words if len(w) >= MIN_LENGTH])
    for m in (m for a, b in runs for m in _RUN_RE.finditer(text, a, b)):
        start, end = m.span()
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "[.%\\"):
            continue
        token = m.group(0).rstrip("=")
        if len(token) > 4096 or _HEX_RE.fullmatch(token) or token.count("/") >= 3 or _ID_PREFIX_RE.match(token):
            continue
        core = token.strip("_-")
        if not (sum(c.isupper() for c in core) >= 2 and sum(c.islower() for c in core) >= 2
                and sum(c.isdigit() for c in core) >= 2):
            continue
        if entropy(core) >= ENTROPY_BITS and not _in_public_block(text, start):
            out.append((start, end))
    return out


def _in_public_block(text: str, pos: int) -> bool:
    """Whether ``pos`` is inside a PEM block that is not a private key (a certificate)."""
    begin = text.rfind("-----BEGIN ", max(0, pos - 20_000), pos)
    if begin < 0 or text.find("-----END", begin, pos) >= 0:
        return False
    return "PRIVATE" not in text[begin : begin + 80].split("\n", 1)[0]


# --- known secrets ---------------------------------------------------------------------------

_known: set[str] = set()
_MIN_KNOWN = 8


def add_known_secret(value: str | None) -> None:
    """Redact ``value`` wherever it appears from now on (a key read from the keyring)."""
    if value and len(value.strip()) >= _MIN_KNOWN:
        _known.add(value.strip())


_ENV_NAME_RE = re.compile(r"(?i)(?:key|token|secret|pass|passwd|pwd|passphrase|password|credentials?)$")


_env_names: tuple[int, list[str]] = (-1, [])


def _secret_env_names(is_secret_name: Callable[[str], bool]) -> list[str]:
    # Listing the environment costs more than the rest of a short redaction: the names
    # are listed again only when the number of variables changes (a value is always
    # read fresh).
    global _env_names
    if _env_names[0] != len(os.environ):
        _env_names = (len(os.environ), [n for n in os.environ if _ENV_NAME_RE.search(n) and is_secret_name(n)
                                        and n not in _SHELL_NAMES])
    return _env_names[1]


#: shell variables whose names read like secrets ("pwd" is a password's short name) but
#: that hold the working directory
_SHELL_NAMES = frozenset({"PWD", "OLDPWD"})


def _is_path(value: str) -> bool:
    """A file's path (``GOOGLE_APPLICATION_CREDENTIALS=/home/me/creds.json``): the secret is
    in the file, not its name, and redacting every mention of the path would mangle messages."""
    return os.path.isabs(value) and os.path.exists(value)


def known_secrets(is_secret_name: Callable[[str], bool]) -> list[str]:
    """Every value to redact exactly: keys memtray read, secret-named environment variables."""
    values = set(_known)
    for name in _secret_env_names(is_secret_name):
        value = os.environ.get(name, "")
        if len(value) >= _MIN_KNOWN and " " not in value and not _is_path(value):
            values.add(value)
    return sorted(values, key=len, reverse=True)


def known_secret_spans(text: str, is_secret_name: Callable[[str], bool]) -> list[tuple[int, int]]:
    out = []
    for value in known_secrets(is_secret_name):
        start = text.find(value)
        while start >= 0:
            out.append((start, start + len(value)))
            start = text.find(value, start + len(value))
    return out
