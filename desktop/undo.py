"""One-click undo of a memory revision (a bad consolidation): what it will change, and doing it.

The browser's "Undo this change" button and the "Undo" action of the "memory
updated" notification both come here, on the worker. :func:`undo_revision` runs
the same core operation as ``memtray memory undo`` (``MemoryService.undo``: the
revision's fact changes reverted by id, everything after it kept). :func:`plan`
works out what that will do with core's own pure function on the same inputs,
so the confirmation lists exactly the facts that change, and those it leaves
(changed again since).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.memory import undo as core_undo
from memtray.core.memory.facts import Ledger


@dataclass
class Plan:
    """What undoing ``rev`` will do to the memory of now."""

    rev: str
    short: str
    parent: str | None
    remove: list[str] = field(default_factory=list)  # facts the revision added: they leave
    put_back: list[str] = field(default_factory=list)  # facts it removed: they come back
    reword: list[tuple[str, str]] = field(default_factory=list)  # (wording now, wording restored)
    kept: list[tuple[str, str]] = field(default_factory=list)  # (fact, why it is not undone)

    @property
    def empty(self) -> bool:
        return not (self.remove or self.put_back or self.reword)

    def describe(self, limit: int = 12) -> str:
        """The confirmation text: every change, one line each (the first ``limit`` per kind)."""
        if self.empty:
            why = "".join(f"\n  • {t} ({w})" for t, w in self.kept[:limit])
            return f"Undoing {self.short} would change nothing in memory now." + (
                f" Left as they are:{why}" if why else "")
        lines = [f"Undo revision {self.short}? Memory will change like this:"]
        for title, items in (("Removed", self.remove), ("Put back", self.put_back)):
            if items:
                lines.append(f"\n{title}:")
                lines += [f"  • {t}" for t in items[:limit]]
                if len(items) > limit:
                    lines.append(f"  … and {len(items) - limit} more")
        if self.reword:
            lines.append("\nReworded back:")
            lines += [f"  • {a}  →  {b}" for a, b in self.reword[:limit]]
        if self.kept:
            lines.append("\nLeft as they are (changed again since):")
            lines += [f"  • {t} ({w})" for t, w in self.kept[:limit]]
        lines.append("\nThis adds a new revision; everything after it stays, and nothing is lost.")
        return "\n".join(lines)


def plan(mem: Any, rev: str) -> Plan:
    """What :func:`undo_revision` will change (worker thread: reads git and the ledgers)."""
    sha = mem.resolve(rev)
    target = mem.revision(sha)
    parents = mem.git.info(sha).parents
    before = mem.ledgers.at_seq(mem.revision(parents[0]).event_seq) if parents else Ledger(())
    after = mem.ledgers.at_seq(target.event_seq)
    out = core_undo.undo(before, after, mem.store.state.memory, mem.ledger())
    p = Plan(sha, target.short, parents[0] if parents else None)
    for d in out.done:
        if d["action"] == "removed":
            p.remove.append(d["text"])
        elif d["action"] == "restored":
            p.put_back.append(d["text"])
        else:
            p.reword.append((d.get("from", ""), d["text"]))
    p.kept = [(d["text"], d["why"]) for d in out.not_done]
    return p


def undo_revision(mem: Any, rev: str) -> Any:
    """Undo ``rev`` through core (``memtray memory undo``); returns the new head Revision."""
    result = mem.undo(rev)
    if result.revision is None:
        raise MemtrayError(f"undoing {result.target.short} changes nothing in memory now",
                           hint="Its facts were changed again since; see `memtray memory undo --help`.")
    return result.revision
