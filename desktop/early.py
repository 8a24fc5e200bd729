"""The first moments of the desktop app: the tray icon (or window) on screen before the rest is imported.

Bare ``memtray`` lands in :func:`memtray.desktop.start.run` (through
:mod:`.launcher`). A person waits for the tray icon, not for litellm, dulwich, the
search index or the reminder scheduler; so this module imports Qt and the few
desktop modules the icon needs: :class:`EarlyStart` takes the data home's lock,
shows the icon and lets Qt run until the tray host has embedded and exposed it.
Only then does :func:`memtray.desktop.main.run` import the rest, open the App and build the desktop, adopting the icon (what was
clicked meanwhile is replayed, nothing is lost). Where there is no tray the
main window is the app's face: its frame and navigation are shown the same
way, and its chats page is built once the App is open.

"Ready" (what bench/desktop_startup.py measures, via $MEMTRAY_STARTUP_REPORT) is
defined by :class:`ReadyProbe`: the first Expose event that finds the window, or
the tray icon's own X window, exposed. bench/minimal_qt.py uses the same
definition for the floor it is compared with.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memtray.core.base.home import HomeLock

from .nav import Navigator
from .qt import (
    QApplication,
    QEvent,
    QEventLoop,
    QObject,
    QSystemTrayIcon,
    QTimer,
    QWidget,
)

if TYPE_CHECKING:  # for their types only: each is imported when it is shown
    from .mainwindow import MainWindow
    from .tray import Tray

REPORT_ENV = "MEMTRAY_STARTUP_REPORT"  # bench/desktop_startup.py reads start-up milestones from here
#: the longest the start waits for the tray host to expose the icon before going on
EXPOSE_WAIT_SECONDS = 3.0


def report(event: str, **extra: Any) -> None:
    """Write a start-up milestone (monotonic clock) to $MEMTRAY_STARTUP_REPORT, if set.

    "ready" also lists every module imported by then, so a test can check that
    nothing heavy was on the way to the icon.
    """
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    line = {"event": event, "t": time.monotonic(), "cpu": time.process_time(), "litellm": "litellm" in sys.modules,
            "apscheduler": "apscheduler" in sys.modules, **extra}
    if event == "ready":
        line["modules"] = sorted(sys.modules)
    data = (json.dumps(line) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)  # one write: a reader sees no half line (readers skip one without "\n")
    finally:
        os.close(fd)


def tray_window(icon: QSystemTrayIcon) -> QWidget | None:
    """The X11 window Qt made for ``icon`` (XEmbed tray), or None (a D-Bus tray, none yet)."""
    own = [w for w in QApplication.topLevelWidgets() if w.objectName() == "QSystemTrayIconSys"]
    return own[-1] if own else None


class ReadyProbe(QObject):
    """Calls ``ready(exposed)`` once: at the first Expose event that finds ``widget``'s
    window exposed (mapped on screen), or at once when it has no window of its own."""

    def __init__(self, widget: QWidget | None, ready: Callable[[bool], None]) -> None:
        super().__init__()
        self.done = False
        self._ready = ready
        window = widget.windowHandle() if widget is not None else None
        if window is None:
            self._fire(False)
        elif window.isExposed():
            self._fire(True)
        else:
            window.installEventFilter(self)

    def _fire(self, exposed: bool) -> None:
        self.done = True
        self._ready(exposed)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if not self.done and event.type() == QEvent.Type.Expose and getattr(obj, "isExposed", lambda: False)():
            obj.removeEventFilter(self)
            self._fire(True)
        return False


class EarlyStart:
    """The tray icon (or, with no tray, the main window's frame) shown before the desktop
    exists, holding the home's lock, and what was asked of it meanwhile."""

    def __init__(self, lock: HomeLock, *, tray: bool = True) -> None:
        from .theme import apply_palette, current

        self.lock = lock
        self.nav = Navigator()
        theme = current(scheme_hint=False)  # the desktop looks at the colour scheme too, later
        #: ("toggle",), ("quit",) or ("open", page, arg), in the order they came
        self.pending: list[tuple[str, ...]] = []
        self.tray: Tray | None = None
        self.window: MainWindow | None = None  # not attached yet
        if tray:
            from .tray import Tray

            self.tray = Tray(self.nav, dark_panel=theme.dark)
            self.tray.toggle.connect(self._toggle)
            self.tray.quit.connect(self._quit)
            self.nav.open.connect(self._open)
            self.tray.show()
            shown: QWidget | None = tray_window(self.tray.icon)
        else:
            from .mainwindow import MainWindow

            apply_palette(theme)  # the window icon comes with the desktop (an icon-theme lookup)
            self.window = MainWindow(None, quit_on_close=True, theme=theme)
            self.window.closing.connect(self._quit)
            self.window.present()
            shown = self.window
        self.probe = ReadyProbe(shown, lambda exposed: report("ready", tray=tray, exposed=exposed, early=True))

    def _toggle(self) -> None:
        self.pending.append(("toggle",))

    def _quit(self) -> None:
        self.pending.append(("quit",))

    def _open(self, page: str, arg: str) -> None:
        self.pending.append(("open", page, arg))

    def wait_until_shown(self, qapp: QApplication) -> None:
        """Let Qt run until the tray host (or the window system) has exposed, and so
        painted, the icon or window."""
        wake = QTimer()
        wake.start(50)  # WaitForMoreEvents returns at least this often
        deadline = time.monotonic() + EXPOSE_WAIT_SECONDS
        while not self.probe.done and time.monotonic() < deadline:
            qapp.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
        wake.stop()
        qapp.processEvents()  # the paint that follows the expose

    def handed_over(self) -> list[tuple[str, ...]]:
        """Stop collecting (the desktop connects its own slots now); what was asked so far."""
        if self.tray is not None:
            self.tray.toggle.disconnect(self._toggle)
            self.tray.quit.disconnect(self._quit)
            self.nav.open.disconnect(self._open)
        if self.window is not None:
            self.window.closing.disconnect(self._quit)
        pending, self.pending = self.pending, []
        return pending

    def release_lock(self) -> None:
        self.lock.release()

    def abandon(self) -> None:
        """Another process took the home after all: this icon or window is not the app's."""
        if self.tray is not None:
            self.tray.hide()
        if self.window is not None:
            self.window.closing.disconnect(self._quit)
            self.window.hide()
        self.lock.release()
