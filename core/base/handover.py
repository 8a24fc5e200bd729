"""Handing the data home over between memtray processes: whether it is free, asking the
instance that holds it to step aside, and taking it over.

One process holds the home (:class:`~memtray.core.base.home.HomeLock`). The desktop
app and ``memtray daemon`` take it over from the background instance a command
started (which finishes what it started, then leaves) or wait for a one-shot command;
a command waits while an app is starting. These are questions about the home and
its lock, asked by the CLI and the desktop alike, so they live here and not in either
front end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from memtray.core.base import ipc
from memtray.core.base.errors import AlreadyRunning, MemtrayError
from memtray.core.base.home import Home, HomeLock

T = TypeVar("T")

#: How long the app taking over waits for the instance to finish and leave.
HANDOVER_TIMEOUT = 300.0


def home_free(home: Home) -> bool:
    """Whether nobody holds ``home`` now (its lock could be taken, and was let go at once)."""
    try:
        HomeLock(home).acquire().release()
    except MemtrayError:
        return False
    return True


def step_aside(home: Home) -> bool:
    """Ask the background instance to leave the home (it finishes what it started first).
    False when the holder is one that stays (the desktop app, ``memtray daemon``); True
    when it agreed, or nobody answers (it is leaving already, or a one-shot command
    holds the home, which will leave by itself)."""
    try:
        code = ipc.request(home, {"argv": ["__handover__"], "env": {}, "tty": False}, lambda _m: None,
                           timeout=10.0, busy_wait=5.0)
    except ipc.NoInstance:
        return True
    except (ipc.Interrupted, ipc.NotPrivate, ipc.Declined):
        return False
    return code == 0


def take_over(home: Home, open_app: Callable[[], T], *, timeout: float = HANDOVER_TIMEOUT) -> T | None:
    """Open the app in place of a warm instance or a one-shot command holding ``home``.

    The warm instance is asked to leave (it finishes what it started first); a
    one-shot command is waited for. ``open_app`` raising :class:`AlreadyRunning`
    means "not yet". None when the holder is an instance that stays (the desktop,
    ``memtray daemon``: the caller asks it to show itself instead), or after
    ``timeout``. The request is repeated while waiting, so a warm instance that a
    command started meanwhile leaves too.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            return open_app()
        except AlreadyRunning:
            pass
        if not step_aside(home) or time.monotonic() > deadline:
            return None
        time.sleep(0.05)  # retrying a lock its holder is about to release
