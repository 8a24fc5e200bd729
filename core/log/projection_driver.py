"""One driver for every store derived from the log (issue 28): catch-up, "behind",
quarantine and retry, written once.

A derived store (the search index, the reminders' due index, ...) implements
:class:`Projection`: where it stands (:meth:`~Projection.position`, a :class:`Mark`:
the seq and id of the last record it holds and where that record ends in the log),
:meth:`~Projection.apply` (fold some records and store the new mark *in the same
transaction*, so a crash never leaves records half-applied or applied twice) and
:meth:`~Projection.start_over` (forget everything; rebuilding is starting over and
replaying what the store needs). :class:`ProjectionDriver` does the rest:

* **catch-up** reads the log after the mark in batches, stopping between batches
  when asked (what was applied stays applied: the mark moved with it);
* **behind**: a store whose mark is unreadable, ahead of the log, or no longer the
  record the log has there (another log, a shortened one) is rebuilt, and so is one
  that meets a record of its :attr:`~Projection.restart_types` (a purge: text left
  the log). A mark is checked against the log once per driver (an open), then trusted;
* **quarantine**: when a batch fails, its records are applied one at a time. An OS or
  database error is the store's and raised (:data:`STORE_FAULTS`). At the first other
  failure of a record alone, the store is asked to store the mark it has reached (an empty
  :meth:`~Projection.apply`): if that fails too, the failure is the store's (disk full,
  its own mark), not an event's, and it is raised, the mark staying before the record
  (the next catch-up tries again; so is a failure on the log's very first record,
  where there is no mark to ask with). Otherwise the record is quarantined with its reason
  (``<name>.quarantine.json`` beside the store, written *before* the mark moves past
  it) and the rest go on;
* **retry**: every catch-up applies the quarantined records again, by themselves and
  with the mark unchanged; one that goes in leaves the quarantine. A rebuild empties it.

The driver holds no lock: its caller holds the store's (each store has one).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from memtray.core.base.errors import EnvironmentProblem
from memtray.core.base.findings import Finding
from memtray.core.base.fsutil import atomic_write
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import Record
from memtray.core.log.segments import Position
from memtray.core.log.store import record_ending_at

log = logging.getLogger(__name__)

BATCH = 2000  # records per apply (and between checks for "stop")
QUARANTINE_SUFFIX = ".quarantine.json"
#: failures that are always the store's (its disk, its database), never quarantined
STORE_FAULTS: tuple[type[Exception], ...] = (OSError, EnvironmentProblem, sqlite3.OperationalError)


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
        last = Mark.of(records[-1], elog.head)
        if len(records) == 1:
            return self._apply([(records[0], elog.head)], last, mark)
        try:
            return self.projection.apply(records, last)
        except Exception:
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
        last = done = mark
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
                changed += self._apply(pending, last, done)
                pending, done = [], last
                if should_stop is not None and should_stop():
                    return changed
        if pending:
            changed += self._apply(pending, last, done)
        return changed

    def _apply(self, items: list[tuple[Record, Position]], mark: Mark, before: Mark) -> int:
        """Apply a batch that takes the store from ``before`` to ``mark``."""
        try:
            return self.projection.apply([rec for rec, _ in items], mark)
        except Exception:
            return self._one_by_one(items, mark, before)

    def _one_by_one(self, items: list[tuple[Record, Position]], mark: Mark, before: Mark) -> int:
        """A batch failed: apply its records one at a time; one that fails alone, in a store
        that can still store its mark, is quarantined (saved before the mark moves past it)."""
        entries = self._entries()
        changed, at = 0, before
        failed: list[int] = []
        for rec, pos in items:
            try:
                changed += self.projection.apply([rec], Mark.of(rec, pos))
                at = Mark.of(rec, pos)
            except Exception as exc:
                if isinstance(exc, STORE_FAULTS):
                    raise  # the disk, the database: never an event's doing
                if not failed:  # the first failure: this event's, or the store's?
                    if not at.seq:
                        raise  # an empty store failing on the log's first record cannot tell
                    self.projection.apply([], at)  # a store that cannot keep its own mark raises here
                entries[rec.seq] = Quarantined(rec.seq, rec.id, pos.to_json(), _reason(exc))
                failed.append(rec.seq)
                self._save(entries)
        if failed and failed[-1] == items[-1][0].seq:
            self.projection.apply([], mark)  # the mark moves past a last record that failed
        if failed:
            first = entries[failed[0]]
            log.warning("%s could not apply %d event(s) (seq %d: %s); quarantined, retried at each catch-up",
                        self.projection.name, len(failed), first.seq, first.reason)
        return changed

    def _retry(self, elog: EventLog, mark: Mark) -> int:
        entries = self._entries()
        if not entries:
            return 0
        changed, before = 0, len(entries)
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
        if len(entries) != before:  # (attempts alone are not worth a write each search)
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


def quarantine_file(store: Path) -> Path:
    """Where the driver of the store in file ``store`` keeps its quarantine (beside it)."""
    return store.with_suffix(QUARANTINE_SUFFIX)


def check_quarantines(state: Path) -> list[Finding]:
    """What ``memtray doctor`` says of records a derived store in ``state`` could not apply
    (a bug to report: the log keeps them, and every catch-up tries them again)."""
    out = []
    for path in sorted(state.glob(f"*{QUARANTINE_SUFFIX}")):
        entries = sorted(_load(path).values(), key=lambda q: q.seq)
        if entries:
            first = entries[0]
            out.append(Finding(
                False, f"{path.name.removesuffix(QUARANTINE_SUFFIX)}: {len(entries)} event(s) could not be applied",
                f"seq {first.seq}: {first.reason} ({first.attempts} attempt(s)); the log keeps them and every "
                "catch-up tries them again; please report this", code="quarantine"))
    return out


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
