"""The running desktop delivers reminders and runs idle maintenance; a damaged log is said plainly."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.log.events import Message
from memtray.desktop.qt import QApplication

from tests.gui.conftest import close_desktop, make_desktop

pytestmark = pytest.mark.gui


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def test_desktop_delivers_missed_and_upcoming_reminders(
    qtbot: Any, configured_home: Any, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")  # banner channel
    with App.open(configured_home) as app:  # scheduled while the desktop is not running
        missed = app.reminders.schedule("stretch", at=_iso(datetime.now(UTC) + timedelta(seconds=1)),
                                                    tz="UTC")
    time.sleep(1.5)  # it falls due while memtray is off
    d = make_desktop(qtbot, configured_home)
    try:
        qtbot.waitUntil(lambda: d.delivering is True, timeout=20000)
        svc = d.app.reminders
        assert svc.running
        jobs = set(d.app.scheduler.timers())
        assert {"maintenance:idle-consolidation", "maintenance:git-gc"} <= jobs
        # the missed one is delivered at start, marked late
        qtbot.waitUntil(lambda: any(s.kind == "reminder" for s in d.notifier.history), timeout=20000)
        first = next(s for s in d.notifier.history if s.kind == "reminder")
        assert "stretch" in first.body and first.target == f"reminder:{missed.id}"
        # one scheduled while running fires on its own timer
        upcoming = svc.schedule("drink water", at=_iso(datetime.now(UTC) + timedelta(seconds=2)), tz="UTC")
        qtbot.waitUntil(lambda: any(s.target == f"reminder:{upcoming.id}" for s in d.notifier.history),
                        timeout=20000)
        # shown first, then logged as fired (a crash in between shows it twice, never not at all)
        qtbot.waitUntil(lambda: {r.id for r in d.app.store.state.reminders.values() if not r.active}
                        == {missed.id, upcoming.id}, timeout=10000)
    finally:
        close_desktop(d)
    assert not svc.running


def test_damaged_log_is_reported_and_nothing_is_delivered(
    qtbot: Any, configured_home: Any, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    with App.open(configured_home) as app:
        for i in range(5):
            app.store.append(Message(role="user", content=f"message {i}"), session="quick")
    seg = sorted(configured_home.events.glob("*.jsonl"))[0]
    raw = bytearray(seg.read_bytes())
    second = raw.index(b"\n") + 1
    raw[second + 30] ^= 0x01  # a flipped bit in the middle of the log
    seg.write_bytes(bytes(raw))
    assert (configured_home.root / "state" / "checkpoint.json").exists()  # found even after a clean quit
    d = make_desktop(qtbot, configured_home)
    try:
        assert d.app.store.readonly
        qtbot.waitUntil(lambda: d.delivering is False, timeout=20000)
        # a notification goes to D-Bus on the notifier's thread first and, with no bus,
        # comes back to the GUI thread for the fallback: it is in the history only then
        qtbot.waitUntil(lambda: any(s.kind == "failure" for s in d.notifier.history), timeout=20000)
        d.notifier._pool.submit(lambda: None).result(timeout=20)  # every D-Bus attempt has ended
        QApplication.processEvents()  # and its fallback has run
        failures = [s for s in d.notifier.history if s.kind == "failure"]
        assert len(failures) == 1 and "doctor --repair" in failures[0].body
    finally:
        close_desktop(d)


def test_a_repository_rebuilt_at_start_is_told_to_the_user(
    qtbot: Any, configured_home: Any, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    with App.open(configured_home) as app:
        mem = app.memory
        app.worker.call(lambda: mem.write("# About\n\n- Likes tea\n", reason="agent", source="model"))
        head = mem.git.head()
    obj = configured_home.memory / ".git" / "objects" / head[:2] / head[2:]
    obj.chmod(0o600)
    obj.write_bytes(b"")
    d = make_desktop(qtbot, configured_home)
    try:
        qtbot.waitUntil(lambda: any(s.kind == "failure" for s in d.notifier.history), timeout=10000)
        [told] = [s for s in d.notifier.history if s.kind == "failure"]
        assert "rebuilt from the event log" in told.body and "memory.damaged-" in told.body
        assert "Likes tea" in d.app.store.state.memory
    finally:
        close_desktop(d)
