"""The console a command writes to, and the way a command reaches the instance.

A command prints through :func:`out` / :func:`err`, which go to the terminal
or, when the command was forwarded, back through the instance's socket. A
command that needs the App opens it with :func:`app_scope`: the serving
instance's App when it runs inside one, a fresh one otherwise; a home held by
another process raises :class:`Forward`, and :func:`forward` sends the argv
there. Every command module builds on this one; nothing here knows a command.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from memtray.core.base.home import Home


class Console:
    """Where a command's output goes: the terminal, or a forwarding socket."""

    def __init__(
        self,
        out: Callable[[str], None] | None = None,
        err: Callable[[str], None] | None = None,
        tty: bool | None = None,
    ) -> None:
        self._out = out or _writer("stdout")
        self._err = err or _writer("stderr")
        self._tty = tty

    @property
    def tty(self) -> bool:
        if self._tty is not None:
            return self._tty
        try:
            return sys.stdout.isatty()
        except ValueError:
            return False

    def write(self, text: str) -> None:
        self._out(text)

    def line(self, text: str = "") -> None:
        self._out(text + "\n")

    def error(self, text: str) -> None:
        self._err(text + "\n")

    def write_err(self, text: str) -> None:
        """Write ``text`` to the error stream as it is (progress bars redraw in place)."""
        self._err(text)


def _writer(name: str) -> Callable[[str], None]:
    def write(text: str) -> None:
        stream = getattr(sys, name)  # looked up each time: tests and pagers swap it
        stream.write(text)
        stream.flush()

    return write


_local = threading.local()


def con() -> Console:
    c: Console | None = getattr(_local, "console", None)
    if c is None:
        c = _local.console = Console()
    return c


def out(text: str = "") -> None:
    con().line(text)


def err(text: str) -> None:
    con().error(text)


class Forward(Exception):
    """The data home is locked by a running instance: forward the command to it."""


@contextlib.contextmanager
def app_scope(home: Home) -> Iterator[Any]:
    """The App to run a command against: the serving instance's, or a fresh one."""
    served = getattr(_local, "app", None)
    if served is not None:
        yield served
        return
    from memtray.core.app import App
    from memtray.core.base import logsetup
    from memtray.core.base.errors import AlreadyRunning

    logsetup.setup(home)
    try:
        app = App.open(home)
    except AlreadyRunning:
        raise Forward from None
    try:
        yield app
    finally:
        app.close()



def forward(home: Home, argv: list[str]) -> int:
    """Run ``argv`` inside the instance that holds the data home, relaying its output."""
    from memtray.core.base import ipc
    from memtray.core.base.errors import AlreadyRunning

    c = con()

    def relay(msg: dict[str, Any]) -> None:
        if "out" in msg:
            c.write(msg["out"])
        if "err" in msg:
            c.write_err(msg["err"])

    try:
        return ipc.request(home, {"argv": argv, "env": ipc.forward_env(), "tty": c.tty}, relay)
    except ipc.NoInstance:
        raise AlreadyRunning(f"another memtray process is using {home.root} and does not accept commands") from None




def served_app() -> Any | None:
    """The App of the instance serving this command, or None when run directly."""
    return getattr(_local, "app", None)


@contextlib.contextmanager
def serving(app: Any, console: Console) -> Iterator[None]:
    """Run the commands of this thread against ``app``, writing to ``console``."""
    _local.app = app
    _local.console = console
    try:
        yield
    finally:
        _local.app = None
        _local.console = None


@contextlib.contextmanager
def using(console: Console) -> Iterator[None]:
    """Write this thread's command output to ``console`` (tests, embedding)."""
    before = getattr(_local, "console", None)
    _local.console = console
    try:
        yield
    finally:
        _local.console = before
