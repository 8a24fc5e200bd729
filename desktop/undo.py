"""One-click undo of a memory revision (a bad consolidation): what it will change, and doing it.

The browser's "Undo this change" button and the "Undo" action of the "memory
updated" notification both come here, on the worker. :func:`undo_revision` is
the one place that calls core: until ``MemoryService.undo`` (undo one
revision by fact id, keeping what came after it) is in, it rolls memory back
to the revision's parent, and :func:`plan` lists exactly what that changes
from the memory of now.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memtray.core.memory import factdiff


@dataclass
class Plan:
    """What undoing ``rev`` will do to the memory of now."""

    rev: str
    short: str
    parent: str | None
    remove: list[str] = field(default_factory=list)  # facts that leave memory
    put_back: list[str] = field(default_factory=list)  # facts that come back
    reword: list[tuple[str, str]] = field(default_factory=list)  # (now, after the undo)

    @property
    def empty(self) -> bool:
        return not (self.remove or self.put_back or self.reword)

    def describe(self, limit: int = 12) -> str:
        """The confirmation text: every change, one line each (the first ``limit`` per kind)."""
        if self.parent is None:
            return f"Revision {self.short} is the first one: there is nothing before it to go back to."
        if self.empty:
            return f"Undoing {self.short} changes no fact of the memory of now."
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
        lines.append("\nThis adds a new revision; nothing is lost, and it can be undone the same way.")
        return "\n".join(lines)


def plan(mem: Any, rev: str) -> Plan:
    """What :func:`undo_revision` will change (worker thread: reads git)."""
    sha = mem.resolve(rev)
    parents = mem.git.info(sha).parents
    p = Plan(sha, sha[:8], parents[0] if parents else None)
    if p.parent is None:
        return p
    now = mem.show("HEAD")
    target = mem.show(p.parent)
    d = factdiff.diff(now, target)
    p.remove = [f.text for f in d.dropped]
    p.put_back = [f.text for f in d.added]
    p.reword = [(a.text, b.text) for a, b in d.changed]
    return p


def undo_revision(mem: Any, rev: str) -> Any:
    """Undo ``rev``; returns the new head Revision. The one call to swap for ``mem.undo``."""
    p = plan(mem, rev)
    if p.parent is None:
        from memtray.core.base.errors import MemtrayError

        raise MemtrayError(f"revision {p.short} is the first one; there is nothing before it")
    return mem.rollback(p.parent)
