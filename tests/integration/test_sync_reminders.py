"""Reminders fire on the device that owns them only; the others list them and learn they fired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.integration.sync_support import bare, digest, open_app


def test_a_reminder_fires_on_its_own_device_only(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    a, b = open_app(tmp_path / "a"), open_app(tmp_path / "b")
    try:
        assert a.sync is not None and b.sync is not None
        when = datetime.now(UTC) + timedelta(hours=1)
        r = b.write(lambda: b.reminders.schedule("water the plants", at=when.isoformat()))
        b.sync.sync(str(remote))
        a.sync.sync(str(remote))
        listed = {x.id: x for x in a.reminders.reminders()}
        assert r.id in listed and listed[r.id].device == b.sync.device  # listed on a...
        later = when + timedelta(minutes=1)
        assert a.reminders.due(later) == []  # ...never due there
        due_b = b.reminders.due(later)
        assert [o.reminder for o in due_b] == [r.id]
        assert b.run(b.reminders.fire(due_b[0])) is True
        # even asked to fire it, a refuses: the occurrence is b's
        occ = due_b[0]
        assert a.run(a.reminders.fire(occ)) is False
        b.sync.sync(str(remote))
        a.sync.sync(str(remote))
        mine = a.store.state.reminders[r.id]
        assert not mine.active and mine.fired == b.store.state.reminders[r.id].fired
        assert digest(a) == digest(b)
    finally:
        a.close()
        b.close()


def test_a_recurring_reminder_has_the_same_schedule_on_every_device(tmp_path: Path) -> None:
    """The peer dates it when its owner scheduled it (not when it was imported, seconds or days
    later), so `remind list` shows the same `scheduled` and `next` everywhere."""
    from memtray.core.base.clock import FakeClock

    remote = bare(tmp_path / "remote.git")
    start = datetime(2026, 11, 30, 9, 0, 7, tzinfo=UTC)
    clock_a, clock_b = FakeClock(start), FakeClock(start)
    a, b = open_app(tmp_path / "a", clock_a), open_app(tmp_path / "b", clock_b)
    try:
        assert a.sync is not None and b.sync is not None
        r = b.write(lambda: b.reminders.schedule("stretch legs", every="7m"))
        b.sync.sync(str(remote))
        clock_a.advance(2 * 3600 + 13)  # a imports it two hours later: that time must not count
        a.sync.sync(str(remote))
        now = start + timedelta(hours=3)
        mine, theirs = b.reminders.as_json(b.store.state.reminders[r.id], now), \
            a.reminders.as_json(a.store.state.reminders[r.id], now)
        assert theirs["scheduled"] == mine["scheduled"] and theirs["next"] == mine["next"], (mine, theirs)
    finally:
        a.close()
        b.close()
