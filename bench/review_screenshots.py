"""Take the review screenshots of the memory browser under a real X server (Xvfb).

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/review_screenshots.py [--dark]

Builds an isolated data home whose review queue holds what issue 27 is about: a fact the
guard held although the user said it (its message shown, the quote highlighted), one with no
source, and a merge conflict between two named devices ("Laptop", "Desktop"); then saves
docs/screenshots/memory-review.png (the queue, the main window at 1280×720) and
memory-review-kept.png (after "Keep out" with a reason: the Undo bar and the kept-out list).
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

- Lives in Lyon, in a flat near the river with a view of the old town and the bridges
- Works as a backend developer, mostly Python
"""
SAID = "Sam here. By the way, I play the cello in a string quartet on Thursdays, so no meetings then please."
OTHER = "Lives in Paris, in the 11th arrondissement, a short walk from the canal and the Sunday market"
PEER = "d0123456789ab"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dark", action="store_true")
    args = ap.parse_args()
    if screenshot_home("review_screenshots.py") is None:
        return 2
    from memtray.core.log.events import Message
    from memtray.core.memory.items import review_item
    from memtray.core.sync.names import name_device
    from memtray.desktop.qt import QTimer

    shot = ScreenshotSession(OUT, dark=args.dark)
    qapp, app = shot.qapp, shot.app
    mem = app.memory

    def seed() -> None:
        mem.write(MEM, reason="agent", source="model", model="openai/gpt-4o-mini")
        seq = app.store.append_many([(Message(role="user", content=SAID), "quick", None),
                                     (Message(role="assistant", content="Noted, no Thursday meetings."), "quick", None)])[0].seq
        held = [review_item("unsupported", "Is a cellist", "About the user", None,
                            "the model's words; its quote is in your message", messages=[seq], quote="I play the cello"),
                review_item("unsupported", "Keeps bees in the garden", "About the user", None,
                            "no consolidated message says this")]
        fact = mem.ledger().facts[0]
        conflict = {"id": "c0ffee0001", "kind": "merge-conflict", "text": OTHER, "section": "About the user",
                    "fact_id": fact.id, "conflict": "reworded",
                    "reason": f"reworded on {mem.device} and on {PEER}; {mem.device}'s words kept, these are {PEER}'s",
                    "words": {mem.device: fact.text, PEER: OTHER}}
        mem.write(MEM, reason="consolidation", source="model", model="openai/gpt-4o-mini", flagged=[*held, conflict])
        name_device(app.store, mem.device, "Laptop")
        name_device(app.store, PEER, "Desktop")

    app.worker.call(seed)
    d = shot.desktop()
    grab = shot.grab

    def step1() -> None:
        w = d.main_window()
        w.resize(1280, 720)
        w.move(0, 0)
        w.open("memory")
        w.memory.show_review()
        QTimer.singleShot(1500, lambda: (grab(w, "memory-review"), step2()))

    def step2() -> None:
        w = d.window
        tab = w.memory.review_tab
        card = tab.card("Keeps bees")
        card.why.setText("I gave the hives away last year")  # type: ignore[attr-defined]
        card.buttons["keep-out"].click()
        QTimer.singleShot(1500, lambda: (grab(w, "memory-review-kept"), qapp.quit()))

    return shot.run(d, step1, expected=2)


if __name__ == "__main__":
    sys.exit(main())
