"""The tray's sync line follows every sync attempt; "Sync now" syncs off the GUI thread; its
conflict count is the live review queue's, and choosing it opens the memory browser's review."""

from __future__ import annotations

import json
import subprocess
import sys
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
    # the live count, when known, replaces the last sync's list
    assert describe(ok, configured=True, now=now, pending=1)[0] == "Synced 5 min ago · 1 conflict to review"
    assert describe(ok, configured=True, now=now, pending=0)[0] == "Synced 5 min ago"
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


def _cli(home: Path, *args: str) -> subprocess.Popen[str]:
    """``memtray ARGS`` in another process; the desktop of this test serves it (forwarded)."""
    from tests.support import ROOT, cli_env

    return subprocess.Popen([sys.executable, "-m", "memtray.core.cli", *args], env=cli_env(home), cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finished(qtbot: Any, proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    qtbot.waitUntil(lambda: proc.poll() is not None, timeout=60_000)  # the GUI thread keeps serving meanwhile
    out, err = proc.communicate()
    return proc.returncode, out, err


def test_the_line_counts_the_conflicts_waiting_now_and_opens_their_review(
        qtbot: Any, configured_home: Any, runtime_dir: Any, tmp_path: Path) -> None:
    """A merge conflict between two homes shows on the line; resolved by `memtray memory review`
    in a terminal (forwarded to the running desktop), the line says none, although the last
    sync's list in the status still holds it (`memtray sync --status` reports both)."""
    from memtray.core.base import config

    from tests.gui.conftest import close_desktop, make_desktop

    remote = bare(tmp_path / "remote.git")
    config.set_value(configured_home, "sync_remote", str(remote))
    a = open_app(tmp_path / "a", sync_remote=str(remote))
    d = make_desktop(qtbot, configured_home, tray_available=True)
    try:
        b, view = d.app, d.sync_menu
        assert a.sync is not None and b.sync is not None and view.feed is not None
        for fact in ("Lives in Lyon", "Works at Acme"):
            a.write(lambda fact=fact: a.memory.remember(fact, "Me", model=None, source_seq=None))
        a.sync.sync()
        view.sync_now().join(60)  # b takes a's memory as it is
        qtbot.waitUntil(lambda: view.line.text().startswith("Synced"), timeout=10_000)
        assert "conflict" not in view.line.text() and not view.line.isEnabled()
        # then b removes a fact that a rewords by hand: a merge conflict, kept for review
        b.write(lambda: b.memory.forget("F2", "changed jobs", model=None))
        md = a.home.memory / "MEMORY.md"
        md.write_text(md.read_text().replace("Works at Acme", "Works at Acme in sales"))
        assert a.write(a.memory.check_worktree)
        a.sync.sync()
        view.sync_now().join(60)
        qtbot.waitUntil(lambda: view.line.text().endswith("· 1 conflict to review"), timeout=10_000)
        assert view.line.isEnabled() and "review" in view.line.toolTip()
        [item] = b.write(b.memory.merge_conflicts)
        assert b.sync.status()["conflicts"]  # the last sync's list, as written by it

        view.line.trigger()  # choosing the line: the memory browser, on its review
        assert d.window is not None
        browser = d.window.memory
        qtbot.waitUntil(lambda: browser.tabs.currentWidget() is browser.review_tab and d.window.isVisible(),
                        timeout=10_000)

        code, out, err = _finished(qtbot, _cli(b.home.root, "sync", "--status", "--json"))
        assert code == 0, err
        st = json.loads(out)
        assert st["conflicts_pending"] == 1 and len(st["conflicts"]) == 1

        code, out, err = _finished(qtbot, _cli(b.home.root, "memory", "review", "accept", item["id"]))
        assert code == 0 and f"accepted {item['id']}" in out, err
        qtbot.waitUntil(lambda: "conflict" not in view.line.text(), timeout=10_000)
        assert view.line.text().startswith("Synced") and not view.line.isEnabled()
        assert b.sync.status()["conflicts"]  # unchanged: the count is not the last sync's list

        code, out, err = _finished(qtbot, _cli(b.home.root, "sync", "--status"))
        assert code == 0, err
        assert "all resolved since" in out and "waiting for review" not in out
        code, out, err = _finished(qtbot, _cli(b.home.root, "sync", "--status", "--json"))
        assert json.loads(out)["conflicts_pending"] == 0 and len(json.loads(out)["conflicts"]) == 1
    finally:
        close_desktop(d)
        a.close()
