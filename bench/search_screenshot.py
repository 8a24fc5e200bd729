"""Take the screenshots of the main window's search under a real X server (Xvfb).

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/search_screenshot.py

Builds an isolated data home with a few conversations (one imported, with its own
title and dates, and long enough that the message found is pages back) and a
memory revision, types a question into the search field and saves
docs/screenshots/search.png (the results: conversation, who, when, the matched
words) and search-opened.png (the first result opened in its conversation).
"""

from __future__ import annotations

import os
import sys

from _common import ROOT, grab_window, screenshot_home

OUT = ROOT / "docs" / "screenshots"
QUERY = "when did we talk about the lighthouse in Brittany?"


def main() -> int:
    if screenshot_home("search_screenshot.py", "mtsearch") is None:
        return 2
    from memtray.core.app import App
    from memtray.core.base import config
    from memtray.core.base.home import Home
    from memtray.core.cli.main import serve
    from memtray.core.log.events import ImportItem, Message
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication, QTimer

    home = Home.resolve(os.environ["MEMTRAY_HOME"])
    config.set_value(home, "model", "openai/gpt-4o-mini")
    config.set_value(home, "embedding_model", "none")
    qapp = QApplication(["memtray"])
    app = App.open(home)
    say = app.store.append
    trip = "chatgpt:c-trip"
    turns = [
        ("user", "Planning a week in Brittany in June. My grandfather kept the lighthouse at Ouessant."),
        ("assistant", "A lighthouse keeper in the family! Ouessant's Créac'h lighthouse has a museum."),
        ("user", "Could we take the ferry from Brest with bikes?"),
        ("assistant", "Yes: the Penn Ar Bed ferry takes bikes; book ahead in summer."),
    ]
    for i, (role, text) in enumerate(turns):
        say(Message(role=role, content=text, sent_at=f"2025-05-14T18:{10 + i:02d}:00.000Z"), session=trip)
    for i in range(40):
        say(Message(role="user" if i % 2 == 0 else "assistant",
                    content=f"Day {i // 2 + 1}: cycling, crêpes and the coast path."
                    if i % 2 else f"What should we do on day {i // 2 + 1}?",
                    sent_at=f"2025-05-14T19:{i:02d}:00.000Z"), session=trip)
    say(ImportItem(import_id="I", source="chatgpt", key="c-trip", kind="conversation", digest="d",
                   session=trip, messages=44, title="Brittany trip"), session=trip)
    say(Message(role="user", content="Remind me what the lighthouse museum's opening hours were?"),
        session="quick")
    say(Message(role="assistant", content="I don't have them; Créac'h is usually open afternoons in season."),
        session="quick")
    mem = app.memory
    app.worker.call(lambda: mem.remember("Grandfather was the lighthouse keeper at Ouessant (Brittany)",
                                         "Family", model="openai/gpt-4o-mini", source_seq=None))
    d = Desktop(app, qapp, serve, tray_available=False, show_dialogs=False, warm_up=False)
    d.start()
    shots: list[str] = []

    def grab(widget: object, name: str) -> None:
        grab_window(widget, OUT / f"{name}.png")
        shots.append(name)

    def step1() -> None:
        w = d.main_window()
        w.resize(1180, 720)
        w.move(20, 20)
        w.open("chat", "quick")
        w.focus_search()
        w.search_field.setText(QUERY)
        page = w._search_page()
        page.shown.connect(lambda: QTimer.singleShot(500, lambda: (grab(w, "search"), step2())))

    def step2() -> None:
        w = d.window
        page = w._search_page()
        page.shown.disconnect()
        page.focus_results()
        page.results.itemActivated.emit(page.results.item(0))
        QTimer.singleShot(1500, lambda: (grab(w, "search-opened"), qapp.quit()))

    QTimer.singleShot(500, step1)
    QTimer.singleShot(60_000, qapp.quit)  # never hang
    qapp.exec()
    d.shutdown()
    app.close()
    for name in shots:
        print(OUT / f"{name}.png")
    return 0 if len(shots) == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
