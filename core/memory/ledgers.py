"""Fact ids of every memory revision, read from the log; the fact diff of a write, by id.

The ids live in the ``memory.written`` events (``facts`` member, see :mod:`facts`), so
this is a read-only view of the log: the ledger of a revision is its event's text and
ids (or, for events written before ids existed, the content ids of its text). The
current ledger is cached by the seq of the last ``memory.written``; nothing here is
kept in ``state/``, so deleting it changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memtray.core.log.events import MemoryWritten, RebuildProgress, Record
from memtray.core.memory import factdiff
from memtray.core.memory.factdiff import Fact, FactDiff
from memtray.core.memory.facts import Ledger

if TYPE_CHECKING:
    from memtray.core.log.store import Store


class Ledgers:
    """The ledger of any memory revision, by event seq."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: dict[int, Ledger] = {}

    def record(self, seq: int) -> Record | None:
        if seq <= 0:
            return None
        return next((r for r in self.store.log.records(seq - 1) if r.seq == seq), None)

    def at_seq(self, seq: int) -> Ledger:
        """The ledger of the ``memory.written`` (or ``rebuild.progress``) event ``seq`` (empty for 0)."""
        hit = self._cache.get(seq)
        if hit is not None:
            return hit
        rec = self.record(seq)
        # a rebuild branch's revisions carry their memory and ids the same way
        p = rec.payload if rec is not None and rec.type in (MemoryWritten.TYPE, RebuildProgress.TYPE) else None
        if not isinstance(p, MemoryWritten | RebuildProgress):
            led = Ledger(())
        else:
            led = Ledger.of(p.memory, p.facts)
            if p.facts is None:
                led = Ledger(led.facts, self._next_before(seq))
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[seq] = led
        return led

    def _next_before(self, seq: int) -> int:
        # a legacy event after new-style ones (an older memtray wrote it): keep counting
        best = 1
        for rec in self.events():
            if rec.seq >= seq:
                break
            info = MemoryWritten.of(rec).facts
            if info is not None:
                best = max(best, info["next"])
        return best

    def current(self) -> Ledger:
        led = self.at_seq(self.store.state.memory_seq)
        if [f.norm for f in led.facts] != [f.norm for f in factdiff.parse(self.store.state.memory)]:
            # cannot happen for events this version wrote; an old checkpoint may hold other text
            led = Ledger(tuple(factdiff.parse(self.store.state.memory)), led.next)
        return led

    def events(self) -> Iterator[Record]:
        return (r for r in self.store.log.records() if r.type == MemoryWritten.TYPE)


def diff_by_id(old: Ledger, new: Ledger) -> FactDiff:
    """Added, dropped and reworded facts between two ledgers: by id, never by words."""
    before = {f.id: f for f in old.facts}
    after = {f.id: f for f in new.facts}
    added = [f for f in new.facts if f.id not in before]
    dropped = [f for f in old.facts if f.id not in after]
    changed: list[tuple[Fact, Fact]] = [(before[f.id], f) for f in new.facts
                                        if f.id in before and before[f.id].norm != f.norm]
    unchanged = sum(1 for f in new.facts if f.id in before and before[f.id].norm == f.norm)
    return FactDiff(added, dropped, changed, unchanged)


def find_in_history(ledgers: Ledgers, fact_id: str) -> tuple[Fact, int] | None:
    """The newest wording a fact id had in any revision, and that revision's seq."""
    found: tuple[Fact, int] | None = None
    for rec in ledgers.events():
        p = MemoryWritten.of(rec)
        f = ledgers.at_seq(rec.seq).get(fact_id) if p.facts is not None else next(
            (x for x in factdiff.parse(p.memory) if x.id == fact_id), None)
        if f is not None:
            found = (f, rec.seq)
    return found
