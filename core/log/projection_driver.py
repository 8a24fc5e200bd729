"""One driver for every store derived from the log (issue 28): catch-up, "behind",
quarantine and retry, written once.

A derived store (the search index, the reminders' due index, ...) implements
:class:`Projection`: where it stands (:meth:`~Projection.position`, a :class:`Mark`:
the seq and id of the last record it holds and where that record ends in the log),
:meth:`~Projection.apply` (fold some records and store the new mark *in the same
transaction*, so a crash never leaves records half-applied or applied twice) and
:meth:`~Projection.start_over` (forget everything); rebuilding is starting over and
replaying what the store needs, which the driver does. :class:`ProjectionDriver` does the rest:

* **catch-up** reads the log after the mark in batches, stopping between batches
  when asked (what was applied stays applied: the mark moved with it);
* **behind**: a store whose mark is unreadable, ahead of the log, or no longer the
  record the log has there (another log, a shortened one) is rebuilt, and so is one
  that meets a record of its :attr:`~Projection.restart_types` (a purge: text left
  the log). A mark is checked against the log once per driver (an open), then trusted;
* **quarantine**: when a batch fails, its records are applied one at a time; a record
  that still fails is quarantined with its reason (``<name>.quarantine.json`` beside
  the store, written *before* the mark moves past it) and the rest go on. A failure
  that no record of the batch gets past is the store's (disk full, its own mark), not
  an event's: it is raised, nothing moves, and the next catch-up tries again;
* **retry**: every catch-up applies the quarantined records again, by themselves and
  with the mark unchanged; one that goes in leaves the quarantine. A rebuild empties it.

The driver holds no lock: its caller holds the store's (each store has one).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from memtray.core.base.errors import EnvironmentProblem
from memtray.core.base.fsutil import atomic_write
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import Record
from memtray.core.log.segments import Position
from memtray.core.log.store import record_ending_at

log = logging.getLogger(__name__)

BATCH = 2000  # records per apply (and between checks for "stop")


@dataclass(frozen=True)
class Mark:
    """Where a derived store stands: the last record it holds (seq 0: none yet) and where
    that record ends in the log (None only at seq 0: reading starts at the log's start)."""

    seq: int = 0
    id: str = ""
    position: Position | None = None

    @classmethod
    def of(cls, rec: Record, pos: Position) -> Mark:
        return cls(rec.seq, rec.id, pos)


START = Mark()


class Projection(Protocol):
    """A store derived from the log, as the driver sees it."""

    #: for the log's messages and the quarantine file
    name: str
    #: record types after which the store starts over (a purge): met in a catch-up, they rebuild it
    restart_types: frozenset[str]

    def position(self) -> Mark | None:
        """Where the store stands; None: it cannot say (unreadable, another format): rebuild."""
        ...

    def apply(self, records: Sequence[Record], mark: Mark) -> int:
        """Fold ``records`` and store ``mark``, in one transaction; returns how many items
        (documents, reminders) changed. ``records`` may be empty (only the mark moves)."""
        ...

    def start_over(self, elog: EventLog) -> Mark:
        """Forget everything and return where the store now stands: :data:`START` (the
        driver then replays the whole log through :meth:`apply`) or a mark it rebuilt up to
        by other means (the folded state)."""
        ...


@dataclass
class Quarantined:
    """A record a store could not apply: retried by every catch-up."""

    seq: int
    id: str
    position: list[int]
    reason: str
    attempts: int = 1


class ProjectionDriver:
    """Keeps one :class:`Projection` in step with the log (module doc)."""

    def __init__(self, projection: Projection, quarantine_file: Path) -> None:
        self.projection = projection
        self.quarantine_file = quarantine_file
        self._checked = False  # the stored mark was compared with the log (once per driver)
        self._quarantine: dict[int, Quarantined] | None = None  # read on first use

    # --- questions --------------------------------------------------------------------

    def behind(self, elog: EventLog) -> bool:
        """Whether the store lacks records the log has, cannot say where it stands, or has
        not been checked against this log yet."""
        mark = self.projection.position()
        return not self._checked or mark is None or mark.seq != elog.last_seq

    def quarantined(self) -> list[Quarantined]:
        return sorted(self._entries().values(), key=lambda q: q.seq)

    # --- keeping up -------------------------------------------------------------------

    def catch_up(self, elog: EventLog, *, should_stop: Callable[[], bool] | None = None,
                 batch: int = BATCH) -> int:
        """Apply what the log has after the store's mark (rebuilding the store when it does
        not match the log); returns how many items changed."""
        mark = self.projection.position()
        why = self._mismatch(elog, mark)
        if why is not None:
            log.info("%s %s; rebuilding it", self.projection.name, why)
            return self.rebuild(elog, should_stop=should_stop, batch=batch)
        assert mark is not None
        changed = self._retry(elog, mark)
        if mark.seq == elog.last_seq:
            return changed  # up to date: the log is not even opened
        return changed + self._replay(elog, mark, should_stop, batch, rebuilding=False)

    def follow(self, records: Sequence[Record], elog: EventLog) -> int:
        """Apply records just appended (a store listener), without reading the log when they
        follow the mark; a store that is behind them catches up from the log instead."""
        if not records:
            return 0
        mark = self.projection.position()
        if mark is None or not self._checked or records[0].seq != mark.seq + 1:
            return self.catch_up(elog)
        try:
            return self.projection.apply(records, Mark.of(records[-1], elog.head))
        except Exception:
            if len(records) < 2:
                raise
            return self.catch_up(elog)  # one at a time, with each record's position from the log

    def rebuild(self, elog: EventLog, *, should_stop: Callable[[], bool] | None = None,
                batch: int = BATCH) -> int:
        """Start the store over and replay what it needs; the quarantine is emptied."""
        self._save({})
        mark = self.projection.start_over(elog)
        self._checked = True
        return self._replay(elog, mark, should_stop, batch, rebuilding=True)

    # --- internals --------------------------------------------------------------------

    def _mismatch(self, elog: EventLog, mark: Mark | None) -> str | None:
        """Why the store must be rebuilt before it can catch up, or None."""
        if mark is None or (mark.seq and mark.position is None):
            return "cannot say where it stands"
        if mark.seq > elog.last_seq:
            return "is ahead of the event log"
        if mark.seq and not self._checked:
            assert mark.position is not None
            rec = record_ending_at(elog.dir, mark.position)
            if rec is None or rec.seq != mark.seq or rec.id != mark.id:
                return "does not match the event log"
        self._checked = True
        return None

    def _replay(self, elog: EventLog, mark: Mark, should_stop: Callable[[], bool] | None,
                batch: int, *, rebuilding: bool) -> int:
        changed = 0
        expect = mark.seq + 1
        pending: list[tuple[Record, Position]] = []
        last = mark
        restart = self.projection.restart_types
        for rec, pos in elog.read(mark.position if mark.seq else None):
            if rec.seq < expect:
                continue  # only when reading from the start
            if not rebuilding and ((rec.seq != expect and mark.seq) or rec.type in restart):
                why = "lost its place in the event log" if rec.type not in restart else f"met {rec.type}"
                log.info("%s %s; rebuilding it", self.projection.name, why)
                return self.rebuild(elog, should_stop=should_stop, batch=batch)
            expect = rec.seq + 1
            pending.append((rec, pos))
            last = Mark.of(rec, pos)
            if len(pending) >= batch:
                changed += self._apply(pending, last)
                pending = []
                if should_stop is not None and should_stop():
                    return changed
        if pending:
            changed += self._apply(pending, last)
        return changed

    def _apply(self, items: list[tuple[Record, Position]], mark: Mark) -> int:
        try:
            return self.projection.apply([rec for rec, _ in items], mark)
        except Exception:
            if len(items) < 2:
                raise
            return self._one_by_one(items, mark)

    def _one_by_one(self, items: list[tuple[Record, Position]], mark: Mark) -> int:
        """A batch failed: apply its records one at a time; one that fails alone is
        quarantined (saved before the mark moves past it), unless none goes in (module doc)."""
        entries = self._entries()
        before = dict(entries)
        changed, applied = 0, 0
        first: Exception | None = None
        for rec, pos in items:
            try:
                changed += self.projection.apply([rec], Mark.of(rec, pos))
                applied += 1
            except Exception as exc:  # an event the store cannot take, or the store itself
                first = first or exc
                entries[rec.seq] = Quarantined(rec.seq, rec.id, pos.to_json(), _reason(exc))
                self._save(entries)
        if not applied:
            self._save(before)
            assert first is not None
            raise first
        if items[-1][0].seq in entries:
            self.projection.apply([], mark)  # the mark moves past a last record that failed
        for q in entries.values():
            if q.seq not in before:
                log.warning("%s could not apply event %d (%s); it is quarantined and retried",
                            self.projection.name, q.seq, q.reason)
        return changed

    def _retry(self, elog: EventLog, mark: Mark) -> int:
        entries = self._entries()
        if not entries:
            return 0
        changed = 0
        for q in sorted(entries.values(), key=lambda q: q.seq):
            if q.seq > mark.seq:  # quarantined, then the mark did not move: met again in the replay
                del entries[q.seq]
                continue
            rec = _record_at(elog, q)
            if rec is None:  # the log no longer has it there
                del entries[q.seq]
                continue
            try:
                changed += self.projection.apply([rec], mark)
            except Exception as exc:
                q.attempts += 1
                q.reason = _reason(exc)
                log.debug("%s: event %d still fails (%s)", self.projection.name, q.seq, q.reason)
                continue
            log.info("%s applied event %d from its quarantine", self.projection.name, q.seq)
            del entries[q.seq]
        self._save(entries)
        return changed

    def _entries(self) -> dict[int, Quarantined]:
        if self._quarantine is None:
            self._quarantine = _load(self.quarantine_file)
        return self._quarantine

    def _save(self, entries: dict[int, Quarantined]) -> None:
        self._quarantine = entries
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.quarantine_file)
            return
        body = [asdict(q) for q in sorted(entries.values(), key=lambda q: q.seq)]
        try:
            atomic_write(self.quarantine_file, json.dumps(body, ensure_ascii=True))
        except EnvironmentProblem as exc:  # kept in memory: retried while this instance runs
            log.warning("could not save %s's quarantine (%s)", self.projection.name, exc)


def _reason(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def _record_at(elog: EventLog, q: Quarantined) -> Record | None:
    try:
        pos = Position.from_json(q.position)
    except (ValueError, TypeError, IndexError):
        return None
    rec = record_ending_at(elog.dir, pos)
    if rec is None or rec.seq != q.seq or rec.id != q.id:
        return None
    return elog.upcast(rec)


def _load(path: Path) -> dict[int, Quarantined]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        entries = [
            Quarantined(int(e["seq"]), str(e["id"]), [int(x) for x in e["position"]], str(e["reason"]),
                        int(e["attempts"])) for e in raw]
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError, KeyError) as exc:  # derived: a rebuild would redo it all
        log.warning("ignoring the quarantine file %s (%s)", path, exc)
        return {}
    return {q.seq: q for q in entries}
