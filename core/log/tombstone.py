"""Purges that can only purge: the rule a purge's replacement text must follow.

A purge (``memtray purge``) replaces every occurrence of a pattern with
:data:`MARKER` and nothing else. Another device learns of it from a tombstone
(``sync.purge``) that names each event it changed with its payload after the
purge, and from a republished stream that holds the purged lines. Neither
carries the pattern, so what a device can check is the shape of the change:
the new payload must be the old one with some non-empty spans of its texts
replaced by the marker, every other value (numbers, booleans, the structure,
the member names save for their own purged spans) unchanged. Anything else, a
rewritten sentence, a new member, a changed number, is not a purge and is
refused (:func:`purge_problem` says where).

The one other change a purge makes is to attachments: an attached file whose
text held the pattern is stored again under a new hash, and the message's
reference follows it (its ``sha256`` and ``size``); the caller says whether the
new file is the old one purged (``same_file``), since only it has both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memtray.core.log.door import Refusal

MARKER = "[PURGED]"

#: ``same_file(old_sha256, new_sha256)``: whether the file ``new`` is the file ``old`` purged
SameFile = Callable[[str, str], bool]


def purged_text(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` with some non-empty spans replaced by :data:`MARKER`
    (or ``old`` itself). Linear: each literal piece of ``new`` is placed at its earliest
    possible position, which leaves the most room for the pieces after it."""
    if old == new:
        return True
    parts = new.split(MARKER)
    if len(parts) == 1:
        return False
    first, last = parts[0], parts[-1]
    if not old.startswith(first) or len(old) < len(first) + len(last) + len(parts) - 1:
        return False
    pos = len(first) + 1  # every span replaced is at least one character
    for piece in parts[1:-1]:
        at = old.find(piece, pos)
        if at < 0:
            return False
        pos = at + len(piece) + 1
    end = len(old) - len(last)
    return end >= pos and old.endswith(last)


def purged_spans(old: str, new: str) -> list[str] | None:
    """The spans of ``old`` that ``new`` replaced by the marker (placed as
    :func:`purged_text` places them), or None if ``new`` is not ``old`` purged."""
    if not purged_text(old, new):
        return None
    parts = new.split(MARKER)
    if len(parts) == 1:
        return []
    spans: list[str] = []
    pos = len(parts[0])
    for piece in parts[1:-1]:
        at = old.find(piece, pos + 1)
        spans.append(old[pos:at])
        pos = at + len(piece)
    spans.append(old[pos:len(old) - len(parts[-1])])
    return spans


def text_pairs(old: Any, new: Any) -> list[tuple[str, str]]:
    """Every (old text, new text) at the same place of two JSON values that differ there."""
    if isinstance(old, str) and isinstance(new, str):
        return [(old, new)] if old != new else []
    if isinstance(old, list) and isinstance(new, list):
        return [p for a, b in zip(old, new, strict=False) for p in text_pairs(a, b)]
    if isinstance(old, dict) and isinstance(new, dict):
        return [p for k, v in old.items() if k in new for p in text_pairs(v, new[k])]
    return []


def recover_pattern(pairs: list[tuple[str, str]], salt: str, digest: str, most: int = 10_000) -> str | None:
    """The pattern of a literal purge, from texts before and after it: the span whose salted
    hash is the tombstone's ``pattern_sha256``; None for a regular expression (its spans
    differ) or when no span has that hash. Lets a device purge its own copy of an event
    whose payload differs from the purging device's (a merge revision's fact diff is each
    device's own) with the marker and nothing else."""
    import hashlib

    tried: set[str] = set()
    for old, new in pairs:
        for span in purged_spans(old, new) or ():
            if span in tried or len(tried) >= most:
                continue
            tried.add(span)
            if hashlib.sha256((salt + span).encode("utf-8", "surrogatepass")).hexdigest() == digest:
                return span
    return None


def purge_with(pattern: str, obj: Any) -> Any:
    """``obj`` with every occurrence of ``pattern`` in its texts (member names too) replaced by
    the marker: what a literal purge does to a payload."""
    if isinstance(obj, str):
        return obj.replace(pattern, MARKER)
    if isinstance(obj, list):
        return [purge_with(pattern, v) for v in obj]
    if isinstance(obj, dict):
        return {purge_with(pattern, k): purge_with(pattern, v) for k, v in obj.items()}
    return obj


def purged_bytes(old: bytes, new: bytes) -> bool:
    """:func:`purged_text` for a file's bytes (an attached file a purge rewrote)."""
    return purged_text(old.decode("utf-8", "surrogateescape"), new.decode("utf-8", "surrogateescape"))


def purge_problem(old: Any, new: Any, path: str = "data", same_file: SameFile | None = None) -> str | None:
    """Why ``new`` is not ``old`` purged (``path: what changed``), or None if it is."""
    if isinstance(old, str) and isinstance(new, str):
        return None if purged_text(old, new) else f"{path}: the text was rewritten, not purged"
    if type(old) is not type(new):
        return f"{path}: changed from {_kind(old)} to {_kind(new)}"
    if isinstance(old, list):
        if len(old) != len(new):
            return f"{path}: {len(old)} items became {len(new)}"
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            problem = _item_problem(a, b, f"{path}[{i}]", same_file)
            if problem:
                return problem
        return None
    if isinstance(old, dict):
        if len(old) != len(new):
            return f"{path}: members were added or removed"
        for (ka, va), (kb, vb) in zip(old.items(), new.items(), strict=True):
            if not (isinstance(ka, str) and isinstance(kb, str) and purged_text(ka, kb)):
                return f"{path}: the member {str(ka)[:40]!r} was renamed"
            problem = purge_problem(va, vb, f"{path}.{ka}", same_file)
            if problem:
                return problem
        return None
    return None if old == new else f"{path}: the value changed"


def _item_problem(a: Any, b: Any, path: str, same_file: SameFile | None) -> str | None:
    """A list item; an attachment reference may point at its file purged (new hash, size)."""
    if (isinstance(a, dict) and isinstance(b, dict) and "sha256" in a and a.get("sha256") != b.get("sha256")
            and a.keys() == b.keys()):
        old_sha, new_sha = a.get("sha256"), b.get("sha256")
        if not (isinstance(old_sha, str) and isinstance(new_sha, str) and same_file is not None
                and same_file(old_sha, new_sha)):
            return f"{path}.sha256: the attachment was replaced by a file that is not it purged"
        rest_a = {k: v for k, v in a.items() if k not in ("sha256", "size")}
        rest_b = {k: v for k, v in b.items() if k not in ("sha256", "size")}
        return purge_problem(rest_a, rest_b, path, same_file)
    return purge_problem(a, b, path, same_file)


def _kind(v: Any) -> str:
    return "null" if v is None else type(v).__name__


@dataclass
class Applied:
    """What applying other devices' purge tombstones did here."""

    #: events rewritten in this log
    events: int = 0
    #: tombstones applied (at least one of their entries passed)
    tombstones: int = 0
    #: entries refused: a replacement that is not the original purged (never applied)
    refused: list[Refusal] = field(default_factory=list)
