"""Start-up: the tray icon shows before anything heavy is imported, and nothing asked of the
app meanwhile is lost (a message sent at once, a click on the early icon)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import ipc

from tests.fixtures.llm_server import reply

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]

#: what must wait until the tray icon is on screen: the model client, the scheduler,
#: git, the search index, the keyring, MCP, and the core's services themselves
HEAVY = ("litellm", "openai", "httpx", "apscheduler", "dulwich", "sqlite3", "keyring", "mcp",
         "memtray.core.app", "memtray.core.agent", "memtray.core.memory", "memtray.core.search",
         "memtray.core.reminders", "memtray.core.llm", "memtray.core.log.store", "memtray.desktop.main")

#: offscreen Qt has no system tray: this start pretends it has one, so it takes the tray path
START_WITH_TRAY = """
import sys
from PySide6.QtWidgets import QSystemTrayIcon

class Tray(QSystemTrayIcon):
    @staticmethod
    def isSystemTrayAvailable():
        return True

import memtray.desktop.start as start
start.QSystemTrayIcon = Tray
from memtray.core.cli.main import main
sys.exit(main([]))
"""


def _events(report: Path) -> list[dict[str, Any]]:
    """The complete lines written so far (one being written has no newline yet)."""
    text = report.read_text() if report.exists() else ""
    return [json.loads(x) for x in text.split("\n")[:-1] if x.strip()]


def _heavy(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_nothing_heavy_is_imported_before_the_tray_icon_shows_and_a_message_sent_at_once_is_answered(
    configured_home: Any, llm_server: Any, runtime_dir: Path, tmp_path: Path
) -> None:
    llm_server.script(reply("Hello from the tray."))
    report = tmp_path / "report.jsonl"
    env = dict(os.environ, MEMTRAY_HOME=str(configured_home.root), MEMTRAY_STARTUP_REPORT=str(report),
               QT_QPA_PLATFORM="offscreen", MEMTRAY_NO_WARM="1")
    env.pop("MEMTRAY_NO_DESKTOP", None)
    proc = subprocess.Popen([sys.executable, "-c", START_WITH_TRAY], env=env, cwd=str(ROOT),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not _events(report) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        seen = _events(report)
        assert seen, proc.stderr.read() if proc.poll() is not None else "no ready event"
        ready = seen[0]
        assert ready["event"] == "ready" and ready["tray"] is True and ready["early"] is True
        assert "PySide6.QtWidgets" in ready["modules"]  # the list is the real one
        assert _heavy(ready["modules"]) == []
        # at once, while the rest is still being set up: the command waits for the app to
        # listen and is answered by it (the home is held, so nothing else could answer)
        ask = subprocess.run([sys.executable, "-m", "memtray.core.cli", "ask", "hello"], env=env, cwd=str(ROOT),
                             capture_output=True, text=True, timeout=300)
        assert ask.returncode == 0, ask.stderr
        assert "Hello from the tray." in ask.stdout
        assert ipc.request(configured_home, {"argv": ["quit"]}, lambda _m: None, timeout=30) == 0
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_without_a_tray_the_window_frame_shows_first_and_its_chats_follow(
    configured_home: Any, runtime_dir: Path, tmp_path: Path
) -> None:
    report = tmp_path / "report.jsonl"
    env = dict(os.environ, MEMTRAY_HOME=str(configured_home.root), MEMTRAY_STARTUP_REPORT=str(report),
               QT_QPA_PLATFORM="offscreen")  # offscreen: no system tray
    env.pop("MEMTRAY_NO_DESKTOP", None)
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli"], env=env, cwd=str(ROOT),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not _events(report) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        # `memtray quit` at once: the app holds the home but does not listen yet; quit
        # waits for it instead of saying "memtray is not running"
        quit_ = subprocess.run([sys.executable, "-m", "memtray.core.cli", "quit"], env=env, cwd=str(ROOT),
                               capture_output=True, text=True, timeout=300)
        assert quit_.returncode == 0, quit_.stderr
        assert "not running" not in quit_.stderr
        assert proc.wait(timeout=60) == 0
        seen = _events(report)
        assert [e["event"] for e in seen][:2] == ["ready", "window_filled"], seen
        ready = seen[0]
        assert ready["tray"] is False and ready["early"] is True and ready["exposed"] is True
        assert "PySide6.QtWidgets" in ready["modules"]
        assert _heavy(ready["modules"]) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_a_click_on_the_early_tray_icon_is_replayed_once_the_desktop_exists(
    qtbot: Any, configured_home: Any, runtime_dir: Path
) -> None:
    from memtray.core.app import App
    from memtray.core.base.home import HomeLock
    from memtray.core.cli.main import serve
    from memtray.desktop.early import EarlyStart
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication

    early = EarlyStart(HomeLock(configured_home).acquire())
    early.tray.toggle.emit()  # clicked before the App is even open
    early.nav.open.emit("settings", "")
    early.release_lock()
    app = App.open(configured_home)
    d = Desktop(app, QApplication.instance(), serve, early=early, show_dialogs=False, warm_up=False)
    try:
        d.start()
        assert d.tray is early.tray
        qtbot.waitUntil(lambda: d.window is not None and d.window.isVisible() and d.window.settings_built,
                        timeout=5000)
        # both clicks were replayed, in order: the popup opened, then gave way to the window
        # asked for after it (on top of everything, it would hide the window)
        assert d.popup is not None and not d.popup.isVisible()
        early.tray.toggle.emit()  # now the desktop's own slot: the popup shows, then hides again
        qtbot.waitUntil(d.popup.isVisible, timeout=5000)
        early.tray.toggle.emit()
        qtbot.waitUntil(lambda: not d.popup.isVisible(), timeout=5000)
    finally:
        d.shutdown()
        d.app.close()
        QApplication.processEvents()


def test_the_early_window_keeps_the_page_picked_before_the_app_was_open(
    qtbot: Any, configured_home: Any, runtime_dir: Path
) -> None:
    from memtray.core.app import App
    from memtray.core.base.home import HomeLock
    from memtray.core.cli.main import serve
    from memtray.desktop.early import EarlyStart
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication

    early = EarlyStart(HomeLock(configured_home).acquire(), tray=False)
    window = early.window
    assert window.isVisible() and not window.attached
    from memtray.desktop.mainwindow import PAGES

    window.nav.setCurrentRow(PAGES.index("settings"))  # Settings, clicked while the App is still opening
    early.release_lock()
    app = App.open(configured_home)
    d = Desktop(app, QApplication.instance(), serve, early=early, show_dialogs=False, warm_up=False)
    try:
        d.start()
        assert d.tray is None and d.window is window and window.attached
        assert window.settings_built and window.stack.currentWidget() is window.settings
        window.nav.setCurrentRow(0)
        assert window.stack.currentWidget() is window.chats
    finally:
        d.shutdown()
        d.app.close()
        QApplication.processEvents()


def test_every_name_of_the_qt_door_resolves() -> None:
    from memtray.desktop import qt

    for name in qt.__all__:
        assert getattr(qt, name) is not None, name
    with pytest.raises(AttributeError):
        qt.QNotAQtName  # noqa: B018 - the attribute access is the test
