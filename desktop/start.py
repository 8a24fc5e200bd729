"""Bare ``memtray``: the tray icon (or the window's frame) first, then the rest.

:mod:`.early` shows the icon with as little imported as can be; :mod:`.main` builds
the desktop around the open App. This module runs the two in order, so neither
imports the other's way back (:mod:`.main` uses :mod:`.early`'s icon; nothing in
:mod:`.early` knows :mod:`.main`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memtray.core.base.home import Home, HomeLock

from .early import EarlyStart
from .qt import QApplication, QGuiApplication, QSystemTrayIcon

if TYPE_CHECKING:  # the type only: the icon shows before the socket's module is needed
    from .instance import Serve


def _lock(home: Home) -> HomeLock | None:
    from memtray.core.base.errors import AlreadyRunning, MemtrayError

    for attempt in range(5):
        try:
            return HomeLock(home).acquire()
        except AlreadyRunning:
            # held: a running app, a daemon, a command, or only for an instant by
            # something that looks whether it is held (`toggle` does): look again briefly
            if attempt < 4:
                time.sleep(0.02)
        except MemtrayError:  # not lockable: main.run says why
            return None
    return None


def run(home: Home, argv: list[str], serve: Serve) -> int:
    """Start the desktop app: the tray icon (or the window's frame) first, then the rest.

    :mod:`.main` (and with it the core's services) is imported only once that is
    shown, or when there is nothing to gain: in-process (tests), or another process
    holds the home (take over from a daemon, or show the running app).
    """
    if QApplication.instance() is not None:
        from .main import run as run_desktop

        return run_desktop(home, argv, serve)
    from .display import DisplayUnavailable, check
    from .display import release as release_probe

    try:
        check()  # before Qt, which would abort without a display
    except DisplayUnavailable as exc:
        import logging

        from memtray.core.base import logsetup

        logsetup.setup(home)
        # INFO: the file log only; stderr gets the one error line
        logging.getLogger("memtray.desktop.main").info("not started: %s", exc)
        raise
    lock = _lock(home)
    if lock is None:
        release_probe()
        from .main import run as run_desktop

        return run_desktop(home, argv, serve, checked=True)
    QGuiApplication.setDesktopFileName("memtray")
    QApplication.setApplicationName("memtray")
    qapp = QApplication(["memtray", *argv])
    release_probe()  # the display check's X connection: Qt has its own now
    qapp.setQuitOnLastWindowClosed(False)
    early = EarlyStart(lock, tray=QSystemTrayIcon.isSystemTrayAvailable())
    early.wait_until_shown(qapp)
    from .main import run as run_desktop  # now the rest: the core, the services, the views

    return run_desktop(home, argv, serve, checked=True, early=early)
