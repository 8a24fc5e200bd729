"""The floor of a Qt app's start: the smallest PySide6 program that shows one window
(or, with ``--tray``, one tray icon), for bench/desktop_startup.py's ratios.

    .venv/bin/python bench/minimal_qt.py [--tray]

Like memtray, it writes ``{"event": "ready", "t": <monotonic>}`` to
$MEMTRAY_STARTUP_REPORT at the same point: right after the window's (or the
tray icon's) ``show()`` returned, then waits for a line on stdin or SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def main() -> int:
    from PySide6.QtGui import QIcon, QPixmap
    from PySide6.QtWidgets import QApplication, QLabel, QMainWindow, QSystemTrayIcon

    app = QApplication(sys.argv)
    signal.signal(signal.SIGTERM, lambda *_: app.quit())
    keep: list[object] = []
    if "--tray" in sys.argv:
        pix = QPixmap(22, 22)
        pix.fill()
        icon = QSystemTrayIcon(QIcon(pix))
        icon.show()
        keep.append(icon)
    else:
        win = QMainWindow()
        win.setCentralWidget(QLabel("hello"))
        win.resize(480, 320)
        win.show()
        keep.append(win)
    path = os.environ.get("MEMTRAY_STARTUP_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"event": "ready", "t": time.monotonic(), "tray": "--tray" in sys.argv}) + "\n")
    # wake now and then so the SIGTERM handler runs (Qt's loop does not return to Python)
    from PySide6.QtCore import QTimer

    timer = QTimer()
    timer.timeout.connect(lambda: None)
    timer.start(100)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
