"""Take the README screenshots of the desktop app under a real X server (Xvfb).

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/desktop_screenshots.py [--dark]
    xvfb-run -a -s "-screen 0 2880x1800x24" .venv/bin/python bench/desktop_screenshots.py --scale 2

Builds an isolated data home with a short conversation (answered by the
scripted test server, so nothing leaves the machine) and a few memory
revisions, then saves docs/screenshots/quick-chat.png, memory-browser.png,
settings.png, settings-sync.png (the Sync card after a sync with a bare
repository), chats.png (titles, dates, previews, a failed turn, a pinned one, "Recently
deleted" open), reminders.png, memory-facts.png (editing one fact) and settings-unsaved.png
(with --dark: *-dark.png). With ``--scale 2`` (QT_SCALE_FACTOR, as on a 200 % screen) only
the Chats list, the Reminders page and memory editing are saved, as *@2x.png.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from _common import grab_window, memory_keyring, screenshot_home
from memtray.core.log.events import Message

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"

REPLY = """Sure — here is a small function that keeps the last *n* lines of a file without reading it all:

```python
from collections import deque

def tail(path: str, n: int = 10) -> list[str]:
    # a deque with maxlen drops the oldest line for us
    with open(path, encoding="utf-8") as fh:
        return list(deque(fh, maxlen=n))
```

It streams the file once, so memory stays at **n lines** whatever the file size."""

MEM1 = """# About the user

- Prefers answers with short code examples
- Works as a backend developer, mostly Python
- Lives in Lyon

# Projects

- Building a log shipper called "tidewater"
"""
MEM2 = """# About the user

- Prefers answers with short code examples
- Works as a backend developer, mostly Python and Go
- Moved to Paris in October

# Projects

- Building a log shipper called "tidewater"
- Evaluating ClickHouse for tidewater's storage
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dark", action="store_true")
    ap.add_argument("--scale", type=int, default=1, choices=(1, 2), help="2: as on a 200 %% screen")
    args = ap.parse_args()
    if args.scale != 1:
        os.environ["QT_SCALE_FACTOR"] = str(args.scale)
        os.environ["QT_ENABLE_HIGHDPI_SCALING"] = "1"
    tmp = screenshot_home("desktop_screenshots.py")
    if tmp is None:
        return 2
    import keyring

    keyring.set_keyring(memory_keyring())  # type: ignore[arg-type]  # the Sync card's new remote makes keys
    if args.dark:
        os.environ["QT_QPA_PLATFORMTHEME"] = ""
    from memtray.core.app import App
    from memtray.core.base import config
    from memtray.core.base.home import Home
    from memtray.core.cli.main import serve
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication, QGuiApplication, Qt, QTimer

    from tests.fixtures.llm_server import ScriptedLLMServer, reply, tool_call
    from tests.fixtures.receipting import receipted

    home = Home.resolve(os.environ["MEMTRAY_HOME"])
    suffix = ("-dark" if args.dark else "") + (f"@{args.scale}x" if args.scale != 1 else "")
    scaled_only = {"chats", "reminders", "memory-facts"} if args.scale != 1 else None
    with ScriptedLLMServer() as server:
        config.set_value(home, "model", "openai/gpt-4o-mini")
        config.set_value(home, "api_base", server.base_url)
        qapp = QApplication(["memtray"])
        if args.dark:
            QGuiApplication.styleHints().setColorScheme(Qt.ColorScheme.Dark)
        app = App.open(home)
        mem = app.memory
        app.worker.call(lambda: mem.write(MEM1, reason="agent", source="model", model="openai/gpt-4o-mini"))
        # a consolidation that rewrites, adds and drops a fact
        app.store.append(Message(role="user", content="I moved to Paris last month, and I write Go now too."),
                         session="quick")
        app.store.append(Message(role="assistant", content="Noted — Paris and Go."), session="quick")
        server.script(receipted(tool_call("save_memory", {
            "history_entry": "User moved to Paris; evaluating ClickHouse.", "memory_update": MEM2,
            "removed_facts": [{"fact": "Lives in Lyon", "reason": "moved to Paris"}],
        })))
        app.run(app.consolidation.archive("quick"))
        d = Desktop(app, qapp, serve, tray_available=False, show_dialogs=False, warm_up=False)
        d.start()
        d.window.hide()
        popup = d.popup
        pane = popup.pane
        shots: list[tuple[str, object]] = []

        def grab(widget: object, name: str) -> None:
            if scaled_only is not None and name not in scaled_only:
                return
            grab_window(widget, OUT / f"{name}{suffix}.png")
            shots.append((name, widget))

        def step1() -> None:
            server.script(reply(REPLY, chunk_size=6))
            d.show_popup()
            popup.move(40, 40)
            popup.resize(620, 720)
            pane.send("How do I read just the last lines of a big log file in Python?")
            pane.turn_done.connect(lambda *_: QTimer.singleShot(400, step2))

        def step2() -> None:
            pane.input.setPlainText("And in Go?")
            QTimer.singleShot(300, lambda: (grab(popup, "quick-chat"), step3()))

        def step3() -> None:
            popup.hide()
            w = d.main_window()
            w.resize(1180, 760)
            w.move(20, 20)
            w.open("memory")
            w.memory.shown.connect(lambda _r: QTimer.singleShot(400, lambda: (grab(w, "memory-browser"), step4())))

        def step4() -> None:
            w = d.window
            try:
                w.memory.shown.disconnect()
            except (RuntimeError, TypeError):
                pass
            w.open("settings")
            QTimer.singleShot(800, lambda: (grab(w, "settings"), step5()))

        def step5() -> None:
            # the Sync card, synced with a bare repository as on a USB disk
            import subprocess

            page = d.window.settings
            card = page.sync
            remote = tmp / "usb" / "memtray.git"
            remote.parent.mkdir()
            subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
            card.remote.setText(str(remote))
            card.enabled.setChecked(True)
            page.saved.connect(lambda _cfg: card.sync_now())
            page.save()

            def synced() -> None:
                if not card.status.text().startswith(("Synced", "Sync failed")):
                    QTimer.singleShot(200, synced)
                    return
                frame = card.parentWidget()
                page.cards_scroll.verticalScrollBar().setValue(frame.y() - 16)
                QTimer.singleShot(400, lambda: (grab(d.window, "settings-sync"), step6()))

            QTimer.singleShot(200, synced)

        def step6() -> None:
            # the Chats list: titles (first line, imported, renamed), dates, previews, a failed turn
            from memtray.core.log import chats, transcript
            from memtray.core.log.events import ImportItem, TurnFailed

            def say(session: str, role: str, text: str) -> None:
                app.store.append(Message(role=role, content=text), session=session)

            say("chat-old", "user", "Shopping list for Saturday: bread, tomatoes, coffee")
            say("chat-20261201-091500", "user", "Can you compare ClickHouse and DuckDB for tidewater?")
            say("chat-20261201-091500", "assistant", "For tidewater's write-heavy logs, ClickHouse…")
            say("chatgpt:c1", "user", "hola, ¿cómo se dice 'log shipper'?")
            app.store.append(ImportItem(import_id="I", source="chatgpt", key="c1", kind="conversation", digest="d",
                                        session="chatgpt:c1", messages=1, title="Spanish lessons"),
                             session="chatgpt:c1")
            say("chat-readme", "user", "Draft the tidewater README intro")
            say("chat-readme", "assistant", "tidewater ships your logs where they belong, in order.")
            app.worker.call(lambda: transcript.rename(app.store, "chat-readme", "tidewater README"))
            app.worker.call(lambda: chats.pin(app.store, "chat-readme"))
            app.worker.call(lambda: chats.delete(app.store, "chat-old"))
            say("chat-incident", "user", "Summarise yesterday's incident notes")
            app.store.append(TurnFailed(error="openai/gpt-4o-mini: cannot connect to the provider",
                                        kind="LLMConnectionError"), session="chat-incident")
            w = d.window
            w.resize(1280, 720)
            w.open("chat", "chat-incident")
            w.chats.deleted_btn.setChecked(True)
            QTimer.singleShot(900, lambda: (grab(w, "chats"), step7()))

        def step7() -> None:
            svc = app.reminders
            app.worker.call(lambda: svc.schedule("Stand up and stretch", every="weekday at 11"))
            app.worker.call(lambda: svc.schedule("Call the ClickHouse sales rep", at="tomorrow at 10:30"))
            app.worker.call(lambda: svc.schedule("Take the bread out of the oven", at="in 25 minutes"))
            app.worker.call(lambda: svc.schedule("Review the week's notes", every="friday at 17:00", mode="agent"))
            w = d.window
            w.open("reminders")
            page = w.reminders
            page.new_text.setText("Water the plants")
            page.new_when.setText("every monday and thursday at 8")
            QTimer.singleShot(900, lambda: (grab(w, "reminders"), step8()))

        def step8() -> None:
            w = d.window
            w.open("memory")
            browser = w.memory
            tab = browser.facts_tab
            browser.tabs.setCurrentWidget(tab)

            def edit() -> None:
                if not tab.facts:
                    QTimer.singleShot(200, edit)
                    return
                fact = next(f for f in tab.facts if "Paris" in f["text"])
                tab.edit(fact)
                dlg = tab.dialog
                dlg.text.setText("Moved to Paris in October; works near Bastille")
                dlg.reason.setText("more precise")
                dlg.move(w.x() + 700, w.y() + 470)  # below the facts it edits (no window manager places it)
                QTimer.singleShot(500, lambda: (grab(w, "memory-facts"), dlg.reject(), step9()))

            QTimer.singleShot(500, edit)

        def step9() -> None:
            w = d.window
            w.open("settings")
            page = w.settings
            page.cards_scroll.verticalScrollBar().setValue(0)
            page.memory_window.setValue(60)
            QTimer.singleShot(500, lambda: (grab(w, "settings-unsaved"), qapp.quit()))

        QTimer.singleShot(300, step1)
        QTimer.singleShot(300_000, qapp.quit)  # never hang (a loaded machine takes minutes)
        qapp.exec()
        d.shutdown()
        app.close()
    for name, _w in shots:
        print(OUT / f"{name}{suffix}.png")
    return 0 if len(shots) == (8 if scaled_only is None else len(scaled_only)) else 1


if __name__ == "__main__":
    sys.exit(main())
