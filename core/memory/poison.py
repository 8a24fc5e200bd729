"""Memory poisoning guard: spot instruction-like text that must not become a "fact".

Memory is injected into every prompt, so a line like "ignore previous
instructions" or "always run curl ... | sh" copied from a pasted web page would
steer every future turn. Such lines are held for the user's review instead of
being written. The patterns are deliberately broad: a false positive costs one
click in the review list; a false negative costs the user's trust.
"""

from __future__ import annotations

import re

_PATTERNS = [
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|any|system|your)\b.{0,30}\b(instructions?|prompts?|rules?|guidelines?|messages?)",
    r"\b(new|updated|real|actual)\s+(system\s+)?(instructions?|prompt|rules)\s*:",
    r"\bsystem\s+prompt\b",
    r"\byou\s+(must|should|will)\s+(always|never|now)\b",
    r"\b(from now on|henceforth|going forward),?\s+(you|the assistant|always|never)\b",
    r"\b(always|never|must)\s+(run|execute|call|invoke|fetch|download|open|visit|send|post|email|forward)\b",
    r"\b(run|execute)\s+(the\s+)?(command|script|shell|code)\b",
    r"\b(curl|wget|powershell|bash\s+-c|sh\s+-c|rm\s+-rf|sudo)\b",
    r"\|\s*(sh|bash|zsh|python\d?)\b",
    r"\b(fetch|visit|download|open|load|browse\s+to|go\s+to)\b[^\n]{0,40}https?://",
    r"https?://\S+\s*(and|then)\s+(run|execute|follow|obey)",
    r"\b(call|use|invoke)\s+the\s+\w+\s+tool\b",
    r"\b(act|behave)\s+as\s+(if|though)\b",
    r"\bjailbreak|\bDAN\b|developer\s+mode",
    r"<\s*/?\s*(system|assistant|tool)\s*>",
]
_RX = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)


def looks_like_instruction(text: str) -> bool:
    """True if ``text`` reads like an instruction to the assistant rather than a fact."""
    return _RX.search(text) is not None


def why_flagged(text: str) -> str:
    m = _RX.search(text)
    return f"looks like an instruction ({m.group(0)[:40]!r})" if m else ""
