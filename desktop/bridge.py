"""The GUI's only road to the worker: submit coroutines, get results by queued signal.

core's :class:`~memtray.core.base.worker.Worker` owns litellm, keyring, dulwich and
log writes on one asyncio thread. Widgets never call into it directly and never
wait on it: they :meth:`Bridge.submit` a coroutine (or :meth:`Bridge.call` a
plain function) and connect to the returned :class:`Task`'s signals, which are
emitted on the worker thread and delivered on the GUI thread (Qt queues a
signal whose receiver lives in another thread). Stop is :meth:`Task.cancel`:
cancelling the future cancels the asyncio task, and core/llm.py closes the
stream.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from .qt import QObject, Signal

log = logging.getLogger(__name__)


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

    def __init__(self, worker: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = worker
        self.closing = False
        self._tasks: set[Task] = set()

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
