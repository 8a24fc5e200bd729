"""The floor of a Qt app's start: the smallest PySide6 program that shows one window
(or, with ``--tray``, one tray icon), for bench/desktop_startup.py's ratios.

    .venv/bin/python bench/minimal_qt.py [--tray]

"Ready" is defined exactly as memtray defines it (memtray.desktop.main's
``ReadyProbe``, repeated here so that this program imports nothing of
memtray's): the first Expose event that finds the window (or the tray icon's
own X window) exposed, i.e. mapped on the screen. For a tray icon on X11 that
is after the system tray host embedded it (XEmbed); a tray without a window
of its own (a D-Bus StatusNotifier tray) is ready when ``show()`` returned.
At that moment it writes ``{"event": "ready", "t": <monotonic>}`` to
$MEMTRAY_STARTUP_REPORT, then runs until SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def main() -> int:
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtGui import QIcon, QPixmap
    from PySide6.QtWidgets import QApplication, QLabel, QMainWindow, QSystemTrayIcon

    tray = "--tray" in sys.argv

    def ready(exposed: bool) -> None:
        path = os.environ.get("MEMTRAY_STARTUP_REPORT")
        if path:
            line = json.dumps({"event": "ready", "t": time.monotonic(), "cpu": time.process_time(), "tray": tray,
                               "exposed": exposed}) + "\n"
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(fd, line.encode())  # as memtray writes it: one write
            os.close(fd)

    class ReadyProbe(QObject):  # the same definition as memtray.desktop.main.ReadyProbe
        def __init__(self, widget: QObject | None) -> None:
            super().__init__()
            self.done = False
            window = widget.windowHandle() if widget is not None else None  # type: ignore[attr-defined]
            if window is None:
                self.done = True
                ready(False)
            else:
                window.installEventFilter(self)

        def eventFilter(self, obj: QObject, event: QEvent) -> bool:
            if not self.done and event.type() == QEvent.Type.Expose and obj.isExposed():  # type: ignore[attr-defined]
                self.done = True
                ready(True)
            return False

    app = QApplication(sys.argv)
    # quit from the event loop (a SIGTERM that comes before exec() would be lost otherwise)
    signal.signal(signal.SIGTERM, lambda *_: QTimer.singleShot(0, app.quit))
    keep: list[object] = []
    if tray:
        pix = QPixmap(22, 22)
        pix.fill()
        icon = QSystemTrayIcon(QIcon(pix))
        icon.show()
        own = [w for w in app.topLevelWidgets() if w.objectName() == "QSystemTrayIconSys"]
        keep += [icon, ReadyProbe(own[0] if own else None)]
    else:
        win = QMainWindow()
        win.setCentralWidget(QLabel("hello"))
        win.resize(480, 320)
        win.show()
        keep += [win, ReadyProbe(win)]
    # wake now and then so the SIGTERM handler runs (Qt's loop does not return to Python)
    timer = QTimer()
    timer.timeout.connect(lambda: None)
    timer.start(100)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
