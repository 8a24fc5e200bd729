"""The consolidation guard: what a ``save_memory`` reply may do to MEMORY.md (pure).

:func:`parse_arguments` validates the tool call's arguments; :func:`guard`
compares the reply with the current memory: a fact that disappeared without
being listed in ``removed_facts`` is a *silent drop* (put back under policy
``keep``, held for review under ``review``), instruction-like text is held for
review, and an empty or shrunken memory is refused. No I/O, no clock: the
consolidation service, redo and rebuilds all call the same functions.

A fact the fact diff pairs with a new wording counts as the same fact reworded
only if the new wording keeps every content word of the old one
(:func:`same_fact`); "works on Beacon with Greta" -> "works on Beacon with Mia"
is a different fact, so unless ``removed_facts`` lists it the old one is a
silent drop like any other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from memtray.core.llm.client import tool_spec
from memtray.core.memory import factdiff
from memtray.core.memory.items import review_item
from memtray.core.memory.poison import hold_flagged, looks_like_instruction, why_flagged
from memtray.core.memory.receipts import FactReceipt, read_receipt, read_receipts, receipt_schema
from memtray.core.memory.wording import clean_obj

MAX_HISTORY_ENTRY = 20_000
MAX_MEMORY_UPDATE = 100_000
SHRINK_LIMIT = 0.5  # dropping more than half of the facts silently is a failure, not a policy case
# Words that say nothing about which fact it is; every other word of a fact must survive
# an unlisted rewording.
_FILLER_WORDS = frozenset({
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from",
    "as", "into", "about", "is", "are", "was", "were", "be", "been", "being", "am", "has", "have",
    "had", "do", "does", "did", "it", "its", "this", "that", "these", "those", "there", "he", "she",
    "they", "them", "his", "her", "their", "i", "me", "my", "we", "our", "you", "your", "user",
    "users", "also", "too", "very", "really", "still", "now", "currently",
})
_WORD_RE = re.compile(r"\w+")

#: where a new fact goes, or a moved one (core/memory/scopereply.py reads it at the door)
SCOPE_FIELD = {"type": "string", "description": (
    "Memory scope: \"global\" for a fact about the user in general; leave it out for this conversation's "
    "scope. move: the scope the fact moves to (\"global\" or this conversation's).")}

SAVE_MEMORY = tool_spec(
    "save_memory",
    "Save the consolidated memory. Call exactly once.",
    {
        "type": "object",
        "properties": {
            "history_entry": {"type": "string", "description": "Summary paragraph starting with [YYYY-MM-DD HH:MM]."},
            "memory_update": {"type": "string", "description": (
                "The complete new MEMORY.md: every kept or reworded fact keeps its [ID]; new facts have no id "
                "and end with the numbers of the messages they come from, e.g. [#3, #7]. Omit it when you send edits. "
                "Every new or reworded fact needs an entry in receipts.")},
            "receipts": {
                "type": "array",
                "description": "With memory_update: one receipt per new or reworded fact.",
                "items": {
                    "type": "object",
                    "properties": {
                        "fact": {"type": "string", "description": "The fact's id, or its text if it is new."},
                        "messages": {"type": "array", "items": {"type": "integer"}},
                        "quote": {"type": "string", "description": "A short verbatim quote from those messages."},
                        "scope": SCOPE_FIELD,
                    },
                    "required": ["fact", "messages", "quote"],
                },
            },
            "edits": {
                "type": "array",
                "description": "Instead of memory_update: only the changes, by fact id.",
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"type": "string", "enum": ["update", "add", "remove", "merge", "move"]},
                        "id": {"type": "string", "description": "The fact's id (update, remove)."},
                        "ids": {"type": "array", "items": {"type": "string"}, "description": "merge: the ids merged."},
                        "text": {"type": "string", "description": "The fact's new wording (update, add, merge)."},
                        "section": {"type": "string"},
                        "receipt": receipt_schema("the fact (add, update, merge)"),
                        "reason": {"type": "string", "description": "remove, move: why."},
                        "from": {"type": "string", "description": (
                            "add, update: the first day the fact holds (YYYY-MM-DD), only when the user said when.")},
                        "until": {"type": "string", "description": (
                            "add, update: the last day the fact holds (YYYY-MM-DD), only when the user said when.")},
                        "review_after": {"type": "string", "description": (
                            "add, update: the day to ask the user whether it still holds (YYYY-MM-DD).")},
                        "scope": SCOPE_FIELD,
                    },
                    "required": ["op"],
                },
            },
            "removed_facts": {
                "type": "array",
                "description": "Facts removed from memory (by id), each with the reason.",
                "items": {
                    "type": "object",
                    "properties": {"fact": {"type": "string"}, "reason": {"type": "string"}},
                    "required": ["fact", "reason"],
                },
            },
            "skipped": {
                "type": "array",
                "description": ("What the user said about themselves that you chose not to keep (passing, "
                                "already known, not about them...): the message number, a short verbatim quote "
                                "and why. What the user said and no fact, history entry or skipped entry keeps "
                                "is shown to them as not remembered."),
                "items": {
                    "type": "object",
                    "properties": {"message": {"type": "integer"}, "quote": {"type": "string"},
                                   "reason": {"type": "string"}},
                    "required": ["message", "quote", "reason"],
                },
            },
        },
        "required": ["history_entry", "removed_facts"],
    },
)

#: most edits one reply may carry
MAX_EDITS = 2_000


@dataclass(frozen=True)
class Reply:
    """A validated ``save_memory`` reply: the whole memory or edits, and the removals.
    ``edits`` is ``[]`` (never None) for a reply with neither edits nor a memory: nothing to change."""

    history_entry: str
    memory_update: str | None
    edits: list[dict[str, Any]] | None
    removed: list[dict[str, str]]
    #: the top-level ``receipts`` (memory_update form, or edits that carry none of their own)
    receipts: list[FactReceipt] = field(default_factory=list)
    #: what the door left out of the reply (a receipts entry without a fact, ...)
    notes: list[str] = field(default_factory=list)
    #: ``skipped`` as sent: checked against the messages by :func:`unsaid.parse_skipped`
    skipped: Any = None
    #: ``receipts[].scope`` as sent, ``(fact, scope)``: checked by core/memory/scopereply.py
    scoped: list[tuple[str, Any]] = field(default_factory=list)


def parse_reply(raw: str) -> Reply:
    """Validate save_memory's arguments (either form); raise ValueError with a plain reason.

    A raw line break inside a string (models write them) is taken as the line break it
    means (``strict=False``); the text is then checked like any other."""
    try:
        args = json.loads(raw, strict=False)
    except json.JSONDecodeError as exc:
        raise ValueError(f"save_memory arguments are not valid JSON ({exc.msg})") from None
    except RecursionError:  # "[[[[…" a hundred thousand deep: not a reply, and never a crash
        raise ValueError("save_memory arguments are nested too deeply") from None
    if not isinstance(args, dict):
        raise ValueError("save_memory arguments are not an object")
    args = clean_obj(args)  # control characters (but \n, \t) never reach memory: see wording.clean_controls
    edits = args.get("edits")
    if edits is not None:
        if not isinstance(edits, list) or not all(isinstance(e, dict) for e in edits):
            raise ValueError("edits must be a list of {op, id, text, ...}")
        if len(edits) > MAX_EDITS:
            raise ValueError(f"too many edits ({len(edits):,})")
        for e in edits:
            for key in ("text", "section", "reason"):
                if key in e and e[key] is not None and not isinstance(e[key], str):
                    raise ValueError(f"edit member {key!r} must be a string")
            if len(str(e.get("text") or "")) > MAX_MEMORY_UPDATE // 10:
                raise ValueError("an edit's text is too long")
        # a receipt is checked, never raised on: a malformed one holds its fact, with the reason
        edits = [{**e, "receipt": read_receipt(e.get("receipt"), sources=e.get("sources"))} for e in edits]
    notes: list[str] = []
    receipts = read_receipts(args.get("receipts"), notes)
    update = args.get("memory_update")
    if update is None and not edits:
        edits = []  # neither edits nor a memory: nothing to change (the diary entry is still written)
    if edits is not None and update in (None, ""):
        args = {**args, "memory_update": ""}  # the edits form: no memory text ("" with no edits: no change)
    entry, text, removed = parse_arguments(json.dumps({k: v for k, v in args.items() if k != "edits"}))
    raw = args.get("receipts")
    scoped: list[tuple[str, Any]] = [(str(r.get("fact") or ""), r["scope"]) for r in raw
                                     if isinstance(r, dict) and "scope" in r] if isinstance(raw, list) else []
    return Reply(entry, None if edits is not None and not text else text, list(edits) if edits is not None else None,
                 removed, receipts, notes, args.get("skipped"), scoped)


@dataclass
class Guarded:
    memory: str
    flagged: list[dict[str, Any]]
    kept: list[factdiff.Fact]
    reasons: dict[str, str]
    notes: list[str]


def format_messages(messages: list[dict[str, Any]]) -> str:
    """The conversation as the prompt shows it, one numbered line per message (``#3 [ts] USER: ...``);
    :func:`shown_messages` gives the same messages in the same order, so a fact can cite ``[#3]``."""
    lines = []
    for n, m in enumerate(shown_messages(messages), 1):
        role = m.get("role")
        content = m.get("content") or ""
        if role == "assistant" and m.get("tool_calls") and not content:
            names = ", ".join(tc.get("function", {}).get("name", "?") for tc in m["tool_calls"])
            content = f"(used tools: {names})"
        ts = m.get("ts", "")[:16].replace("T", " ")
        lines.append(f"#{n} [{ts}] {str(role).upper()}: {content}")
    return "\n".join(lines)


def shown_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages :func:`format_messages` numbers (tool results are left out)."""
    return [m for m in messages if m.get("role") != "tool"]


def parse_arguments(raw: str) -> tuple[str, str, list[dict[str, str]]]:
    """Validate save_memory's arguments; raise ValueError with a plain reason."""
    try:
        args = json.loads(raw, strict=False)  # as parse_reply: a raw line break in a string
    except json.JSONDecodeError as exc:
        raise ValueError(f"save_memory arguments are not valid JSON ({exc.msg})") from None
    except RecursionError:  # "[[[[…" a hundred thousand deep: not a reply, and never a crash
        raise ValueError("save_memory arguments are nested too deeply") from None
    if not isinstance(args, dict):
        raise ValueError("save_memory arguments are not an object")
    entry, update = args.get("history_entry"), args.get("memory_update")
    removed = args.get("removed_facts", [])
    if not isinstance(entry, str):
        raise ValueError("history_entry must be a string")
    if not isinstance(update, str):
        raise ValueError("memory_update must be a string")
    if removed is None:
        removed = []
    if not isinstance(removed, list) or not all(isinstance(x, dict | str) for x in removed):
        raise ValueError("removed_facts must be a list of {fact, reason}")
    if len(entry) > MAX_HISTORY_ENTRY:
        raise ValueError(f"history_entry is too long ({len(entry):,} characters)")
    if len(update) > MAX_MEMORY_UPDATE:
        raise ValueError(f"memory_update is too long ({len(update):,} characters)")
    clean: list[dict[str, str]] = []
    for x in removed:
        if isinstance(x, str):
            clean.append({"fact": x, "reason": ""})
        else:
            clean.append({"fact": str(x.get("fact", "")), "reason": str(x.get("reason", ""))})
    return entry, update, clean


def guard(old: str, new: str, removed: list[dict[str, str]], policy: str, *, enabled: bool = True) -> Guarded:
    """Apply the no-silent-forgetting rules to a proposed MEMORY.md. Pure.

    Raises ValueError when the proposal is unusable (empty, or silently drops
    more than :data:`SHRINK_LIMIT` of the facts).
    """
    from memtray.core.memory.facts import read_markers

    new = read_markers(new).text  # a reply written for the id protocol: its [ID] and [#n] markers go
    old_facts = factdiff.parse(old)
    d = factdiff.diff(old, new)
    notes: list[str] = []
    reasons: dict[str, str] = {}
    for item in removed:
        f = factdiff.match_fact(old_facts, item["fact"])
        if f is None:
            notes.append(f"removed_facts names a fact not in memory: {item['fact'][:80]!r}")
            continue
        for twin in old_facts:  # every copy of the fact goes
            if twin.norm == f.norm:
                reasons[twin.id] = item["reason"] or "removed by the model"
    # A reworded fact whose old wording was listed as removed is a listed change. An
    # unlisted pair that lost a word may be two different facts: guard the old one.
    silent = [f for f in d.dropped if f.id not in reasons]
    silent += [o for o, n in d.changed if o.id not in reasons and not same_fact(o.text, n.text)]
    # a duplicate that collapsed into its twin is not gone
    still = {f.norm for f in factdiff.parse(new)}
    silent = [f for f in silent if f.norm not in still]
    flagged: list[dict[str, Any]] = []
    kept: list[factdiff.Fact] = []
    out = new
    if enabled:
        if old_facts and not factdiff.parse(new):
            raise ValueError("memory_update is empty: it would erase every fact")
        if old_facts and len(silent) > SHRINK_LIMIT * len(old_facts) and len(silent) > 2:
            raise ValueError(
                f"memory_update silently drops {len(silent)} of {len(old_facts)} facts; refusing a shrunken memory"
            )
        for f in silent:
            if policy == "keep":
                out = factdiff.add_fact(out, f.text, f.section or None)
                kept.append(f)
            else:
                flagged.append(review_item("silent-drop", f.text, f.section, f.id, "dropped without a reason"))
        d2 = factdiff.diff(old, out)
        for f in d2.added:
            if looks_like_instruction(f.text):
                out = factdiff.remove_fact(out, f)
                flagged.append(review_item("instruction", f.text, f.section, f.id, why_flagged(f.text)))
        for o, n in d2.changed:
            if looks_like_instruction(n.text):
                # the old wording stays: only the instruction-like rewording is held
                out = factdiff.remove_fact(out, n)
                if o.id not in reasons:
                    out = factdiff.add_fact(out, o.text, o.section or None)
                flagged.append(review_item("instruction", n.text, n.section, n.id, why_flagged(n.text)))
        # the whole document, not only its facts: headings, comments and code too
        out, held = hold_flagged(old, out)
        flagged += [review_item("instruction", h.text, "", None, h.reason) for h in held]
    return Guarded(out, flagged, kept, reasons, notes)


_CONTRACTIONS = (("can't", "can not"), ("cannot", "can not"), ("won't", "will not"), ("n't", " not"))


def _uncontract(text: str) -> str:
    """ "doesn't" -> "does not", so a contraction and its long form are the same words."""
    if "'" in text or "cannot" in text:
        for short, long in _CONTRACTIONS:
            text = text.replace(short, long)
    return text


def _content_words(text: str) -> set[str]:
    out = set()
    for w in _WORD_RE.findall(_uncontract(factdiff.normalize(text))):
        if w in _FILLER_WORDS:
            continue
        out.add(w.removesuffix("s") if len(w) > 3 and not w.endswith("ss") else w)
    return out


def same_fact(old: str, new: str) -> bool:
    """Whether ``new`` can stand for ``old`` without anything being forgotten: it keeps
    every content word of ``old`` (a word of five letters or more may change its ending,
    "learning" -> "learn"). It may add words, reorder them, change case, punctuation and
    filler words, but not say the opposite (differ only by a negation). Pure."""
    if factdiff.flipped(old, new):
        return False  # "likes tea" -> "doesn't like tea" keeps every word and forgets the fact
    kept = _content_words(new)
    for w in _content_words(old):
        if w in kept:
            continue
        if len(w) >= 5 and any(k.startswith(w[:5]) for k in kept):
            continue
        return False
    return True


def hold_history(entry: str, flagged: list[dict[str, Any]]) -> str:
    """``entry`` without its instruction-like paragraphs, which join ``flagged`` for review."""
    entry, held = hold_flagged("", entry)
    flagged += [review_item("instruction", h.text, "History", None, f"in the history entry: {h.reason}") for h in held]
    return entry
