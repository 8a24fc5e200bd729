"""The tray's sync line follows every sync attempt; "Sync now" syncs off the GUI thread."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memtray.desktop.sync_status import SyncStatusMenu, describe

from tests.integration.sync_support import bare, open_app, say


def test_the_line_says_when_it_synced_failed_and_how_many_conflicts_wait() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert describe({}, configured=False, now=now)[0] == "Sync: not set up"
    ok = {"last_success": "2026-12-01T11:55:00.000Z", "remote": "/r.git", "conflicts": [{"id": "F1"}, {"id": "F2"}]}
    assert describe(ok, configured=True, now=now)[0] == "Synced 5 min ago · 2 conflicts to review"
    bad = {"last_error": "the remote rejected the push: quota exceeded", "last_attempt": "2026-12-01T09:00:00.000Z",
           "last_success": None}
    text, tip = describe(bad, configured=True, now=now)
    assert text.startswith("Sync failed 3 h ago: the remote rejected the push") and "never" in tip


def test_sync_now_updates_the_tray_line(qtbot: Any, tmp_path: Path) -> None:
    from memtray.desktop.qt import QAction, QMenu

    remote = bare(tmp_path / "remote.git")
    app = open_app(tmp_path / "a", sync_remote=str(remote))
    try:
        assert app.sync is not None
        menu = QMenu()
        quit_ = QAction("Quit memtray", menu)
        menu.addAction(quit_)
        view = SyncStatusMenu(menu, quit_, app.sync, app.settings)
        assert [a.text() for a in menu.actions()] == ["Sync: not yet", "Sync now", "Quit memtray"]
        say(app, "hello")
        t = view.sync_now()
        t.join(60)
        qtbot.waitUntil(lambda: view.line.text().startswith("Synced"), timeout=10_000)
        hook = remote / "hooks" / "pre-receive"
        hook.write_text("#!/bin/sh\necho 'no space left on the share' >&2\nexit 1\n")
        hook.chmod(0o755)
        say(app, "again")
        view.sync_now().join(60)
        qtbot.waitUntil(lambda: view.line.text().startswith("Sync failed"), timeout=10_000)
        assert "no space left" in view.line.toolTip()
        assert view.now.isEnabled()
    finally:
        app.close()


def test_the_desktop_tray_carries_the_sync_line_and_applies_purges(qtbot: Any, configured_home: Any,
                                                                    runtime_dir: Any) -> None:
    from tests.gui.conftest import close_desktop, make_desktop

    d = make_desktop(qtbot, configured_home, tray_available=True)
    try:
        assert d.tray is not None
        labels = [a.text() for a in d.tray.menu.actions() if a.text()]
        assert labels[-3:] == ["Sync: not set up", "Sync now", "Quit memtray"]
        assert d.app.sync is not None and d.app.sync.on_tombstones is not None
    finally:
        close_desktop(d)
