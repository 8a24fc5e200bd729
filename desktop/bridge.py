"""The GUI's only road to the worker: submit coroutines, get results by queued signal.

core's :class:`~memtray.core.base.worker.Worker` owns litellm, keyring, dulwich and
log writes on one asyncio thread. Widgets never call into it directly and never
wait on it: they :meth:`Bridge.submit` a coroutine (or :meth:`Bridge.call` a
plain function) and connect to the returned :class:`Task`'s signals, which are
emitted on the worker thread and delivered on the GUI thread (Qt queues a
signal whose receiver lives in another thread). Stop is :meth:`Task.cancel`:
cancelling the future cancels the asyncio task, and core/llm.py closes the
stream.

It is also how the log reaches the views. :meth:`Bridge.follow` subscribes to
the store: after every append (on the appending thread, the worker) the bridge
emits :attr:`Bridge.changed` with a :class:`Change` (which seqs, event types and
sessions), which Qt queues to the GUI thread. A view never reads the store
itself: a :class:`Follower` asks the worker for a snapshot when a change it
cares about arrives (one query in flight at a time; changes that arrive
meanwhile are folded into one more query) and hands the result to the view.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memtray.core.log.changes import Changes
from memtray.core.log.events import Record

from .qt import QObject, Qt, Signal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    """What one append added to the log (a summary: views query the worker for the rest):
    which records, which sessions, and what it changed in domain terms (``what.memory``, ...),
    so no view reads an event type's string."""

    first_seq: int
    last_seq: int
    what: Changes
    sessions: frozenset[str]

    @classmethod
    def of(cls, records: Sequence[Record]) -> Change:
        return cls(records[0].seq, records[-1].seq, Changes.of(r.type for r in records),
                   frozenset(r.session for r in records if r.session))


class Followable(Protocol):
    """What :meth:`Bridge.follow` needs of a store."""

    def subscribe(self, fn: Callable[[list[Record], Any], None]) -> None: ...


class Subscribable(Protocol):
    """What :meth:`Bridge.follow_settings` needs of the live settings."""

    def subscribe(self, fn: Callable[[Any, Any], None]) -> None: ...


class Worker(Protocol):
    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]: ...


class Task(QObject):
    """One piece of work on the worker, seen from the GUI thread."""

    #: a streamed text delta (emitted on the worker, delivered on the GUI thread)
    delta = Signal(str)
    #: the coroutine's result
    finished = Signal(object)
    #: the exception it raised (never CancelledError: see ``cancelled``)
    failed = Signal(object)
    cancelled = Signal()
    #: after any of the three above
    done = Signal()

    def __init__(self, bridge: Bridge, name: str) -> None:
        super().__init__(bridge)
        self.name = name
        self._bridge = bridge
        self.future: concurrent.futures.Future[Any] | None = None
        self.is_done = False

    def emit_delta(self, text: str) -> None:
        """Called by the coroutine on the worker thread for each streamed piece."""
        if not self._bridge.closing:
            self.delta.emit(text)

    def cancel(self) -> bool:
        fut = self.future
        return fut.cancel() if fut is not None else False

    def _complete(self, fut: concurrent.futures.Future[Any]) -> None:
        # runs on the worker thread (or wherever the future completed)
        if self._bridge.closing:
            return
        if fut.cancelled():
            self.cancelled.emit()
        else:
            exc = fut.exception()
            if exc is not None:
                self.failed.emit(exc)
            else:
                self.finished.emit(fut.result())
        self.done.emit()

    def _on_done(self) -> None:
        self.is_done = True
        self._bridge._forget(self)


class Bridge(QObject):
    """Submits work to ``worker`` and keeps each :class:`Task` alive until it is done."""

    #: a :class:`Change`: emitted on the thread that appended, delivered queued on the GUI thread
    changed = Signal(object)
    #: the live settings changed (the new ``Config``), through any door: Settings, `config set`,
    #: a hand edit of config.toml; emitted on the thread that applied it, delivered queued
    config_changed = Signal(object)

    def __init__(self, worker: Worker, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = worker
        self.closing = False
        self._tasks: set[Task] = set()
        self._followed: list[Followable] = []
        self._followed_settings: list[Subscribable] = []

    # --- the log, pushed to the views ---------------------------------------------------

    def follow(self, store: Followable) -> None:
        """Emit :attr:`changed` after every append to ``store`` (once per store)."""
        if any(s is store for s in self._followed):
            return
        self._followed.append(store)
        store.subscribe(self._appended)

    def follow_settings(self, settings: Subscribable) -> None:
        """Emit :attr:`config_changed` after every change of the live settings."""
        if any(s is settings for s in self._followed_settings):
            return
        self._followed_settings.append(settings)
        settings.subscribe(self._settings_changed)

    def _settings_changed(self, _old: Any, new: Any) -> None:
        if self.closing:
            return
        try:
            self.config_changed.emit(new)
        except RuntimeError:  # the Qt object is gone (the app is quitting)
            self.closing = True

    def on_config_change(self, slot: Callable[[Any], None]) -> None:
        """Call ``slot(config)`` on the GUI thread after each settings change, always queued."""
        self.config_changed.connect(slot, Qt.ConnectionType.QueuedConnection)

    def _appended(self, records: list[Record], _state: Any) -> None:
        # runs on the appending thread, after the events are durable: never raise into the writer
        if self.closing or not records:
            return
        try:
            self.changed.emit(Change.of(records))
        except RuntimeError:  # the Qt object is gone (the app is quitting)
            self.closing = True
        except Exception:
            log.exception("could not pass a log change to the views")

    def on_change(self, slot: Callable[[Change], None]) -> None:
        """Call ``slot(change)`` on the GUI thread after each append, always queued (never
        inside the append, even when the append ran on the GUI thread)."""
        self.changed.connect(slot, Qt.ConnectionType.QueuedConnection)

    def submit(
        self,
        make: Callable[[Task], Coroutine[Any, Any, Any]] | Coroutine[Any, Any, Any],
        *,
        name: str = "task",
        on_result: Callable[[Any], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> Task:
        """Run a coroutine on the worker.

        ``make`` is a coroutine, or a function ``task -> coroutine`` for work that
        streams (it can pass ``task.emit_delta`` as the delta callback).
        """
        task = Task(self, name)
        if on_result is not None:
            task.finished.connect(on_result)
        if on_error is not None:
            task.failed.connect(on_error)
        task.done.connect(task._on_done)
        self._tasks.add(task)
        coro = make(task) if callable(make) else make
        if self.closing:
            coro.close()
            return task
        fut = self.worker.submit(coro)
        task.future = fut
        fut.add_done_callback(task._complete)
        return task

    def call(
        self,
        fn: Callable[..., Any],
        *args: Any,
        name: str = "call",
        on_result: Callable[[Any], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> Task:
        """Run a plain (blocking) function on the worker: keyring, git, file reads."""

        async def run() -> Any:
            return fn(*args)

        return self.submit(run(), name=name, on_result=on_result, on_error=on_error)

    @property
    def busy(self) -> list[str]:
        return sorted(t.name for t in self._tasks if not t.is_done)

    def _forget(self, task: Task) -> None:
        self._tasks.discard(task)
        task.deleteLater()

    def close(self) -> None:
        """Stop delivering results (the app is quitting); pending work is cancelled."""
        self.closing = True
        for task in list(self._tasks):
            task.cancel()


class Follower(QObject):
    """Keeps one view current with the log: on a change it ``wants``, runs the query on
    the worker and passes the answer to ``show`` on the GUI thread.

    ``query`` is called on the GUI thread and returns the function the worker runs (so
    it captures the view's arguments, e.g. its session, at the time of asking). One
    query is in flight at a time; a change (or :meth:`request`) meanwhile asks once
    more after it, so a burst of appends costs at most two queries and the last
    answer shown is never older than the last change.
    """

    #: after ``show`` handled an answer (tests wait on it)
    shown = Signal()

    def __init__(self, bridge: Bridge, query: Callable[[], Callable[[], Any]], show: Callable[[Any], None], *,
                 wants: Callable[[Change], bool], name: str, on_error: Callable[[BaseException], None] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.query = query
        self.show = show
        self.wants = wants
        self.name = name
        self.on_error = on_error
        self.in_flight = False
        self._again = False
        bridge.on_change(self._changed)

    def _changed(self, change: Change) -> None:
        if self.wants(change):
            self.request()

    def request(self) -> None:
        """Query now (or right after the query in flight)."""
        if self.in_flight:
            self._again = True
            return
        self.in_flight = True
        self._again = False
        self.bridge.call(self.query(), name=self.name, on_result=self._answer, on_error=self._failed)

    def _answer(self, result: Any) -> None:
        self.in_flight = False
        if self._again:
            self.request()  # a newer state exists: show that one instead
            return
        self.show(result)
        self.shown.emit()

    def _failed(self, exc: BaseException) -> None:
        self.in_flight = False
        log.warning("%s: could not read the current state: %s", self.name, exc)
        if self.on_error is not None:
            self.on_error(exc)
        if self._again:
            self.request()
