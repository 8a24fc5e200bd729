"""When each reminder is next due: a derived SQLite index, so start-up need not look at all.

``state/reminders.sqlite`` holds one row per active reminder, ``(id, next_at)``,
where ``next_at`` is the first occurrence after the reminder was scheduled or
last fired (a one-shot: its own time), in UTC seconds, with an index on it.
Start-up asks it for what is due (``next_at <= now``) and for the earliest
upcoming time: both are index look-ups, independent of how many reminders
there are, so the scheduler holds one timer, not one job per reminder.

The index is *derived*, like the search index, and kept in step by the one
projection driver (core/log/projection_driver.py): it records the log position it
reflects, is brought up to date from the log's tail on open, and is rebuilt
from the whole state when it is missing, unreadable, or does not match the
log. ``next_at`` is a lower bound the service checks with the real schedule
(:func:`~memtray.core.reminders.spec.due`) before anything fires.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from memtray.core.base.clock import parse_ts
from memtray.core.base.fsutil import FILE_MODE, ensure_dir
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import REMINDER_TYPES, Record, Reminder
from memtray.core.log.folded import ReminderState
from memtray.core.log.projection_driver import START, Mark, ProjectionDriver, quarantine_file
from memtray.core.log.projections import State
from memtray.core.log.segments import Position
from memtray.core.reminders.spec import ReminderError, Schedule

log = logging.getLogger(__name__)

INDEX_NAME = "reminders.sqlite"
FORMAT = 1
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS due(id TEXT PRIMARY KEY, next_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS due_by_time ON due(next_at)",
)


def next_at(r: ReminderState, schedule_of: Callable[[ReminderState], Schedule]) -> float | None:
    """Seconds since the epoch of ``r``'s next occurrence after its last firing, or None
    when it will never fire again (inactive, fired one-shot, unreadable spec)."""
    if not r.active:
        return None
    try:
        if r.kind == "at":
            return parse_ts(r.spec).astimezone(UTC).timestamp()
        after = parse_ts(r.scheduled_ts)
        if r.last_fired is not None:
            after = max(after, parse_ts(r.last_fired))
        t = schedule_of(r).next_after(after)
    except (ReminderError, ValueError):
        return None
    return t.timestamp() if t is not None else None


Fold = tuple[State, Callable[[ReminderState], Schedule]]


class DueIndex:
    """The next-due index file (thread-safe: one lock around the connection). A
    :class:`~memtray.core.log.projection_driver.Projection` of the log, kept in step by
    its driver; what it folds is the state's reminders the records touch."""

    name = "reminder index"
    restart_types: frozenset[str] = frozenset()

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self._db = db
        self._lock = threading.RLock()
        self.driver = ProjectionDriver(self, quarantine_file(path))
        self._fold: Fold | None = None  # the state and schedules the records are read against
        self._elog: EventLog | None = None
        #: after close, a late listener call (an append while quitting) does nothing
        self.closed = False

    @classmethod
    def open(cls, state_dir: Path) -> DueIndex:
        path = state_dir / INDEX_NAME
        ensure_dir(state_dir)
        try:
            db = _connect(path)
        except sqlite3.DatabaseError as exc:
            log.warning("reminder index %s is unusable (%s); rebuilding it", path, exc)
            _remove(path)
            db = _connect(path)
        return cls(path, db)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._db.close()

    # --- keeping up with the log ----------------------------------------------------

    def sync(self, elog: EventLog, state: State, schedule_of: Callable[[ReminderState], Schedule]) -> int:
        """Bring the index up to the log; returns how many reminders were (re)indexed."""
        with self._lock:
            self._fold, self._elog = (state, schedule_of), elog
            return self.driver.catch_up(elog)

    def note(self, records: Iterable[Record], state: State, schedule_of: Callable[[ReminderState], Schedule]) -> None:
        """Follow new records (a store listener): re-index the reminders they touch (after
        :meth:`sync`, which names the log)."""
        with self._lock:
            if self.closed or self._elog is None:
                return
            self._fold = (state, schedule_of)
            self.driver.follow(list(records), self._elog)

    def position(self) -> Mark | None:
        values = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if values.get("format") != str(FORMAT) or "position" not in values:
            return None
        try:
            pos = Position.from_json(json.loads(values["position"]))
            return Mark(int(values.get("last_seq", -1)), str(values.get("last_id", "")), pos)
        except (ValueError, TypeError, IndexError, KeyError):
            return None

    def start_over(self, elog: EventLog) -> Mark:
        """Index every reminder of the state (not the log: start-up need not read it)."""
        with self._tx():
            self._db.execute("DELETE FROM due")
            self._db.execute("DELETE FROM meta")
        assert self._fold is not None
        tail = elog.tail(1)
        if not tail or elog.head.offset == 0:
            return START  # an empty log, or a fresh segment just started: the driver reads the log
        mark = Mark.of(tail[0], elog.head)
        self._update(set(self._fold[0].reminders), mark)
        return mark

    def apply(self, records: Sequence[Record], mark: Mark) -> int:
        touched = {ev.reminder for r in records if r.type in REMINDER_TYPES and isinstance(ev := r.payload, Reminder)}
        self._update(touched, mark)
        return len(touched)

    def _update(self, ids: set[str], mark: Mark) -> None:
        assert self._fold is not None and mark.position is not None
        state, schedule_of = self._fold
        rows, gone = [], []
        for rid in ids:
            r = state.reminders.get(rid)
            t = next_at(r, schedule_of) if r is not None else None
            if t is None:
                gone.append((rid,))
            else:
                rows.append((rid, t))
        with self._tx():
            self._db.executemany("DELETE FROM due WHERE id = ?", gone)
            self._db.executemany("INSERT OR REPLACE INTO due(id, next_at) VALUES (?, ?)", rows)
            self._db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [
                ("format", str(FORMAT)), ("last_seq", str(mark.seq)), ("last_id", mark.id),
                ("position", json.dumps(mark.position.to_json())),
            ])

    def move(self, rid: str, when: datetime | None) -> None:
        """Set when ``rid`` is next worth looking at (an occurrence skipped as too late
        writes no event, so the service moves it on to the next one here)."""
        with self._lock:
            if self.closed:
                return
        with self._lock, self._tx():
            if when is None:
                self._db.execute("DELETE FROM due WHERE id = ?", (rid,))
            else:
                self._db.execute("INSERT OR REPLACE INTO due(id, next_at) VALUES (?, ?)", (rid, when.timestamp()))

    # --- questions -------------------------------------------------------------------

    def due_ids(self, now: datetime) -> list[str]:
        with self._lock:
            if self.closed:
                return []
            rows = self._db.execute("SELECT id FROM due WHERE next_at <= ? ORDER BY next_at",
                                    (now.timestamp(),)).fetchall()
        return [r[0] for r in rows]

    def earliest(self) -> datetime | None:
        with self._lock:
            if self.closed:
                return None
            row = self._db.execute("SELECT MIN(next_at) FROM due").fetchone()
        return datetime.fromtimestamp(row[0], UTC) if row and row[0] is not None else None

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM due").fetchone()[0])

    # --- internals -------------------------------------------------------------------

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


def _connect(path: Path) -> sqlite3.Connection:
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
        os.close(fd)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        for stmt in _SCHEMA:
            db.execute(stmt)
        db.execute("SELECT COUNT(*) FROM due").fetchone()
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
