"""Screenshots of the first-run flow, the no-tray notice and one-click undo, under Xvfb.

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/first_run_screenshots.py

Saves into docs/screenshots: first-run-model.png (the onboarding on a fresh home:
which model runs now), first-run-hotkey.png (its second page: no tray, no global
hotkey), no-tray-notice.png (a later start without a tray), memory-browser-undo.png
(a bad consolidation selected, "Undo this change" on it) and undo-confirm.png (the
confirmation that lists what will change). Nothing leaves the machine: the
consolidation is answered by the scripted test server.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memtray.core.log.events import Message

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"

BEFORE = """# About the user

- Prefers answers with short code examples
- Works as a backend developer, mostly Python
- Lives in Lyon
- Has a cat named Mo

# Projects

- Building a log shipper called "tidewater"
"""
BAD = """# About the user

- Prefers answers with short code examples
- Works as a backend developer, mostly Python
- Lives in Lyon
- Owns a sailing yacht

# Projects

- Building a log shipper called "tidewater"
"""


def _env(tmp: Path, name: str) -> Any:
    from memtray.core.base.home import Home

    os.environ["MEMTRAY_HOME"] = str(tmp / name)
    return Home.resolve(os.environ["MEMTRAY_HOME"])


def main() -> int:
    if os.environ.get("QT_QPA_PLATFORM", "xcb") != "xcb" or not os.environ.get("DISPLAY"):
        print("run under Xvfb: xvfb-run -a -s '-screen 0 1440x900x24' python bench/first_run_screenshots.py",
              file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="mtshot"))
    os.environ["XDG_RUNTIME_DIR"] = str(tmp)
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
    os.environ["MEMTRAY_HOTKEY_BACKEND"] = "none"  # as on a desktop with no global-shortcut API
    os.environ["XDG_CURRENT_DESKTOP"] = "GNOME"  # the no-tray note names the GNOME extension
    os.environ.setdefault("QT_QPA_PLATFORMTHEME", "")  # not the GNOME platform theme (it wants D-Bus)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    from memtray.core.app import App
    from memtray.core.base import config
    from memtray.core.cli.main import serve
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication, QMessageBox, QTimer

    from tests.fixtures.llm_server import ScriptedLLMServer, reply, tool_call
    from tests.fixtures.receipting import receipted

    qapp = QApplication(["memtray"])
    qapp.setQuitOnLastWindowClosed(False)  # as the app does; two runs share this QApplication
    saved: list[str] = []

    def grab(widget: Any, name: str) -> None:
        QApplication.processEvents()
        widget.grab().save(str(OUT / f"{name}.png"))
        saved.append(name)

    def later(ms: int, fn: Callable[[], None]) -> None:
        QTimer.singleShot(ms, fn)

    def run(limit_ms: int) -> None:
        """The event loop until a step quits it, or ``limit_ms`` (never hang)."""
        guard = QTimer()
        guard.setSingleShot(True)
        guard.timeout.connect(qapp.quit)
        guard.start(limit_ms)
        qapp.exec()
        guard.stop()

    # --- 1, 2: the first start on a fresh home -----------------------------------------
    home = _env(tmp, "fresh")
    app = App.open(home)
    d = Desktop(app, qapp, serve, tray_available=False, show_dialogs=True, warm_up=False, deliver=False)
    d.start()

    def first() -> None:
        ob = d.onboarding
        ob.move(120, 60)
        grab(ob, "first-run-model")
        ob.later_btn.click()
        later(400, lambda: (grab(ob, "first-run-hotkey"), ob.done_btn.click(), later(300, qapp.quit)))

    later(800, first)
    run(30_000)
    d.shutdown()  # closing the window (no tray) asks to quit: let that pass before the next run
    QApplication.processEvents()
    app.close()

    # --- 3, 4, 5: a later start without a tray, and a bad consolidation ---------------------
    with ScriptedLLMServer() as server:
        home = _env(tmp, "used")
        config.set_value(home, "model", "openai/gpt-4o-mini")
        config.set_value(home, "api_base", server.base_url)
        config.set_value(home, "onboarded", True)
        os.environ["OPENAI_API_KEY"] = "sk-screenshot"
        app = App.open(home)
        app.worker.call(lambda: app.memory.write(BEFORE, reason="agent", source="model", model="openai/gpt-4o-mini"))
        app.store.append(Message(role="user", content="My friend Ada owns a sailing yacht; we went out on it today."), session="quick")
        app.store.append(Message(role="assistant", content="Sounds lovely!"), session="quick")
        server.script(receipted(tool_call("save_memory", {
            "history_entry": "User went sailing.", "memory_update": BAD,
            "removed_facts": [{"fact": "Has a cat named Mo", "reason": "not mentioned lately"}],
        })))
        app.run(app.consolidation.archive("quick"))
        server.script(reply("ok"))
        d = Desktop(app, qapp, serve, tray_available=False, show_dialogs=True, warm_up=False, deliver=False)
        d.start()
        w = d.main_window()
        w.resize(1280, 720)
        w.move(0, 0)
        if d.hotkey_dialog is not None:
            d.hotkey_dialog.close()

        def notice() -> None:
            if d.hotkey_dialog is not None:
                d.hotkey_dialog.close()
            grab(w, "no-tray-notice")
            if d.no_tray_banner is not None:
                d.no_tray_banner.deleteLater()
            w.memory.shown.connect(lambda _r: later(400, browser))  # connected before it can fire
            w.open("memory")

        def browser() -> None:
            try:
                w.memory.shown.disconnect()
            except (RuntimeError, TypeError):
                pass
            grab(w, "memory-browser-undo")

            def ask(parent: Any, title: str, text: str) -> bool:
                box = QMessageBox(QMessageBox.Icon.Question, title, text,
                                  QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, parent)
                box.setDefaultButton(QMessageBox.StandardButton.Cancel)
                later(500, lambda: (grab(box, "undo-confirm"), box.reject()))
                box.exec()
                later(200, qapp.quit)
                return False

            w.memory.confirm = ask
            w.memory.undo_btn.click()

        later(1200, notice)
        run(120_000)
        d.shutdown()
        app.close()
    for name in saved:
        print(OUT / f"{name}.png")
    return 0 if len(saved) == 5 else 1


if __name__ == "__main__":
    sys.exit(main())
