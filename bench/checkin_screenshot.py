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
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from _common import ScreenshotSession, screenshot_home  # noqa: E402  (the scripts' shared set-up)

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
    from memtray.desktop.qt import QTimer

    shot = ScreenshotSession(OUT, dark=args.dark)
    qapp, app = shot.qapp, shot.app
    app.worker.call(lambda: app.memory.write(MEM, reason="user-edit", source="user"))
    d = shot.desktop()
    grab = shot.grab

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

    return shot.run(d, step1, expected=2)


if __name__ == "__main__":
    sys.exit(main())
