"""``memtray toggle|show|quit``: talk to the running desktop app.

These commands only forward over IPC, so they are the console's, not the
desktop's: they live here, and the desktop package never imports the CLI. With no
instance running, ``toggle`` and ``show`` start one (``memtray`` detached) and wait
for its socket, so binding ``memtray toggle`` to a key in the desktop's own
shortcut settings works as a hotkey everywhere. The parser adds them when a front
end is installed (:func:`add_commands`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from memtray.core.base.errors import EnvironmentProblem, MemtrayError
from memtray.core.base.home import Home

#: How long ``toggle``/``show`` wait for a freshly started app to listen.
START_TIMEOUT = 30.0

DESKTOP_COMMANDS = ("toggle", "show", "quit")


class NotStarted(EnvironmentProblem):
    """The app was started but never began listening."""

    hint = "Run `memtray` in a terminal to see why it does not start."


def add_commands(subparsers: Any) -> None:
    """Add ``toggle``, ``show`` and ``quit`` to the ``memtray`` subcommand parser."""
    t = subparsers.add_parser("toggle", help="show or hide the quick chat of the running app (starts it if needed)")
    t.set_defaults(fn=cmd_toggle)
    s = subparsers.add_parser("show", help="show the quick chat (starts the app if needed)")
    s.add_argument("--window", action="store_true", help="open the main window instead")
    s.set_defaults(fn=cmd_show)
    q = subparsers.add_parser("quit", help="quit the running app")
    q.set_defaults(fn=cmd_quit)


def cmd_toggle(args: argparse.Namespace, home: Home) -> int:
    return forward(home, ["toggle"], start=True)


def cmd_show(args: argparse.Namespace, home: Home) -> int:
    return forward(home, ["show", "--window"] if args.window else ["show"], start=True)


def cmd_quit(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.base import ipc

    _refuse_inside_instance()
    try:
        return ipc.request(home, _message(["quit"]), _relay, timeout=30.0)
    except ipc.NoInstance:
        if not wait_while_starting(home):
            _print_err("memtray is not running")
            return 0
    return ipc.request(home, _message(["quit"]), _relay, timeout=30.0)


def wait_while_starting(home: Home, timeout: float = START_TIMEOUT) -> bool:
    """An app that is starting holds the home but listens only once its tray icon (or
    window) is up: wait for it to listen. False when nobody holds the home, or it never
    listened within ``timeout``."""
    from memtray.core.base import handover, ipc

    if not home.lockfile.exists():
        return False
    deadline = time.monotonic() + timeout
    while not handover.home_free(home) and time.monotonic() < deadline:
        if ipc.is_running(home):
            return True
        time.sleep(0.05)
    return False


class Child(Protocol):
    """What :func:`forward` needs of the started app: whether it ended (``Popen.poll``)."""

    def poll(self) -> int | None: ...


def forward(
    home: Home,
    argv: list[str],
    *,
    start: bool,
    spawn: Callable[[Home], Child | None] | None = None,
    timeout: float = START_TIMEOUT,
) -> int:
    """Send ``argv`` to the running app; start one first when ``start`` and none runs.

    While waiting for the new app to listen, its exit is noticed at once: the error
    it printed (e.g. no display) is reported instead of waiting for ``timeout``.
    """
    from memtray.core.base import ipc

    _refuse_inside_instance()
    try:
        return ipc.request(home, _message(argv), _relay, timeout=30.0)
    except ipc.NoInstance:
        if wait_while_starting(home):  # started a moment ago: it answers once it listens
            return ipc.request(home, _message(argv), _relay, timeout=30.0)
        if not start:
            raise
    child = (spawn or spawn_app)(home)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ipc.is_running(home):
            # a fresh instance shows itself when asked to show; toggle means "show" here
            return ipc.request(home, _message(["show", *argv[1:]]), _relay, timeout=30.0)
        code = child.poll() if child is not None else None
        if code is not None and not ipc.is_running(home):
            raise died(home, code)
        time.sleep(0.1)
    raise NotStarted(f"started memtray, but it did not answer at {ipc.socket_path(home)} within {timeout:.0f}s")


def start_log(home: Home) -> Path:
    """Where the started app's stderr goes (read back if it dies at once)."""
    return home.logs / "desktop-start.err"


def died(home: Home, code: int) -> NotStarted:
    """The error for an app that exited before it listened, with the reason it gave."""
    try:
        lines = start_log(home).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    errors = [i for i, line in enumerate(lines) if line.startswith("memtray: error:")]
    status = f"signal {-code}" if code < 0 else f"status {code}"
    if not errors:
        return NotStarted(f"started memtray, but it exited at once ({status})")
    i = errors[-1]
    exc = NotStarted(f"started memtray, but it exited at once ({status}): "
                     + lines[i].removeprefix("memtray: error:").strip())
    if i + 1 < len(lines) and lines[i + 1].startswith("  "):
        exc.hint = lines[i + 1].strip()
    return exc


def spawn_app(home: Home) -> subprocess.Popen[bytes]:
    """Start ``memtray`` detached from this terminal (AppImage-aware)."""
    env = dict(os.environ)
    env.pop("MEMTRAY_NO_DESKTOP", None)
    appimage = env.get("APPIMAGE")
    if appimage:
        # the AppImage's mount disappears with this process: start the image itself
        cmd = [appimage, "--home", str(home.root)]
    else:
        cmd = [sys.executable, "-m", "memtray.core.cli", "--home", str(home.root)]
    err: int | None = None
    try:
        start_log(home).parent.mkdir(parents=True, exist_ok=True)
        err = os.open(start_log(home), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError:
        err = None  # the reason of an early exit is then unknown, not the start
    kwargs: dict[str, Any] = {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.DEVNULL,
        "stderr": err if err is not None else subprocess.DEVNULL,
        "env": env,
        "close_fds": True,
    }
    if os.name == "nt":
        kwargs["creationflags"] = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
            subprocess, "CREATE_NEW_PROCESS_GROUP", 0
        )
    else:
        kwargs["start_new_session"] = True
    try:
        return subprocess.Popen(cmd, **kwargs)
    except OSError as exc:
        raise NotStarted(f"could not start memtray ({cmd[0]}): {exc.strerror or exc}") from exc
    finally:
        if err is not None:
            os.close(err)


def _message(argv: list[str]) -> dict[str, Any]:
    from memtray.core.base import ipc

    return {"argv": argv, "env": ipc.forward_env(), "tty": False}


def _relay(msg: dict[str, Any]) -> None:
    from memtray.core.cli.console import con

    if "out" in msg:
        con().write(msg["out"])
    if "err" in msg:
        _print_err(msg["err"].rstrip("\n"))


def _print_err(text: str) -> None:
    from memtray.core.cli.console import con

    con().error(text)


def _refuse_inside_instance() -> None:
    # Forwarded into a running instance that did not handle it itself (a headless
    # `memtray daemon` has no window): forwarding again would talk to ourselves.
    from memtray.core.cli.console import served_app

    if served_app() is not None:
        raise MemtrayError(
            "this memtray instance has no window (it runs headless)",
            hint="Quit the daemon and start the desktop app with `memtray`.",
        )
