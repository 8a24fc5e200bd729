"""Take the quick chat's check-in screenshot under a real X server (Xvfb).

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/checkin_screenshot.py [--dark]

Builds an isolated data home whose memory has facts with a time (issue 32): a marathon
whose check date has come, a trip that is upcoming, a flat search also due; then saves
docs/screenshots/quick-chat-checkin.png (the quick chat asking "Still training for the
Berlin marathon?" with its one-click answers) and quick-chat-checkin-answered.png (after
"Yes": the next question, the answer a revision).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from _common import grab_window, screenshot_home  # noqa: E402  (the scripts' shared set-up)

OUT = ROOT / "docs" / "screenshots"

# check dates long past: due whatever day the script runs
MEM = """## Sport
- Training for the Berlin marathon (check after 2001-01-01)

## Plans
- Trip to Kyoto (from 2199-07-01 until 2199-07-31)
- Looking for a flat in Graz (check after 2001-02-01)

## About
- Lives in Graz
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dark", action="store_true")
    args = ap.parse_args()
    if screenshot_home("checkin_screenshot.py") is None:
        return 2
    from memtray.core.app import App
    from memtray.core.base import config
    from memtray.core.base.home import Home
    from memtray.core.cli.main import serve
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication, QGuiApplication, Qt, QTimer

    home = Home.resolve(os.environ["MEMTRAY_HOME"])
    suffix = "-dark" if args.dark else ""
    config.set_value(home, "model", "openai/gpt-4o-mini")
    config.set_value(home, "api_base", "http://127.0.0.1:9/v1")
    qapp = QApplication(["memtray"])
    if args.dark:
        QGuiApplication.styleHints().setColorScheme(Qt.ColorScheme.Dark)
    app = App.open(home)
    app.worker.call(lambda: app.memory.write(MEM, reason="user-edit", source="user"))
    d = Desktop(app, qapp, serve, tray_available=False, show_dialogs=False, warm_up=False)
    d.start()
    shots: list[str] = []

    def grab(widget: object, name: str) -> None:
        grab_window(widget, OUT / f"{name}{suffix}.png")
        shots.append(name)

    def step1() -> None:
        if d.window is not None:
            d.window.hide()
        d.show_popup()
        assert d.popup is not None
        d.popup.resize(600, 420)
        d.popup.move(40, 40)
        QTimer.singleShot(1500, lambda: (grab(d.popup, "quick-chat-checkin"), step2()))

    def step2() -> None:
        assert d.popup is not None
        d.popup.checkin.yes_btn.click()
        QTimer.singleShot(1500, lambda: (grab(d.popup, "quick-chat-checkin-answered"), qapp.quit()))

    QTimer.singleShot(300, step1)
    QTimer.singleShot(60_000, qapp.quit)  # never hang
    qapp.exec()
    d.shutdown()
    app.close()
    for name in shots:
        print(OUT / f"{name}{suffix}.png")
    return 0 if len(shots) == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
