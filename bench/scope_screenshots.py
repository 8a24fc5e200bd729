"""Take the memory scope screenshots under a real X server (Xvfb).

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/scope_screenshots.py [--dark]

Builds an isolated data home with a global memory and two scopes ("work", "family"), the
quick chat's conversation in the work scope; saves docs/screenshots/quick-chat-scope.png
(the quick chat in the work scope: the switch beside the model's) and memory-scopes.png (the memory browser's
Facts tab, each scope under its own heading and file).
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

MEM = """# About the user

## General
- Lives in Lyon, near the river
- Prefers short answers

## Work
- Reviews code at Acme on Fridays
- The team deploys on Tuesdays only
- Writes the backend in Rust

## Family
- Daughter Ada plays the cello
- Cello lessons are on Thursdays
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dark", action="store_true")
    args = ap.parse_args()
    if screenshot_home("scope_screenshots.py") is None:
        return 2
    from memtray.core.log.events import Message
    from memtray.core.memory import scopes
    from memtray.desktop.qt import QTimer

    shot = ScreenshotSession(OUT, dark=args.dark)
    qapp, app = shot.qapp, shot.app
    mem = app.memory

    def seed() -> None:
        mem.write(MEM, reason="user-edit", source="user")
        for words, scope in (("Acme", "work"), ("deploys", "work"), ("Rust", "work"), ("Ada", "family"),
                             ("lessons", "family")):
            fid = next(f.id for f in mem.ledger().facts if words in f.text)
            mem.move_fact(fid, scope, f"about {scope}")
        scopes.choose(app.store, "quick", "work")
        app.store.append_many([
            (Message(role="user", content="When do we deploy, and who reviews on Friday?"), "quick", None),
            (Message(role="assistant", content="The team deploys on **Tuesdays only**, and you review code at "
                     "Acme on Fridays."), "quick", None)])

    app.worker.call(seed)
    d = shot.desktop()
    grab = shot.grab

    def step1() -> None:
        d.show_popup()
        assert d.popup is not None
        d.popup.resize(640, 520)
        d.popup.move(40, 40)
        QTimer.singleShot(1200, step2)

    def step2() -> None:
        assert d.popup is not None
        QTimer.singleShot(300, lambda: (grab(d.popup, "quick-chat-scope"), step3()))

    def step3() -> None:
        assert d.popup is not None
        d.popup.hide()
        w = d.main_window()
        w.resize(1280, 720)
        w.move(0, 0)
        w.open("memory")
        QTimer.singleShot(1200, lambda: step4(w))

    def step4(w: object) -> None:
        browser = d.window.memory
        browser.tabs.setCurrentWidget(browser.facts_tab)
        QTimer.singleShot(1500, lambda: (grab(w, "memory-scopes"), qapp.quit()))

    return shot.run(d, step1, expected=2)


if __name__ == "__main__":
    sys.exit(main())
