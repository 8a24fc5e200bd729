"""The store: one data home's log, lock and live derived state, with checkpoints.

:class:`Store` is what the CLI, the daemon and the desktop worker open. It
takes the single-writer lock, opens the event log (recovering a torn tail),
loads the newest valid checkpoint from ``state/`` and replays only the tail
after it, then keeps :attr:`Store.state` current on every append. Deleting
``state/`` is always safe: a full replay gives the same state.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from memtray.core.base.clock import Clock, IdGenerator
from memtray.core.base.errors import EnvironmentProblem, LogCorrupt
from memtray.core.base.fsutil import FileOps, atomic_write, ensure_dir
from memtray.core.base.home import Home, HomeLock
from memtray.core.base.redact import redact
from memtray.core.base.worker import WriterThread, WrongThread
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import (
    CONSOLIDATION_TYPES,
    SCHEMA,
    BadRecord,
    Consolidation,
    Payload,
    Record,
    Schema,
    Verbatim,
    decode_raw,
)
from memtray.core.log.folded import ConsolidationState
from memtray.core.log.projections import STATE_VERSION, State, apply
from memtray.core.log.segments import DEFAULT_SEGMENT_BYTES, Position, segment_path

log = logging.getLogger(__name__)

CHECKPOINT_NAME = "checkpoint.json"
CHECKPOINT_EVERY = 2000  # events between automatic checkpoints

Listener = Callable[[list[Record], State], None]
#: one event to append: its payload, its session, its event id (None: a fresh one)
Entry = tuple[Payload | Verbatim, str | None, str | None]


class Store:
    def __init__(self, home: Home, log_: EventLog, state: State, lock: HomeLock | None) -> None:
        self.home = home
        self.log = log_
        self.state = state
        self._lock = lock
        self._since_checkpoint = 0
        self._mutex = threading.RLock()
        self._listeners: list[Listener] = []
        self.replayed_on_open = 0
        self.checkpoint_used = False
        self.problem: str | None = None
        #: the one thread allowed to append (the App's worker); None: any (tools, tests)
        self.writer: WriterThread | None = None
        if log_.problem is not None:
            self.problem = log_.problem.describe()

    # --- opening --------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        home: Home,
        *,
        readonly: bool = False,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        files: FileOps | None = None,
        schema: Schema = SCHEMA,
        use_checkpoint: bool = True,
    ) -> Store:
        lock: HomeLock | None = None
        if not readonly:
            home.create()
            lock = HomeLock(home).acquire()
        try:
            with _gc_paused():
                return cls._open(home, lock, readonly, clock, ids, segment_bytes, files, schema, use_checkpoint)
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    @classmethod
    def _open(
        cls, home: Home, lock: HomeLock | None, readonly: bool, clock: Clock | None, ids: IdGenerator | None,
        segment_bytes: int, files: FileOps | None, schema: Schema, use_checkpoint: bool,
    ) -> Store:
        body = read_checkpoint(home) if use_checkpoint else None
        elog = EventLog.open(
            home.events, readonly=readonly, clock=clock, ids=ids,
            segment_bytes=segment_bytes, files=files, schema=schema, trusted=_trusted(body),
        )
        state, after, used = (State(), None, False)
        if body is not None:
            state, after, used = load_checkpoint(home, elog, body)
            if not used and elog.trusted_used:
                # recovery relied on a checkpoint that turned out not to match this log:
                # recover again, checking the whole last segment
                elog.close()
                elog = EventLog.open(
                    home.events, readonly=readonly, clock=clock, ids=ids,
                    segment_bytes=segment_bytes, files=files, schema=schema,
                )
        store = cls(home, elog, state, lock)
        store.checkpoint_used = used
        n = 0
        try:
            for n, rec in enumerate(elog.iter_records(after), 1):  # noqa: B007 (n is the count)
                apply(state, rec)
        except LogCorrupt as exc:
            store.problem = str(exc)
            elog.readonly = True
            log.error("%s; the log is read-only until repaired", exc)
        store.replayed_on_open = n
        store._since_checkpoint = n
        if n >= CHECKPOINT_EVERY and not elog.readonly:
            store._checkpoint_quietly()
        return store

    # --- writing --------------------------------------------------------------------

    def append(self, payload: Payload | Verbatim, *, session: str | None = None, id: str | None = None) -> Record:
        """Durably append one event; its type comes from the payload's class."""
        return self.append_many([(payload, session, id)])[0]

    def append_many(self, items: Iterable[Entry]) -> list[Record]:
        """Durably append events (one fsync) and fold them into the live state.

        Each item is ``(payload, session, event id)``: a payload object (its class gives the
        type), or :class:`~memtray.core.log.schema.Verbatim` for another device's event kept
        as it came. With a :attr:`writer` bound (every App binds its worker), the append runs
        on that thread whoever calls: a call from another thread is handed to it
        and waited for, so listeners (the git projection, the search index) run
        there too. Handing over while holding :meth:`locked` would deadlock, so
        that is refused as the bug it is (:class:`WrongThread`).
        """
        writer = self.writer
        if writer is not None and not writer.in_worker:
            if self._mutex._is_owned():  # type: ignore[attr-defined]
                raise WrongThread("append_many called off the worker while holding the store lock")
            materialised = list(items)
            return writer.call(lambda: self.append_many(materialised))
        with self._mutex:
            before = self.log.last_seq
            # a session name is user text: a token pasted as one must not reach the disk (once per
            # name and batch: an import of a peer's thousands of events names a handful of sessions)
            names: dict[str, str] = {}
            # a Verbatim keeps the version its device wrote it in (a newer device's too)
            recs = self.log.append_many([
                (p.type if isinstance(p, Verbatim) else p.TYPE, p.to_data(),
                 (names[s] if s in names else names.setdefault(s, redact(s))) if s else s, i,
                 p.v if isinstance(p, Verbatim) else None)
                for p, s, i in items])
            fresh = [r for r in recs if r.seq > before]
            for rec in fresh:
                apply(self.state, self.log.upcast(rec))
            self._since_checkpoint += len(fresh)
            if self._since_checkpoint >= CHECKPOINT_EVERY:
                self._checkpoint_quietly()
        if fresh:
            for fn in list(self._listeners):
                fn(fresh, self.state)
        return recs

    def consolidation(self, ident: str, *, prefix: bool = False) -> ConsolidationState | None:
        """A consolidation by id (or, with ``prefix``, by unique id prefix).

        The state keeps only recent finished consolidations (projections.KEEP_FINISHED);
        an older one is folded again from its events in the log (a full read: this is
        for rare lookups such as a redo or "why is this fact here", not hot paths).
        None if there is no such consolidation or a prefix is not unique.
        """
        with self._mutex:  # appends on other threads change (and trim) the live dict
            live = dict(self.state.consolidations)
        if ident in live:
            return live[ident]
        scratch = State()
        for rec in self.log.records():
            if rec.type in CONSOLIDATION_TYPES and isinstance(p := rec.payload, Consolidation):
                cid = p.consolidation
                if cid == ident or (prefix and cid.startswith(ident)):
                    apply(scratch, rec)
        found = {**scratch.consolidations, **{k: c for k, c in live.items() if k.startswith(ident)}}
        if ident in found:
            return found[ident]
        matches = [c for k, c in found.items() if k.startswith(ident)] if prefix else []
        return matches[0] if len(matches) == 1 else None

    def new_id(self) -> str:
        """A fresh event-style id (ULID) from the log's id generator."""
        return self.log.ids.new()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's (re-entrant) lock: no append and no state change happens
        in between, so ``log.last_seq + 1`` read inside is the seq the next append gets."""
        with self._mutex:
            yield

    def subscribe(self, fn: Listener) -> None:
        """``fn(new_records, state)`` after every append (on the appending thread)."""
        self._listeners.append(fn)

    def checkpoint(self) -> None:
        with self._mutex:
            if self.log.readonly and self._lock is None:
                return
            save_checkpoint(self.home, self.log, self.state)
            self._since_checkpoint = 0

    def _checkpoint_quietly(self) -> None:
        """An automatic checkpoint: it only saves replay time, so failing to write one
        (disk full) must never fail the append that triggered it, nor skip the
        listeners of events that are already durable. Retried after the next batch."""
        try:
            self.checkpoint()
        except EnvironmentProblem as exc:  # disk full, I/O error, a link planted in state/
            self._since_checkpoint = 0
            log.warning("could not save a checkpoint (%s); start-up will replay more of the log", exc)

    @property
    def readonly(self) -> bool:
        return self.log.readonly

    def close(self, *, checkpoint: bool = True) -> None:
        with self._mutex:
            try:
                if checkpoint and self._lock is not None and not self.log.readonly and self._since_checkpoint:
                    self._checkpoint_quietly()
            finally:
                self.log.close()
                if self._lock is not None:
                    self._lock.release()
                    self._lock = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Opening allocates millions of short-lived, acyclic objects (records, payloads):
    the cyclic collector would only rescan them, a third of replay time. Pause it."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


# --- checkpoints ------------------------------------------------------------------------


def checkpoint_path(home: Home) -> Path:
    return home.state / CHECKPOINT_NAME


def save_checkpoint(home: Home, elog: EventLog, state: State) -> None:
    ensure_dir(home.state)
    last_id = None
    if state.last_seq:
        rec = record_ending_at(elog.dir, elog.head)
        last_id = rec.id if rec is not None and rec.seq == state.last_seq else None
        if last_id is None:
            return  # state and log disagree: never write a checkpoint we cannot validate
    body = {
        "format": 1,
        "position": elog.head.to_json(),
        "last_seq": state.last_seq,
        "last_id": last_id,
        "state": state.to_json(),
    }
    try:
        blob = orjson.dumps(body)
    except TypeError:  # lone surrogates (undecodable argv bytes) that orjson refuses
        import json

        blob = json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    path = checkpoint_path(home)
    if path.is_symlink():  # planted: replace the link itself, never write through it
        path.unlink()
    atomic_write(path, blob)


def _read_nofollow(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def read_checkpoint(home: Home) -> Any:
    """The parsed checkpoint file, or None if there is none or it is not JSON (said in the log)."""
    path = checkpoint_path(home)
    try:
        raw = _read_nofollow(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read checkpoint %s (%s); replaying the whole log", path, exc)
        return None
    try:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            import json

            return json.loads(raw)  # escaped lone surrogates: only the stdlib reads them
    except ValueError as exc:
        log.warning("ignoring checkpoint %s (%s); replaying the whole log", path.name, exc)
        return None


def _trusted(body: Any) -> tuple[Position, int] | None:
    """Where a checkpoint says the log was when it was taken (checked again by load_checkpoint)."""
    try:
        return Position.from_json(body["position"]), int(body["last_seq"])
    except (KeyError, IndexError, TypeError, ValueError, ArithmeticError):
        return None


_READ = object()


def load_checkpoint(home: Home, elog: EventLog, body: Any = _READ) -> tuple[State, Position | None, bool]:
    """The checkpointed state and where to resume, or a fresh state if none is valid.

    ``body`` is the parsed file when the caller has read it already (:func:`read_checkpoint`).
    """
    if body is _READ:
        body = read_checkpoint(home)
    if body is None:
        return State(), None, False
    path = checkpoint_path(home)
    try:
        if not isinstance(body, dict) or not isinstance(body.get("state"), dict):
            raise ValueError("it is not a checkpoint")
        version = body["state"].get("version")
        if version != STATE_VERSION:  # an upgrade: expected, not a problem worth a warning
            log.info("checkpoint has state version %s, this memtray %s; replaying the whole log once",
                     version, STATE_VERSION)
            return State(), None, False
        pos = Position.from_json(body["position"])
        state = State.from_json(body["state"])
        if body["last_seq"] == 0:
            return (state, None, True) if elog.last_seq == 0 else (State(), None, False)
        rec = record_ending_at(elog.dir, pos)
        if rec is None or rec.seq != body["last_seq"] or rec.id != body["last_id"]:
            raise ValueError("it does not match the log")
        return state, pos, True
    except (ValueError, KeyError, IndexError, TypeError, ArithmeticError, orjson.JSONDecodeError) as exc:
        log.warning("ignoring checkpoint %s (%s); replaying the whole log", path.name, exc)
        return State(), None, False


def record_ending_at(directory: Path, pos: Position) -> Record | None:
    path = segment_path(directory, pos.segment)
    try:
        with open(path, "rb") as fh:
            if pos.offset <= 0:
                return None
            start = max(0, pos.offset - 1024 * 1024)
            fh.seek(start)
            buf = fh.read(pos.offset - start)
    except OSError:
        return None
    if not buf.endswith(b"\n"):
        return None
    line = buf[:-1]
    nl = line.rfind(b"\n")
    line = line[nl + 1 :]
    try:
        return decode_raw(line)
    except BadRecord:
        return None


def remove_checkpoints(home: Home) -> None:
    try:
        os.unlink(checkpoint_path(home))
    except FileNotFoundError:
        pass
