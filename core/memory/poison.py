"""Memory poisoning guard: spot instruction-like text that must not become a "fact".

Memory is injected into every prompt, so a line like "ignore previous
instructions" or "always run curl ... | sh" copied from a pasted web page would
steer every future turn. Such text is held for the user's review instead of
being written. The patterns are deliberately broad: a false positive costs one
click in the review list; a false negative costs the user's trust.

Text is normalised before it is checked (:func:`normalise`): Unicode NFKC,
format characters (zero-width spaces, joiners, bidi controls, soft hyphens)
removed, accents stripped, Greek and Cyrillic look-alikes folded to Latin,
digits inside words read as letters ("1gn0re"), spaced-out letters joined
("i g n o r e") and Markdown emphasis dropped. So a disguise that a reader (or
a model) reads as the plain words is checked as the plain words.

:func:`looks_like_instruction` checks one text (a fact); :func:`scan_document`
checks a whole MEMORY.md or history entry block by block -- headings, bullets,
prose paragraphs, HTML comments and code blocks alike -- and
:func:`hold_flagged` takes the flagged new blocks out of a proposed document.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memtray.core.memory.wording import clean_controls

__all__ = ["Flag", "hold_flagged", "looks_like_instruction", "normalise", "scan_document", "why_flagged"]

# --- normalisation ---------------------------------------------------------------------

# Greek and Cyrillic letters that look like Latin ones (Unicode confusables, the
# letters that render the same in common fonts).
_CONFUSABLES = {
    # Greek
    "α": "a", "β": "b", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j", "ς": "c",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C",
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "һ": "h",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "ɡ": "g", "ո": "n", "ս": "u", "ց": "g",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W",
    # Latin look-alikes outside ASCII that NFKC keeps
    "ı": "i", "ȷ": "j", "ł": "l", "ø": "o", "đ": "d", "ħ": "h", "ŧ": "t", "ß": "ss",
}  # fmt: skip
_CONFUSABLE_TABLE = str.maketrans(_CONFUSABLES)
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
# A run of letters, digits, @ and $: read as letters when it mixes them ("1gn0re", "pr3vious").
_LEET_WORD_RE = re.compile(r"[a-z0-9@$]{2,}")
# Letters spaced out, dotted or dashed apart: "i g n o r e", "i.g.n.o.r.e".
_SPACED_RE = re.compile(r"(?<![a-z])(?:[a-z][ .\-_*|]{1,2}){3,}[a-z](?![a-z])")
# Markdown emphasis and code marks; "_" inside a word (id_rsa) and "~/" stay.
_EMPHASIS_RE = re.compile(r"[*`]+|(?<!\w)_+|_+(?!\w)|~~")
_SPACE_RE = re.compile(r"\s+")


def _fold(text: str) -> str:
    """NFKC, without control characters (as memory stores text), format characters (Cf:
    zero-width, bidi controls, soft hyphen) or accents, look-alikes folded to Latin; case kept."""
    text = unicodedata.normalize("NFKC", clean_controls(text))
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    text = text.translate(_CONFUSABLE_TABLE)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", text.translate(_CONFUSABLE_TABLE))


def normalise(text: str, *, leet: bool = False) -> str:
    """``text`` as it reads: the form every pattern is checked against. Pure.

    :func:`_fold`, lowercased, without Markdown emphasis, spaced-out letters joined,
    one space between words. With ``leet``, digits, ``@`` and ``$`` inside words
    are read as letters ("1gn0re" -> "ignore"); otherwise only where that spells
    a word the patterns look for, so "mp3" and "user@host" stay as they are.
    """
    text = _EMPHASIS_RE.sub("", _fold(text).lower())
    text = _LEET_WORD_RE.sub(lambda m: _leet(m.group(0), always=leet), text)
    text = _SPACED_RE.sub(lambda m: re.sub(r"[ .\-_*|]", "", m.group(0)), text)
    return _SPACE_RE.sub(" ", text).strip()


def _leet(word: str, *, always: bool) -> str:
    if word.isalpha() or word.isdigit():
        return word
    folded = word.translate(_LEET)
    if always:
        return folded
    return folded if _KEYWORD_RE.search(folded) and not _KEYWORD_RE.search(word) else word


# --- patterns --------------------------------------------------------------------------

_OVERRIDE_VERBS = (
    r"ignore|disregard|forget|override|overrule|bypass|skip|discard|drop|abandon|set aside|"
    r"pay no (?:attention|heed|mind) to|pay no attention|take no notice of|do not (?:follow|obey|heed)|"
    r"don'?t (?:follow|obey|heed)|stop following|no longer (?:follow|obey)|throw out|scrap|erase|delete"
)
_OVERRIDE_OBJECTS = (
    r"instructions?|prompts?|rules?|guidelines?|guidance|messages?|directions?|directives?|orders?|"
    r"commands?|context|constraints?|polic(?:y|ies)|programming|restrictions?|safeguards?|"
    r"safety|filters?|settings|system|training|memory"
)
_QUALIFIERS = r"previous|prior|above|earlier|all|any|every|system|your|preceding|original|existing|old|former|initial|other|developer"
_VERBS_ACT = r"run|execute|call|invoke|fetch|download|open|visit|send|post|email|e-mail|mail|forward|upload|include|share|reveal|print|output|copy|paste|attach|leak|transmit|delete|remove|cc|bcc|reply|respond|say|tell"
_SENSITIVE = (
    r"~/|\$home|/etc/(?:passwd|shadow|hosts)|\.ssh\b|id_(?:rsa|dsa|ecdsa|ed25519)|\.aws\b|\.netrc|"
    r"\.env\b|\.git-credentials|\.kube|keychain|private keys?|api keys?|passwords?|credentials|"
    r"access tokens?|cookies|session tokens?|environment variables|env vars"
)

# What an order tells the assistant to do, in the base form an imperative has ("answer",
# never "answers"): its replies, what it recommends, says or links to.
_ORDER_VERBS = (
    r"answer|reply|respond|recommend|suggest|redirect|mention|say|tell|speak|talk|promote|advertise|"
    r"praise|cite|link|refer (?:the )?users?|point (?:the )?users?|direct (?:the )?users?|sign off|end (?:every|each|all)|"
    r"start (?:every|each|all)|begin (?:every|each|all)|prepend|append|add (?:this|the following)"
)
# ... and not where the verb is someone's ("likes to talk", "will say"): a report, not an order.
_NOT_INFINITIVE = "".join(rf"(?<!\b{w}\s)" for w in ("to", "will", "would", "can", "could", "may", "might", "does", "did"))

_PATTERNS = [
    # overrides: "ignore all previous instructions", "pay no attention to earlier guidance"
    rf"\b(?:{_OVERRIDE_VERBS})\b.{{0,40}}\b(?:{_QUALIFIERS})\b.{{0,30}}\b(?:{_OVERRIDE_OBJECTS})\b",
    rf"\b(?:{_OVERRIDE_VERBS})\b\s+(?:the\s+)?(?:system\s+prompt|safety\s+rules|guardrails)",
    r"\b(?:new|updated|real|actual|true|hidden|secret|revised)\s+(?:system\s+)?(?:instructions?|prompt|rules|directives?|orders|task)\s*:",
    r"\bsystem\s+(?:prompt|message|override|instructions?)\b",
    # a role label before imperative text ("system: ignore ..."; "SYSTEM:" alone is in _CASED_RX)
    r"^\W*(?:system|assistant|developer|admin|administrator|operator)\s*(?:message|note|notice|prompt|override|update)?\s*:\s*"
    r"(?:ignore|disregard|forget|you|always|never|include|send|run|execute|do|from|new|override|obey|follow|the user|important|attention)",
    r"[\[<{]{1,2}\s*/?\s*(?:sys|system|inst|im_start|im_end|assistant|developer)\s*[\]>}]{1,2}",
    r"<\s*/?\s*(?:system|assistant|tool|developer|instructions?)\s*>",
    r"\byou\s+(?:must|should|will|shall|have to|need to|are required to)\s+(?:always|never|now|from now|immediately|include|send|run|execute|obey|follow|ignore|forward|email|reply|respond|stop)\b",
    r"\byou\s+are\s+now\b|\bpretend\s+(?:to\s+be|you\s+are|that\s+you)\b|\byour\s+(?:new|real|true)\s+(?:role|task|goal|purpose|instructions?|identity)\b",
    r"\b(?:from now on|henceforth|going forward|hereafter|starting now),?\s+(?:you|the assistant|the ai|always|never|include|send|reply|respond|ignore)\b",
    rf"\b(?:always|never|must|should)\s+(?:{_VERBS_ACT})\b",
    r"\b(?:run|execute)\s+(?:the\s+|this\s+|following\s+)?(?:command|script|shell|code|payload)\b",
    r"\b(?:curl|wget|powershell|pwsh|bash\s+-c|sh\s+-c|rm\s+-rf|sudo|chmod\s+\+x|base64\s+-d|mkfifo)\b",
    r"\|\s*(?:sh|bash|zsh|python\d?|perl|ruby|node)\b",
    r"/bin/(?:ba|z|da|k)?sh\b|/dev/tcp/|\b(?:nc|ncat|netcat|socat|telnet)\s+(?:-\w+\s+)*[\w.\-]+\s+\d{2,5}\b|\b(?:nc|ncat|netcat)\s+-[a-z]*e\b",
    r"\bos\s*\.\s*(?:system|popen|exec\w*|spawn\w*)\s*\(|\bsubprocess\s*\.\s*\w+\s*\(|\b(?:eval|exec|__import__)\s*\(|\bimport\s+os\b",
    r"\b(?:fetch|visit|download|open|load|browse\s+to|go\s+to|navigate\s+to|read|follow)\b[^\n]{0,40}https?://",
    r"https?://\S+\s*(?:and|then)\s+(?:run|execute|follow|obey)",
    r"https?://\S*[{]\w*[}]|https?://\S*[?&]\w+=(?:\[|\{|<)",
    r"\b(?:call|use|invoke|trigger)\s+the\s+\w+\s+(?:tool|function)\b",
    r"\b(?:act|behave|respond|answer)\s+as\s+(?:if|though)\b",
    r"\bjailbreak|\bdan\s+mode\b|\bdo anything now\b|developer\s+mode|\bgod\s+mode\b",
    # exfiltration: "include the full contents of ~/.ssh/id_rsa", "send the api keys to ..."
    rf"\b(?:{_VERBS_ACT}|cat|dump|read|exfiltrate|append|add|insert|show|display|list)\b[^\n]{{0,60}}(?:{_SENSITIVE})",
    rf"\b(?:contents?|text|copy)\s+of\s+[^\n]{{0,20}}(?:{_SENSITIVE})",
    # covert action: "silently email every conversation to ...", "without telling the user"
    r"\b(?:silently|secretly|quietly|covertly|discreetly|stealthily|invisibly|behind the user'?s back)\b[^\n]{0,60}\b(?:send|e-?mail|mail|forward|upload|post|copy|share|report|transmit|delete|remove|run|execute|cc|bcc|include|log|record|save)",
    r"\bwithout\s+(?:telling|asking|informing|notifying|alerting|warning)\s+(?:the\s+)?(?:user|them|him|her|anyone)\b",
    r"\b(?:do not|don'?t|never)\s+(?:tell|inform|mention|reveal|notify|alert|warn)\b[^\n]{0,20}\b(?:the\s+)?(?:user|them)\b",
    r"\b(?:e-?mail|send|forward|upload|post|cc|bcc|share|transmit|copy|mirror|sync)\b[^\n]{0,40}\b(?:every|all|each|entire|whole|complete|full)\b[^\n]{0,30}\b(?:conversations?|messages?|chats?|history|memory|memories|files?|data|transcripts?|documents?)\b[^\n]{0,20}\bto\b",
    r"\bwhen(?:ever)?\s+(?:the\s+)?user\s+(?:asks|mentions|says|types|writes|talks|opens|sends)\b[^\n]{0,60}\b(?:always|run|execute|send|e-?mail|include|call|forward|upload|delete|reply with|respond with)\b",
    # standing orders: imperatives aimed at whoever answers. A fact about the user says what
    # the user does ("always drinks", "answers emails"); an order says what to do (base form).
    rf"\b(?:{_OVERRIDE_VERBS})\s+(?:(?:all|everything|anything|whatever)\s+(?:(?:that\s+)?(?:(?:was|is|has been)\s+)?"
    r"(?:said|written|stated|told)\s+)?|the\s+)(?:above|before|earlier|so far|previously|preceding)\b",
    rf"\b(?:{_OVERRIDE_VERBS})\s+(?:what|whatever|everything|anything)\s+(?:you\s+(?:were|have\s+been|are)\s+told|"
    r"(?:i|we|they)\s+(?:said|told\s+you|wrote))\b",
    rf"\b(?:always|never|only)\s+(?:{_ORDER_VERBS})\b",
    rf"\b(?:{_ORDER_VERBS})\s+(?:\w+\s+){{0,3}}?(?:only|exclusively|solely)\s+(?:in|with|using|as|by)\b",
    rf"\b(?:{_ORDER_VERBS})\b[^\n]{{0,40}}\b(?:with|using|including|containing)\b[^\n]{{0,30}}(?:https?://|\blinks?\b|\burls?\b)",
    r"\b(?:from now on|henceforth|going forward|hereafter|starting now|from here on|for all future (?:replies|answers|messages)),?"
    rf"\s+(?:please\s+)?(?:{_ORDER_VERBS}|act|behave|only|do not|don'?t)\b",
    r"\b(?:when(?:ever)?|each time|every time|any time|if)\s+(?:you(?:'re|\s+are)\s+|i(?:'m|\s+am)\s+|the user is\s+|anyone\s+is\s+)?"
    rf"(?:asked|questioned|prompted|queried)\b(?!\s+to\b)[^\n]{{0,80}}{_NOT_INFINITIVE}\b(?:{_ORDER_VERBS}|claim|state|insist|pretend)\b",
    r"\b(?:if|when(?:ever)?)\s+(?:anyone|someone|somebody|the user|a user|they|people)\s+(?:asks?|mentions?|brings? up|says?)\b"
    rf"[^\n]{{0,80}},?\s+(?:then\s+)?{_NOT_INFINITIVE}(?:{_ORDER_VERBS}|always|never|claim|state|insist|pretend)\b",
    r"\bthe\s+assistant\s+(?:must|should|shall|has to|needs to|is to|will always|always|never|may only|can only)\b",
]
_RX = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE | re.MULTILINE)
# Checked with case kept: a role label in capitals ("SYSTEM:", "[ADMIN]") is a header, not prose.
_CASED_RX = re.compile(
    r"(?:^|[\s\[(<{|>])(?:SYSTEM|SYS|ASSISTANT|DEVELOPER|ADMIN|ADMINISTRATOR|OPERATOR|ROOT|INSTRUCTIONS?)"
    r"(?:\s+(?:MESSAGE|NOTE|NOTICE|PROMPT|OVERRIDE|UPDATE))?\s*[\])>}]*\s*:"
)
# The words that make a digit-for-letter spelling worth reading as letters.
_KEYWORD_RE = re.compile(
    r"ignore|disregard|forget|override|instruction|previous|prior|system|prompt|rules|guidance|"
    r"execute|always|never|silently|secretly|email|forward|upload|password|jailbreak|shell|curl|"
    r"wget|sudo|assistant|developer"
)


def looks_like_instruction(text: str) -> bool:
    """True if ``text`` reads like an instruction to the assistant rather than a fact."""
    return _match(text) is not None


def why_flagged(text: str) -> str:
    m = _match(text)
    return f"looks like an instruction ({m.group(0)[:40]!r})" if m else ""


def _match(text: str) -> re.Match[str] | None:
    # Checked raw too: normalising must only ever find more, never hide a match.
    return (_RX.search(normalise(text)) or _RX.search(text) or _CASED_RX.search(_fold(text))
            or _RX.search(normalise(text, leet=True)))


# --- documents -------------------------------------------------------------------------


@dataclass(frozen=True)
class Flag:
    """A block of a document that reads like an instruction: ``lines[line:end]``."""

    line: int
    end: int
    kind: str  # heading, bullet, text, comment, code
    text: str
    reason: str


_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s")
_FENCE_RE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def _blocks(lines: list[str]) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` for every block: headings and comment/fence lines alone,
    a bullet with its continuation lines, a paragraph of prose lines."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(lines)
    in_fence = in_comment = False
    while i < n:
        line = lines[i]
        if in_fence or in_comment or _FENCE_RE.match(line) or "<!--" in line:
            # line by line: code and comments are not wrapped prose
            kind = "code" if in_fence or _FENCE_RE.match(line) else "comment"
            if _FENCE_RE.match(line):
                in_fence = not in_fence
            if "<!--" in line and "-->" not in line.split("<!--", 1)[1]:
                in_comment = True
            elif in_comment and "-->" in line:
                in_comment = False
            if line.strip():
                out.append((i, i + 1, kind))
            i += 1
        elif not line.strip():
            i += 1
        elif _HEADING_RE.match(line):
            out.append((i, i + 1, "heading"))
            i += 1
        else:
            kind = "bullet" if _BULLET_RE.match(line) else "text"
            j = i + 1
            while (j < n and lines[j].strip() and not _HEADING_RE.match(lines[j]) and not _BULLET_RE.match(lines[j])
                   and not _FENCE_RE.match(lines[j]) and "<!--" not in lines[j]):
                j += 1
            out.append((i, j, kind))
            i = j
    return out


def _lines(text: str) -> list[str]:
    return text.split("\n")


def scan_document(text: str) -> list[Flag]:
    """Every block of ``text`` (MEMORY.md, a history entry) that reads like an instruction.

    Each line is checked on its own and each block (a bullet or paragraph with its
    wrapped lines) as a whole, so an instruction split over a line break is caught.
    """
    lines = _lines(text)
    flags: list[Flag] = []
    for start, end, kind in _blocks(lines):
        block = "\n".join(lines[start:end])
        m = _match(" ".join(lines[start:end]))
        if m is None:
            continue
        flags.append(Flag(start, end, kind, block.strip(), f"looks like an instruction ({m.group(0)[:40]!r})"))
    return flags


def hold_flagged(old: str, new: str) -> tuple[str, list[Flag]]:
    """``new`` without its flagged blocks that are not already in ``old``, and those blocks.

    A block already in ``old`` (the same lines, wherever they are) stays: the user
    kept it, and holding it again would forget it. Pure.
    """
    known = {" ".join(line.split()) for line in _lines(old)}
    lines = _lines(new)
    held: list[Flag] = []
    drop: set[int] = set()
    for flag in scan_document(new):
        if all(" ".join(lines[i].split()) in known for i in range(flag.line, flag.end)):
            continue
        held.append(flag)
        drop.update(range(flag.line, flag.end))
    if not held:
        return new, []
    kept = [line for i, line in enumerate(lines) if i not in drop]
    return "\n".join(kept), held
