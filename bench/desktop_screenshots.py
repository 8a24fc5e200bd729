"""Take the README screenshots of the desktop app under a real X server (Xvfb).

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/desktop_screenshots.py [--dark]

Builds an isolated data home with a short conversation (answered by the
scripted test server, so nothing leaves the machine) and a few memory
revisions, then saves docs/screenshots/quick-chat.png, memory-browser.png,
settings.png and settings-sync.png (the Sync card after a sync with a bare
repository; with --dark: *-dark.png).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

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
    args = ap.parse_args()
    if os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb" or not os.environ.get("DISPLAY"):
        print("run under Xvfb: xvfb-run -a -s '-screen 0 1440x900x24' python bench/desktop_screenshots.py",
              file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="mtshot"))
    os.environ["MEMTRAY_HOME"] = str(tmp / "home")
    os.environ["XDG_RUNTIME_DIR"] = str(tmp)
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
    os.environ["OPENAI_API_KEY"] = "sk-screenshot"
    os.environ["MEMTRAY_HOTKEY_BACKEND"] = "none"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    if args.dark:
        os.environ["QT_QPA_PLATFORMTHEME"] = ""
    from memtray.core.app import App
    from memtray.core.base import config
    from memtray.core.base.home import Home
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication, QGuiApplication, Qt, QTimer

    from tests.fixtures.llm_server import ScriptedLLMServer, reply, tool_call

    home = Home.resolve(os.environ["MEMTRAY_HOME"])
    suffix = "-dark" if args.dark else ""
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
        server.script(tool_call("save_memory", {
            "history_entry": "User moved to Paris; evaluating ClickHouse.", "memory_update": MEM2,
            "removed_facts": [{"fact": "Lives in Lyon", "reason": "moved to Paris"}],
        }))
        app.run(app.consolidation.archive("quick"))
        d = Desktop(app, qapp, tray_available=False, show_dialogs=False, warm_up=False)
        d.start()
        d.window.hide()
        popup = d.popup
        pane = popup.pane
        shots: list[tuple[str, object]] = []

        def grab(widget: object, name: str) -> None:
            QApplication.processEvents()
            screen = QGuiApplication.primaryScreen()
            pix = screen.grabWindow(0, widget.x(), widget.y(), widget.width(), widget.height())  # type: ignore[attr-defined]
            pix.save(str(OUT / f"{name}{suffix}.png"))
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
                QTimer.singleShot(400, lambda: (grab(d.window, "settings-sync"), qapp.quit()))

            QTimer.singleShot(200, synced)

        QTimer.singleShot(300, step1)
        QTimer.singleShot(60_000, qapp.quit)  # never hang
        qapp.exec()
        d.shutdown()
        app.close()
    for name, _w in shots:
        print(OUT / f"{name}{suffix}.png")
    return 0 if len(shots) == 4 else 1


if __name__ == "__main__":
    sys.exit(main())
