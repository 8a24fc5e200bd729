"""The worker: one asyncio loop in one thread that owns all slow, stateful work.

LLM calls, log writes, keyring and git run here, in the desktop, the daemon and
the CLI alike. Callers on other threads submit coroutines and get a
:class:`concurrent.futures.Future`; the GUI never blocks on one (it is told
through a callback instead). Cancelling the future cancels the task, which
closes an in-flight stream.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

T = TypeVar("T")
P = ParamSpec("P")
S = TypeVar("S", bound="HasWriter")


class WrongThread(RuntimeError):
    """A mutation ran off the one writer thread: a bug in memtray, never the user's doing."""


class WriterThread(Protocol):
    """The single writer, as the store and the git writer see it."""

    @property
    def in_worker(self) -> bool: ...

    def check(self, what: str) -> None: ...

    def call(self, fn: Callable[[], T]) -> T: ...


class HasWriter(Protocol):
    @property
    def writer(self) -> WriterThread | None: ...


def on_writer(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """Run a mutating method on the object's single writer thread (its ``writer``),
    waiting for it; called there already (or with no writer bound), it just runs."""

    @functools.wraps(method)
    def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        w = self.writer
        if w is None or w.in_worker:
            return method(self, *args, **kwargs)
        return w.call(lambda: method(self, *args, **kwargs))

    return run


class Worker:
    def __init__(self, name: str = "memtray-worker") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()
        # drain what is left so nothing is destroyed while pending
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    @property
    def in_worker(self) -> bool:
        return threading.current_thread() is self._thread

    @property
    def thread_name(self) -> str:
        return self._thread.name

    def check(self, what: str) -> None:
        """Raise :class:`WrongThread` unless called on the worker (the single writer)."""
        if not self.in_worker:
            raise WrongThread(f"{what} must run on the worker thread, not {threading.current_thread().name}")

    def call_here(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the worker and wait, or just run it when already there."""
        return fn() if self.in_worker else self.call(fn)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the worker and wait for it (never call from the worker itself)."""
        if self.in_worker:
            raise RuntimeError("Worker.run called from the worker thread; await the coroutine instead")
        fut = self.submit(coro)
        try:
            return fut.result(timeout)
        except KeyboardInterrupt:
            fut.cancel()
            raise

    def call(self, fn: Callable[[], T]) -> T:
        """Run a plain function on the worker and wait for its result."""

        async def wrap() -> T:
            return fn()

        return self.run(wrap())

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)


async def maybe_await(value: Awaitable[T] | T) -> T:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value  # type: ignore[no-any-return]
    return value  # type: ignore[return-value]
