"""Memory revisions as git commits: the commit message and trailers of a
``memory.written`` event, the :class:`Revision` read back from a commit, and
how HISTORY.md grows. Pure functions of events and commits.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memtray.core.base.clock import parse_ts
from memtray.core.log.events import MemoryWritten, Record
from memtray.core.memory.gitrepo import CommitInfo


@dataclass(frozen=True)
class Revision:
    rev: str
    time: datetime
    reason: str
    model: str
    added: int
    removed: int
    changed: int
    flagged: int
    consolidation: str | None
    event_seq: int
    subject: str
    #: who asked for it (the commit's ``Source:`` and ``Client:``); not in :meth:`to_json`
    source: str = ""
    client: str = ""

    @property
    def short(self) -> str:
        return self.rev[:8]

    def to_json(self) -> dict[str, Any]:
        return {
            "rev": self.rev,
            "time": self.time.isoformat().replace("+00:00", "Z"),
            "reason": self.reason,
            "model": self.model,
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "flagged": self.flagged,
            "consolidation": self.consolidation,
            "event_seq": self.event_seq,
        }


def revision_of(info: CommitInfo) -> Revision:
    t = info.trailers
    facts = t.get("Facts", "+0 -0 ~0").split()
    nums = [int(x[1:]) if len(x) > 1 and x[1:].isdigit() else 0 for x in facts] + [0, 0, 0]
    return Revision(
        info.sha, info.time, t.get("Reason", "?"), t.get("Model", "-"), nums[0], nums[1], nums[2],
        int(t.get("Flagged", "0") or 0), t.get("Consolidation") or None, int(t.get("Event-Seq", "0") or 0),
        info.subject, t.get("Source", ""), t.get("Client", ""),
    )


def commit_message(rec: Record) -> str:
    d = MemoryWritten.of(rec)
    a, r, c = (len(d.diff["added"]), len(d.diff["dropped"]), len(d.diff["changed"])) if d.diff else (0, 0, 0)
    flagged = len(d.flagged or [])
    reason = d.reason
    subject = f"{_what(d)}: +{a} -{r} ~{c}" + (f", {flagged} flagged" if flagged else "")
    trailers = [f"Event-Seq: {rec.seq}", f"Reason: {reason}"]
    if d.target:
        trailers.append(f"Rolled-Back-To: {d.target}")
    if reason == "merge":  # the revisions it joins (memory.written event ids), and who wrote it
        trailers.append(f"Merge-Of: {' '.join(d.parents or []) or '-'}")
        trailers.append(f"Device: {d.device or '-'}")
    if d.consolidation:
        trailers.append(f"Consolidation: {d.consolidation}")
    trailers.append(f"Model: {d.model or '-'}")
    trailers.append(f"Source: {d.source}")
    if d.client:  # the MCP client that asked for the change
        trailers.append(f"Client: {' '.join(d.client.split())}")
    trailers.append(f"Facts: +{a} -{r} ~{c}")
    trailers.append(f"Flagged: {flagged}")
    return subject + "\n\n" + "\n".join(trailers) + "\n"


def _what(d: MemoryWritten) -> str:
    """The subject's first words: the reason, and for a rollback the revision it went
    back to, for a restore the fact it put back and where from."""
    reason = d.reason
    if reason == "rollback" and d.target:
        return f"rollback to {d.target[:8]}"
    if reason == "restore":
        added = d.diff["added"] if d.diff else []
        sources = [v.get("restored_from") for v in (d.provenance or {}).values()]
        if len(added) == 1:
            text = " ".join(added[0]["text"].split())
            text = text if len(text) <= 60 else text[:59] + "…"
            src = f" from {str(sources[0])[:8]}" if sources and sources[0] else ""
            return f'restore "{text}"{src}'
    if reason == "user-edit" and d.diff is not None:  # one fact reworded or removed by the user: which
        changed, dropped, added = d.diff["changed"], d.diff["dropped"], d.diff["added"]
        if len(changed) == 1 and not dropped and not added:
            return f'edit "{_short(changed[0]["new"]["text"])}"'
        if len(dropped) == 1 and not changed and not added:
            return f'forget "{_short(dropped[0]["text"])}"'
    return reason


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= 60 else text[:59] + "…"


def history_entry(ts: datetime, text: str) -> str:
    text = text.strip()
    if not text:
        return ""
    if not re.match(r"^\[\d{4}-\d{2}-\d{2}", text):
        text = f"[{ts.strftime('%Y-%m-%d %H:%M')}] {text}"
    return text + "\n\n"


#: where a diary entry begins: a line opening with its date, after a blank line (or at the start)
_ENTRY = re.compile(r"(?:^|(?<=\n\n))(?=\[\d{4}-\d{2}-\d{2})")


def diary_entries(text: str) -> list[str]:
    """HISTORY.md as its entries, each without the blank line after it (a file saved with
    Windows line ends read as if it had plain ones). Text before the first
    dated entry (a heading written by hand) is an entry of its own; text without dates is one."""
    return [e.strip() for e in _ENTRY.split(text.replace("\r\n", "\n")) if e.strip()]


def merge_history(bases: Sequence[str], sides: Sequence[str]) -> str:
    """The diary of a merge revision: the entries every side shares first, as they are, then
    every other entry of any side once, in date order (ties by their text), except an entry
    of a base that some side removed (by hand). A pure, symmetric function of the texts, so
    every device merging the same revisions writes the same diary; nothing a side added is
    dropped, and an entry both sides hold (an earlier merge's) is not doubled."""
    split = [diary_entries(s) for s in sides]
    if not split:
        return ""
    n = 0
    while all(len(e) > n for e in split) and len({e[n] for e in split}) == 1:
        n += 1
    shared = split[0][:n]
    held = [set(e) for e in split]
    gone = {e for b in bases for e in diary_entries(b) if any(e not in h for h in held)}
    # the rest as a multiset: an entry a side wrote twice stays twice, one both sides hold
    # after they parted (an earlier merge's) once
    rest: Counter[str] = Counter()
    for entries in split:
        rest |= Counter(e for e in entries[n:] if e not in gone)
    ordered = sorted(rest.elements(), key=lambda e: (e[1:17] if e.startswith("[") else "", e))
    return "".join(e + "\n\n" for e in [*shared, *ordered])


def apply_history(prev: str, rec: Record) -> str:
    d = MemoryWritten.of(rec)
    if d.history is not None:
        return d.history
    if d.history_append:
        return prev + history_entry(parse_ts(rec.ts), d.history_append)
    return prev
