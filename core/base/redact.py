"""Secret redaction: finds API keys, tokens, passwords and private keys in text.

Everything memtray writes down (the event log, MEMORY.md, the app's own log
files) passes through :func:`redact` first, so a key pasted into a chat never
reaches the disk. Each secret is replaced by ``[REDACTED:<kind>]``; for a
password in a URL or a labelled value (``PASSWORD=...``, ``api_key: "..."``)
only the value goes, so the text still says what was there.

The rules prefer leaking nothing over keeping text intact: a vendor key is
recognised by its prefix wherever it appears, and a labelled value is removed
whatever it looks like. They are also written not to touch ordinary prose, git
SHAs, UUIDs and ULIDs. Redaction is idempotent: markers are never matched again.

Scanning stays linear on huge or hostile input: patterns start only at token
boundaries, names are bounded, a bare value's extent is computed once per run
of non-space characters, and each rule runs only if its trigger words occur.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, TypeVar, cast

from memtray.core.base import secret_rules

__all__ = [
    "KINDS",
    "Secret",
    "add_known_secret",
    "find_secrets",
    "is_secret_name",
    "marker",
    "redact",
    "redact_obj",
]

_T = TypeVar("_T")


class Secret(NamedTuple):
    """A secret found in a text: its kind and where it is (``text[start:end]``)."""

    kind: str
    start: int
    end: int


def marker(kind: str) -> str:
    """What a secret of ``kind`` is replaced with."""
    return f"[REDACTED:{kind}]"


_MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")

# --- labelled values -------------------------------------------------------------------

# Names whose last part says the value is a secret: PASSWORD, DB_PASS, api_key,
# apiKey, client-secret, GITHUB_TOKEN, SOMETHING_KEY...
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "pass", "passphrase"})
_SECRET_WORDS = frozenset(
    {"key", "apikey", "secret", "token", "secretkey", "accesskey", "privatekey", "credential"}
    | {"credentials"}
)
# On their own before a colon these start prose ("Key: practise daily") as often
# as they label a secret, so "key: ..." and "token: ..." are left alone.
_WEAK_ALONE = frozenset({"key", "pass", "token"})
_NAME_PART_RE = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _name_kind(name: str, *, strict: bool) -> str | None:
    parts = _NAME_PART_RE.findall(name)
    if not parts:
        return None
    last = parts[-1].lower()
    if strict and len(parts) == 1 and last in _WEAK_ALONE:
        return None
    if last in _PASSWORD_WORDS:
        return "password"
    if last in _SECRET_WORDS:
        return "secret"
    return None


def is_secret_name(name: str) -> bool:
    """Whether a field called ``name`` (``api_key``, ``dbPassword``...) holds a secret."""
    return _name_kind(name, strict=True) is not None


# --- rules -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    #: The rule can only match if one of these is in the text (in the lowercased
    #: text if ``folded``). A cheap ``in`` test spares running every pattern over
    #: every message; the patterns' leading look-behinds defeat the regex
    #: engine's own literal-prefix search.
    triggers: tuple[str, ...]
    folded: bool = False
    group: int | str = 0  # the part of the match that is secret
    #: Decides the kind, or None to ignore the match; may also narrow the span.
    check: Callable[[re.Match[str], _Runs], tuple[str, int, int] | None] | None = None
    #: The trigger is inside the secret's own run of 16+ non-space characters
    #: (:data:`secret_rules.TOKEN_RUN`): it is looked for in those runs only.
    token: bool = False


class _Runs:
    """Where a bare value starting at a position ends: at whitespace, less trailing ``,;)]}>``.

    Labels are checked left to right and many can share one run of non-space
    characters ("password=password=..."), so the last run is cached; scanning
    stays linear instead of rescanning the run for every label in it.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.start = self.end = self.trimmed = -1

    def bare_end(self, pos: int) -> int | None:
        if not self.start <= pos < self.end:
            space = _SPACE_RE.search(self.text, pos)
            end = space.start() if space is not None else len(self.text)
            trimmed = end
            while trimmed > pos and self.text[trimmed - 1] in _TRAILING_PUNCT:
                trimmed -= 1
            self.start, self.end, self.trimmed = pos, end, trimmed
        return self.trimmed if self.trimmed > pos else None


_TOKEN = r"A-Za-z0-9_\-"  # base64url and friends
# A value: double-quoted, single-quoted (backslash escapes allowed) or a bare word.
# A flag's bare value cannot start with "-", or "--token --verbose" would lose a flag.
_QUOTED = r"\"(?P<dq>(?:[^\"\\\n]|\\.)+)\"|'(?P<sq>(?:[^'\\\n]|\\.)+)'"
_QUOTED_RE = re.compile(_QUOTED)
_FLAG_VALUE = rf"(?:{_QUOTED}|(?P<bare>[^\s\"'\-]\S*))"
_SPACE_RE = re.compile(r"\s")
_TRAILING_PUNCT = ",;)]}>"


def _value_span(m: re.Match[str]) -> tuple[int, int] | None:
    """Where the value is: inside its quotes, or a bare word minus trailing punctuation."""
    if m.group("dq") is not None:
        return m.span("dq")
    if m.group("sq") is not None:
        return m.span("sq")
    start = m.start("bare")
    end = start + len(m.group("bare").rstrip(_TRAILING_PUNCT))
    return (start, end) if end > start else None


def _labelled(m: re.Match[str], runs: _Runs) -> tuple[str, int, int] | None:
    # The rule's pattern stops at the separator: were the value part of the match,
    # rejecting "request = " in "request = smtp_pass = hunter2" would skip over
    # the label that matters.
    kind = _name_kind(m.group("name"), strict=m.group("sep") == ":")
    if kind is None:
        return None
    pos = m.end()
    quoted = _QUOTED_RE.match(m.string, pos)
    if quoted is not None:
        return kind, *quoted.span("dq" if quoted.group("dq") is not None else "sq")
    if pos >= len(m.string) or m.string[pos] in "\"'" or m.string[pos].isspace():
        return None
    end = runs.bare_end(pos)
    return None if end is None else (kind, pos, end)


def _flag(m: re.Match[str], runs: _Runs) -> tuple[str, int, int] | None:
    span = _value_span(m)
    if span is None:
        return None
    return ("password" if "pass" in m.group("flag").lower() else "secret", *span)


def _bearer(m: re.Match[str], runs: _Runs) -> tuple[str, int, int] | None:
    token = m.group(1)
    # "Bearer authentication" is prose; real tokens have digits or are long.
    if any(c.isdigit() for c in token) or len(token) >= 32:
        return "bearer-token", *m.span(1)
    return None


# "my password is hunter2", "her wifi passcode was 'x y z'", "my password: x y z": the value
# runs to the end of the clause. A first word that says where or how the password is keeps
# the sentence.
_PROSE_VERB = r"(?:is(?:\s+now)?|was|will\s+be|has\s+been\s+changed\s+to|changed\s+to|became|reads)"
_PROSE_RE = re.compile(
    r"(?ai)\b(?:my|the|our|his|her|their|your|a|new|its)\s+(?:[\w\-]+\s+){0,2}?"
    r"(?:password|passcode|passphrase|passwd|pin(?:\s+code)?|pwd|pw)"
    rf"(?:\s+{_PROSE_VERB}\s*[:\-]?|\s*:)[ \t]*"
)
# Without a determiner ("passphrase is hunter2", "PIN is 4711") only the full words, and a
# PIN only when it has a digit: "pwd is /home/x" is the working directory, "pin is loose" a pin.
_BARE_PROSE_RE = re.compile(
    rf"(?ai)(?<![\w\-/.$])(?P<word>password|passcode|passphrase|passwd|pin(?:\s+code)?)\s+{_PROSE_VERB}\s*[:\-]?[ \t]*"
)
_PROSE_STOP = frozenset({
    "not", "too", "very", "in", "on", "at", "stored", "saved", "kept", "managed", "written", "somewhere",
    "safe", "secure", "strong", "weak", "long", "short", "expired", "wrong", "incorrect", "the", "a", "an",
    "still", "also", "being", "required", "needed", "missing", "empty", "unknown", "same", "different",
    "reset", "changed", "set", "ok", "fine", "easy", "hard", "forgotten", "lost", "shared", "public",
    "what", "how", "why", "where", "when", "which", "who", "whatever", "it", "this", "that", "there", "here",
    "something", "nothing", "one", "important", "optional", "mandatory", "valid", "invalid", "case-sensitive",
    "sensitive", "hidden", "visible", "shown", "sent", "given", "case", "my", "your", "his", "her", "our", "their",
})
_CLAUSE_END_RE = re.compile(r"[.,;!?](?:\s|$)|\n|$")


def _bare_prose(m: re.Match[str], runs: _Runs) -> tuple[str, int, int] | None:
    hit = _prose(m, runs)
    if hit is not None and m.group("word").lower().startswith("pin") and not any(
            c.isdigit() for c in m.string[hit[1]:hit[2]]):
        return None
    return hit


def _prose(m: re.Match[str], runs: _Runs) -> tuple[str, int, int] | None:
    text, pos = m.string, m.end()
    quoted = _QUOTED_RE.match(text, pos)
    if quoted is not None:
        return "password", *quoted.span("dq" if quoted.group("dq") is not None else "sq")
    if pos >= len(text) or text[pos].isspace():
        return None
    first = re.match(r"[^\s.,;!?]+", text[pos:])
    if first is None or first.group(0).lower() in _PROSE_STOP:
        return None
    end_m = _CLAUSE_END_RE.search(text, pos, min(len(text), pos + 100))
    end = end_m.start() if end_m is not None else min(len(text), pos + 100)
    # a clause that runs on is redacted up to the first space past 100 characters
    if end_m is None:
        space = _SPACE_RE.search(text, end)
        end = space.start() if space is not None else len(text)
    return ("password", pos, end) if end > pos else None


# Access key id prefixes: AKIA long-term, ASIA temporary (STS), the rest other IAM ids.
_AWS_PREFIXES: tuple[str, ...] = (
    "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "APKA", "AROA", "ASCA",
)  # fmt: skip

_AWS_ID = rf"(?<![A-Za-z0-9])(?:{'|'.join(_AWS_PREFIXES)})[A-Z0-9]{{16}}(?![A-Za-z0-9])"
# 40 characters of base64 with both cases and a digit or symbol (a git SHA is lowercase hex)
_AWS_SECRET = (r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+=]{{0,39}}[a-z])(?=[A-Za-z0-9/+=]{{0,39}}[A-Z])"
               r"(?=[A-Za-z0-9/+=]{{0,39}}[0-9/+])(?P<{}>[A-Za-z0-9/+=]{{40}})(?![A-Za-z0-9/+=])")
_AWS_ID_MARKER = re.escape("[REDACTED:aws-access-key-id]")


def _aws_pair(m: re.Match[str], runs: _Runs) -> tuple[str, int, int] | None:
    return "aws-secret-key", *m.span("after" if m.group("after") is not None else "before")


_RULES: tuple[_Rule, ...] = (
    # Most specific first: when matches overlap, the first rule names the kind.
    _Rule(
        "private-key",
        triggers=("PRIVATE KEY",),
        pattern=re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*)",
            re.DOTALL,
        ),
    ),
    _Rule(
        "anthropic-key",
        token=True,
        triggers=("sk-ant-",),
        pattern=re.compile(rf"(?<![{_TOKEN}])sk-ant-[{_TOKEN}]{{20,}}"),
    ),
    _Rule(
        "openai-key",
        token=True,
        triggers=("sk-",),
        # Keys are random, so they have a digit; "sk-learn-and-friends" does not.
        pattern=re.compile(rf"(?<![{_TOKEN}])sk-(?!ant-)(?=[A-Za-z_\-]*[0-9])[{_TOKEN}]{{20,}}"),
    ),
    _Rule(
        "github-token",
        token=True,
        triggers=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        pattern=re.compile(
            r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"
        ),
    ),
    _Rule(
        "slack-webhook",
        token=True,
        triggers=("hooks.slack.com/",),
        pattern=re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/\-]{8,})"
        ),
        group=1,
    ),
    _Rule(
        "slack-token",
        token=True,
        triggers=("xox", "xapp-"),
        pattern=re.compile(
            rf"(?<![{_TOKEN}])(?:xox[abposre]-[A-Za-z0-9\-]{{10,}}|xapp-\d-[A-Za-z0-9\-]{{10,}})"
        ),
    ),
    _Rule(
        "google-api-key",
        token=True,
        triggers=("AIza",),
        pattern=re.compile(rf"(?<![{_TOKEN}])AIza[{_TOKEN}]{{30,}}"),
    ),
    _Rule(
        "aws-access-key-id",
        token=True,
        triggers=_AWS_PREFIXES,
        pattern=re.compile(
            rf"(?<![A-Za-z0-9])(?:{'|'.join(_AWS_PREFIXES)})"
            r"[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
    ),
    _Rule(
        "aws-secret-key",
        triggers=("secret",),
        folded=True,
        # aws_secret_access_key = ..., "the AWS secret access key is ...", "secret key: ..."
        pattern=re.compile(
            r"(?ai)(?<![a-z0-9])(?:aws[_ \t]?secret[_ \t]?(?:access[_ \t]?)?key|secret[_ \t]?access[_ \t]?key|"
            r"secret[_ \t]key)[\"']?[ \t]*(?:[:=]|\s(?:is|was)\b|\s*-)?[ \t]*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        group=1,
    ),
    _Rule(
        "aws-secret-key",
        triggers=(*_AWS_PREFIXES, "[REDACTED:aws-access-key-id]"),
        # A secret access key has no shape of its own; beside its key id (within a couple of
        # lines, either side, or beside the marker an older redaction left) it is one.
        pattern=re.compile(
            rf"(?:{_AWS_ID}|{_AWS_ID_MARKER})[\s\S]{{0,160}}?{_AWS_SECRET.format('after')}"
            rf"|{_AWS_SECRET.format('before')}[\s\S]{{0,160}}?(?:{_AWS_ID}|{_AWS_ID_MARKER})"
        ),
        check=_aws_pair,
    ),
    _Rule(
        "jwt",
        token=True,
        triggers=("eyJ",),
        pattern=re.compile(
            rf"(?<![{_TOKEN}])eyJ[{_TOKEN}]{{8,}}\.[{_TOKEN}]{{8,}}\.[{_TOKEN}]{{8,}}"
        ),
    ),
    _Rule(
        "url-password",
        triggers=("://",),
        # scheme://user:password@host. Hand-written URLs often leave "@", "#" and
        # "?" in the password unescaped, so it runs to the last "@" before a "/".
        pattern=re.compile(
            r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s:/?#@]*:([^\s/]+)@"
        ),
        group=1,
    ),
    _Rule(
        "bearer-token",
        triggers=("bearer",),
        folded=True,
        pattern=re.compile(rf"(?ai)(?<![{_TOKEN}])bearer[ \t]+([A-Za-z0-9._~+/\-]{{8,}}=*)"),
        check=_bearer,
    ),
    _Rule(
        "authorization",
        triggers=("authorization",),
        folded=True,
        pattern=re.compile(
            r"(?ai)(?<![a-z0-9_\-])(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?:(?:bearer|basic|token|digest|apikey|api-key|negotiate)[ \t]+)?([^\s\"',;]{6,})"
        ),
        group=1,
    ),
    *(
        _Rule(kind, triggers=(trigger,), pattern=re.compile(pattern), group=1 if "(" in pattern.replace("(?", "") else 0,
              token=secret_rules.min_width(pattern) >= secret_rules.TOKEN_RUN)
        for kind, trigger, pattern in secret_rules.PREFIXED
    ),
    _Rule(
        "password",
        triggers=("pass", "pin", "pwd", "pw"),
        folded=True,
        pattern=_PROSE_RE,
        check=_prose,
    ),
    _Rule(
        "password",
        triggers=("pass", "pin"),
        folded=True,
        pattern=_BARE_PROSE_RE,
        check=_bare_prose,
    ),
    _Rule(
        "password",
        triggers=("-pass", "-token", "-secret", "-api", "-access", "-auth"),
        folded=True,
        pattern=re.compile(
            r"(?ai)(?<![a-z0-9_\-])--?(?P<flag>password|passwd|passphrase|pass|token|secret|api-key|apikey"
            r"|access-token|auth-token)(?:=|[ \t]+)" + _FLAG_VALUE
        ),
        check=_flag,
    ),
    _Rule(
        "secret",
        # _name_kind() needs one of these words at the end of the name.
        triggers=("key", "token", "secret", "pass", "pwd", "credential"),
        folded=True,
        pattern=re.compile(
            r"(?<![\w.\-])(?:export[ \t]+)?([\"']?)(?P<name>[A-Za-z][\w.\-]{0,120})\1"
            r"[ \t]*(?P<sep>=|:(?!//))[ \t]*"
        ),
        check=_labelled,
    ),
)

#: Every kind :func:`find_secrets` reports, most specific first: the vendors' shapes
#: (memtray's rules, then detect-secrets' plugins), an exactly known key, labelled
#: passwords and secrets, and a high-entropy bare token.
_GENERIC = ("known-key", "password", "secret", "high-entropy")
KINDS: tuple[str, ...] = tuple(dict.fromkeys(
    [r.kind for r in _RULES if r.kind not in _GENERIC]
    + [kind for kind, _ in secret_rules.DETECT_SECRETS_KINDS.values() if kind not in _GENERIC] + list(_GENERIC)
))
_RANK = {kind: i for i, kind in enumerate(KINDS)}
add_known_secret = secret_rules.add_known_secret
# detect-secrets patterns with an unbounded ".+" / ".*" run per line, on lines this short
_LINE_LIMIT = 4096


def _clip(
    start: int, end: int, markers: list[tuple[int, int]], ends: list[int]
) -> list[tuple[int, int]]:
    """The parts of [start, end) outside existing markers, so redaction is idempotent.

    ``markers`` are sorted and disjoint; ``ends`` are their end offsets, for bisecting.
    """
    pieces = []
    for k in range(bisect.bisect_right(ends, start), len(markers)):
        m_start, m_end = markers[k]
        if m_start >= end:
            break
        if m_start > start:
            pieces.append((start, m_start))
        start = max(start, m_end)
    if start < end:
        pieces.append((start, end))
    return pieces


# Each pass can only grow what is covered, so this is a safety net, not a tuning knob.
_MAX_PASSES = 16


def _scan(text: str, *, use_triggers: bool = True) -> list[tuple[int, int, int]]:
    """One pass of every rule: ``(start, end, rank)`` pieces outside existing markers."""
    markers = [m.span() for m in _MARKER_RE.finditer(text)]
    ends = [m_end for _, m_end in markers]
    runs = _Runs(text)
    found: list[tuple[int, int, int]] = []
    # Folded rules match ASCII case-insensitively ((?ai)), so lower() is enough.
    long_runs = [w for w in text.split() if len(w) >= secret_rules.TOKEN_RUN]
    texts = {"raw": text, "token": "\n".join(long_runs), "folded": text.lower()}
    seen: dict[tuple[str, str], bool] = {}  # many rules share a trigger: look for each once

    def has(where: str, triggers: tuple[str, ...]) -> bool:
        for trigger in triggers:
            key = (where, trigger)
            if key not in seen:
                seen[key] = trigger in texts[where]
            if seen[key]:
                return True
        return False

    for rule in _RULES:
        if use_triggers and not has("folded" if rule.folded else "token" if rule.token else "raw", rule.triggers):
            continue
        for m in rule.pattern.finditer(text):
            if rule.check is not None:
                hit = rule.check(m, runs)
                if hit is None:
                    continue
                kind, start, end = hit
            else:
                kind, (start, end) = rule.kind, m.span(rule.group)
            found.extend((*piece, _RANK[kind]) for piece in _clip(start, end, markers, ends))
    # Every detect-secrets shape memtray's own rules do not cover is a run of 16+ characters:
    # without one, its plugins are not even imported (a short note, a session name).
    for vp in secret_rules.detect_secrets_patterns() if long_runs else ():
        if use_triggers and vp.triggers and not has("folded" if vp.folded else "token" if vp.token else "raw",
                                                    vp.triggers):
            continue
        for start, end in _vendor_spans(text, vp.pattern):
            found.extend((*piece, _RANK[vp.kind]) for piece in _clip(start, end, markers, ends))
    for kind, spans in (("known-key", secret_rules.known_secret_spans(text, is_secret_name)),
                        ("high-entropy", secret_rules.high_entropy_spans(text, long_runs))):
        for start, end in spans:
            found.extend((*piece, _RANK[kind]) for piece in _clip(start, end, markers, ends))
    return found


def _vendor_spans(text: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """Where a detect-secrets pattern finds secrets: its first non-empty group (as the
    plugin reports it) or the whole match, grown to the whole token."""
    if ".+" in pattern.pattern or ".*" in pattern.pattern:
        pieces, offset = [], 0
        for line in text.split("\n"):
            if len(line) <= _LINE_LIMIT:
                pieces.append((offset, line))
            offset += len(line) + 1
    else:
        pieces = [(0, text)]
    out: list[tuple[int, int]] = []
    last = 0
    for offset, piece in pieces:
        for m in pattern.finditer(piece):
            group = next((g for g in range(1, (m.lastindex or 0) + 1) if m.group(g)), 0)
            start, end = m.span(group)
            if end > start and offset + start >= last:  # one growth per stretch: stays linear
                out.append(secret_rules.extend_token(text, offset + start, offset + end, last))
                last = out[-1][1]
    return out


def _merge(found: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Union of overlapping pieces, each named by the best (lowest) rank among them."""
    merged: list[tuple[int, int, int]] = []
    for start, end, rank in sorted(found):
        if merged and start < merged[-1][1]:
            last_start, last_end, last_rank = merged[-1]
            merged[-1] = (last_start, max(last_end, end), min(last_rank, rank))
        else:
            merged.append((start, end, rank))
    return merged


def _apply(text: str, spans: list[tuple[int, int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """Replace spans by markers; also return, per kept segment, (redacted start, original start)."""
    out: list[str] = []
    segments: list[tuple[int, int]] = []
    pos = length = 0
    for start, end, rank in spans:
        segments.append((length, pos))
        out += [text[pos:start], marker(KINDS[rank])]
        length += start - pos + len(out[-1])
        pos = end
    segments.append((length, pos))
    out.append(text[pos:])
    return "".join(out), segments


def find_secrets(text: str) -> list[Secret]:
    """The secrets in ``text``, sorted and non-overlapping: exactly what :func:`redact` replaces.

    Overlapping matches (``OPENAI_API_KEY=sk-...`` is both a labelled value and
    an OpenAI key) merge into one secret named by the most specific rule. The
    text is then scanned again with those secrets replaced, since a marker can
    join what was apart (``Authorization: <key block>sk-...``); whatever that
    finds is added, until nothing new turns up. So ``redact`` is idempotent.
    """
    spans = _merge(_scan(text))
    for _ in range(_MAX_PASSES):
        if not spans:
            break
        redacted, segments = _apply(text, spans)
        starts = [red for red, _ in segments]
        extra = []
        for start, end, rank in _scan(redacted):
            # Pieces avoid markers, so each lies inside one kept segment.
            red, orig = segments[bisect.bisect_right(starts, start) - 1]
            extra.append((orig + start - red, orig + end - red, rank))
        if not extra:
            break
        spans = _merge(spans + extra)
    return [Secret(KINDS[rank], start, end) for start, end, rank in spans]


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``."""
    secrets = find_secrets(text)
    if not secrets:
        return text
    return _apply(text, [(s.start, s.end, _RANK[s.kind]) for s in secrets])[0]


def redact_obj(obj: _T) -> _T:
    """Redact every string inside dicts, lists and tuples (keys included).

    A string value under a secret-sounding key (``{"api_key": "abc"}``) is
    replaced whole, since nothing in the value itself may give it away. Other
    types pass through unchanged.
    """
    return cast(_T, _redact_any(obj, None, frozenset()))


def _redact_any(obj: object, key: object, seen: frozenset[int]) -> object:
    if isinstance(obj, str):
        kind = _name_kind(key, strict=True) if isinstance(key, str) else None
        if kind is not None and obj.strip() and not _MARKER_RE.fullmatch(obj.strip()):
            return marker(kind)
        return redact(obj)
    if not isinstance(obj, dict | list | tuple) or id(obj) in seen:
        return obj
    seen = seen | {id(obj)}
    if isinstance(obj, dict):
        return {_redact_any(k, None, seen): _redact_any(v, k, seen) for k, v in obj.items()}
    items = [_redact_any(item, None, seen) for item in obj]
    if isinstance(obj, list):
        return items
    if hasattr(obj, "_fields"):  # a NamedTuple
        return cast(Callable[..., object], type(obj))(*items)
    return tuple(items)
