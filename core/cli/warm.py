"""The warm instance: a background ``memtray daemon --warm`` started on demand.

A command that needs the model (``ask``, ``chat``, ``consolidate``...) and finds
no instance starts one (detached, private to the user, its output appended to
``logs/instance.log``) and forwards to it, so only the first call of a burst
pays for importing litellm. The warm instance delivers no reminders (nobody
would see them; the desktop or ``memtray daemon`` delivers them, late if need
be) and runs no idle maintenance. It exits after ``warm_instance_idle_minutes``
without a request, on ``memtray quit`` / ``memtray daemon stop``, and when the
desktop app (or a plain ``memtray daemon``) starts: it hands the home over
(:func:`memtray.core.base.handover.take_over`) after finishing what it started.

Off with ``warm_instance = false``, ``memtray --no-daemon ...`` or
``MEMTRAY_NO_WARM=1`` (the test suite sets it). Invisible when it works; when it
does not start, one line says so and the command runs on its own.

It is started without the variables a command carries (``MEMTRAY_MODEL``,
``MEMTRAY_API_BASE``, ``*_API_KEY``: :mod:`memtray.core.base.cmdenv`): each
forwarded command brings its own, so one command's model or key never answers
another's. It is not started for a command that would fail before doing anything
(no model configured, none offline), and it leaves as soon as it is idle when every
command it served failed, so a failed first command leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from memtray.core.base import cmdenv, ipc
from memtray.core.base.errors import MemtrayError
from memtray.core.base.fsutil import FILE_MODE
from memtray.core.base.handover import home_free
from memtray.core.base.home import Home

ENV_OFF = "MEMTRAY_NO_WARM"
#: How long a command waits for the instance it started to listen.
SPAWN_TIMEOUT = 30.0
LOG_NAME = "instance.log"
MAX_LOG_BYTES = 1_000_000

_off: list[bool] = []  # set by `--no-daemon` for this process


def disable() -> None:
    """``--no-daemon``: never start the warm instance from this process."""
    _off[:] = [True]


def enabled(home: Home) -> bool:
    if os.name == "nt" or os.environ.get(ENV_OFF) or _off:
        return False
    from memtray.core.base import config

    try:
        return bool(config.load(home).warm_instance)
    except MemtrayError:
        return False  # a broken config is reported by the command itself


def log_path(home: Home) -> Any:
    return home.logs / LOG_NAME


def ensure(home: Home, *, note: Callable[[str], None] | None = None) -> bool:
    """Make sure an instance serves ``home``; True when one does now."""
    if ipc.is_running(home):
        return True
    if not home.root.is_dir():
        return False  # first run: let the command create the home as usual
    import fcntl

    home.state.mkdir(parents=True, exist_ok=True)
    fd = os.open(home.state / "warm.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # one command starts it; the others wait and use it
        if ipc.is_running(home):
            return True
        if not home_free(home):
            return False  # another command holds the home: the caller waits for it
        if not _has_model(home):
            return False  # the command fails before it does anything: no instance for that
        proc = spawn(home)
        deadline = time.monotonic() + SPAWN_TIMEOUT
        while time.monotonic() < deadline:
            if ipc.is_running(home):
                return True
            if proc.poll() is not None:
                break
            time.sleep(0.02)  # polling the process we started, not synchronising with a guess
        else:
            with contextlib.suppress(OSError):
                proc.kill()
        if note is not None and home_free(home):
            note(f"memtray: note: the background instance did not start (see {log_path(home)}); "
                 "running this command on its own")
        return False
    finally:
        os.close(fd)


def _has_model(home: Home) -> bool:
    """Whether a command that needs the model has one (configured, or the offline one),
    as this command sees the settings (its MEMTRAY_MODEL included)."""
    from memtray.core.base import config
    from memtray.core.llm.client import LLMClient

    try:
        return bool(LLMClient(config.load(home)).model)
    except MemtrayError:
        return False  # a broken config: the command says what is wrong


def command(home: Home) -> list[str]:
    appimage = os.environ.get("APPIMAGE")
    head = [appimage] if appimage else [sys.executable, "-m", "memtray.core.cli"]
    return [*head, "--home", str(home.root), "daemon", "--warm"]


def spawn(home: Home) -> subprocess.Popen[bytes]:
    """Start the warm instance detached from this terminal, its output in the instance log."""
    home.logs.mkdir(parents=True, exist_ok=True)
    path = log_path(home)
    with contextlib.suppress(OSError):
        if path.stat().st_size > MAX_LOG_BYTES:
            path.unlink()
    out = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    # the instance never starts another one, and has no model or key of its own: each
    # command brings its own (cmdenv)
    env = dict(cmdenv.without_carried(os.environ), **{ENV_OFF: "1"})
    try:
        return subprocess.Popen(
            command(home), stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
            close_fds=True, start_new_session=True, cwd=str(home.root),
        )
    finally:
        os.close(out)
