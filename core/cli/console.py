"""The console a command writes to, and the way a command reaches the instance.

A command prints through :func:`out` / :func:`err`, which go to the terminal
or, when the command was forwarded, back through the instance's socket. A
command that needs the App opens it with :func:`app_scope`: the serving
instance's App when it runs inside one, a fresh one otherwise; a home held by
another process raises :class:`Forward`, and :func:`forward` sends the argv
there, retrying what was never started and waiting (bounded) for a one-shot
command that holds the home. Every command module builds on this one; nothing
here knows a command.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from memtray.core.base import handover
from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home

if TYPE_CHECKING:
    from memtray.core.app import App


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


def dumps(obj: Any) -> str:
    """``obj`` as the memory and audit commands print it for ``--json`` (indented, non-ASCII kept)."""
    return json.dumps(obj, ensure_ascii=False, indent=2)


T = TypeVar("T")


def listing(rows: Sequence[T], as_json: bool, empty: str, line: Callable[[T], str]) -> int:
    """Print a command's rows: all of them as JSON (``--json``), else a line each, or
    ``empty`` when there are none. Returns the command's exit status (0)."""
    if as_json:
        out(dumps(rows))
        return 0
    if not rows:
        out(empty)
    for row in rows:
        out(line(row))
    return 0


class Forward(Exception):
    """The data home is locked by a running instance: forward the command to it.

    ``argv``, when given, replaces the command line to forward (``ask -`` sends the
    text it read from stdin, which the instance cannot read). ``model``: the command
    needs the model, so an instance that cannot take its provider environment declines
    it before it starts (see :mod:`memtray.core.base.cmdenv`).
    """

    def __init__(self, argv: list[str] | None = None, *, model: bool = False) -> None:
        super().__init__()
        self.argv = argv
        self.model = model


#: How long a command waits for another one-shot command to leave the data home.
WAIT_SECONDS = 600.0
WAITING = "waiting for another memtray command to finish"


@contextlib.contextmanager
def app_scope(home: Home, *, warm: bool = False) -> Iterator[Any]:
    """The App to run a command against: the serving instance's, or a fresh one.

    ``warm``: the command needs the model; when no instance runs, start the warm
    background instance (see :mod:`memtray.core.cli.warm`) and forward to it.
    """
    served = getattr(_local, "app", None)
    if served is not None:
        yield served
        return
    from memtray.core.app import App
    from memtray.core.base import logsetup
    from memtray.core.base.errors import AlreadyRunning

    if warm:
        from memtray.core.cli import warm as warm_mod

        if warm_mod.enabled(home) and warm_mod.ensure(home, note=err):
            raise Forward(model=True)
    logsetup.setup(home)
    try:
        app = App.open(home)
    except AlreadyRunning:
        raise Forward(model=warm) from None
    try:
        yield app
    finally:
        app.close()


def forward(home: Home, argv: list[str], run_here: Callable[[], int] | None = None, *, model: bool = False) -> int:
    """Run ``argv`` inside the instance that holds the data home, relaying its output.

    When nobody serves the home, ``run_here`` runs the command in this process
    (it raises :class:`Forward` again while the home is still held). A home held
    by a process that does not serve (another one-shot command) is waited for,
    naming it in one line, up to :data:`WAIT_SECONDS`; the command's input is kept
    throughout, and a request the instance never started is sent again, never one
    it did. ``model``: the command needs the model (see :class:`Forward`); an
    instance that declines it for its environment is asked to step aside and the
    command runs here, saying why (:func:`_declined`).
    """
    import random
    import time

    from memtray.core.base import ipc
    from memtray.core.base.errors import AlreadyRunning

    c = con()
    relay = _relay(c)
    deadline: float | None = None
    said: str | None = None
    delay = 0.02
    while True:
        try:
            return ipc.request(home, _message(argv, model, c.tty), relay)
        except ipc.NoInstance:
            pass
        except ipc.Declined as no:
            return _declined(home, no, run_here)
        if run_here is not None:
            try:
                return run_here()
            except Forward as again:
                if again.argv is not None:
                    argv = again.argv
                model = model or again.model
        elif handover.home_free(home):
            raise MemtrayError("the memtray instance that served this command has stopped",
                               hint="Run the command again.")
        now = time.monotonic()
        if deadline is None:
            deadline = now + WAIT_SECONDS
        elif now > deadline:
            from memtray.core.base.home import held_by

            raise AlreadyRunning(
                f"another memtray process{held_by(home)} has been using {home.root} for over "
                f"{WAIT_SECONDS:.0f}s without accepting commands",
                hint="It may be stuck: `memtray daemon status` says what holds the data home.",
            )
        if said is None:
            said = waiting_line(home)  # once, naming the holder
            if said is not None:
                c.error(said)
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 2, 0.5)


def waiting_line(home: Home, *, instances: bool = True) -> str | None:
    """What a command says while the home is held and nobody serves it: the holder, named
    from its record (None while nobody is named: a holder between taking the lock and
    writing its record, or one just gone; the caller looks again). ``instances=False``:
    nothing about an instance (one leaving for this command)."""
    from memtray.core.base.home import current_holder

    found = current_holder(home)
    if found is None or (found.serves and not instances):
        return None
    if found.serves:
        # an instance that is starting, or finishing what it started before it hands over
        return f"waiting for the running memtray ({found.describe()}) to accept commands…"
    if found.serves is None:  # an older version's record: only its pid
        return f"waiting for another memtray process ({found.describe()}) to finish…"
    return f"{WAITING} ({found.describe()})…"


def _declined(home: Home, no: MemtrayError, run_here: Callable[[], int] | None) -> int:
    """The instance would not run this command with its environment (it did not start it):
    the background instance is asked to step aside and the command runs on its own,
    saying why in one line; the desktop app or a daemon stays, and the command fails."""
    import time

    from memtray.core.cli import warm

    c = con()
    stays = MemtrayError(f"the running memtray will not run this command: {no}",
                         hint="Set the same variables where it runs, use `memtray config set`, or quit it "
                              "(`memtray quit`) and run the command again.")
    if run_here is None or not handover.step_aside(home):
        raise stays from None
    c.error(f"memtray: note: running this command on its own: {no}")
    warm.disable()  # the instance it would start would have another environment than this command
    deadline = time.monotonic() + WAIT_SECONDS
    said: str | None = None
    while True:
        try:
            return run_here()
        except Forward:
            pass  # it is still finishing what it started, or another process came first
        if time.monotonic() > deadline:
            raise stays
        if said is None:
            said = waiting_line(home, instances=False)  # the instance it asked to leave is not news
            if said is not None:
                c.error(said)
        time.sleep(0.05)  # retrying a lock its holder is about to release


def _message(argv: list[str], model: bool, tty: bool) -> dict[str, Any]:
    from memtray.core.base import cmdenv, ipc

    return {"argv": argv, "env": ipc.forward_env(), "tty": tty, "cmdenv": cmdenv.collect(uses_model=model)}


def forward_if_served(home: Home, argv: list[str], *, model: bool = False) -> int | None:
    """Send ``argv`` to the instance if one serves ``home``; None when none does, or it
    declined the command (nothing ran)."""
    from memtray.core.base import ipc

    c = con()
    try:
        return ipc.request(home, _message(argv, model, c.tty), _relay(c))
    except (ipc.NoInstance, ipc.NotPrivate, ipc.Declined):
        return None


def _relay(c: Console) -> Callable[[dict[str, Any]], None]:
    def relay(msg: dict[str, Any]) -> None:
        if "out" in msg:
            c.write(msg["out"])
        if "err" in msg:
            c.write_err(msg["err"])

    return relay


def served_app() -> App | None:
    """The App of the instance serving this command, or None when run directly."""
    return getattr(_local, "app", None)


@contextlib.contextmanager
def serving(app: App, console: Console) -> Iterator[None]:
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
