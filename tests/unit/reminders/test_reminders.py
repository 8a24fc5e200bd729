"""Reminders: specs, DST, idempotent firing across restarts and crashes, tools, the timer.

Time is driven with FakeClock and ``ReminderService.tick()`` (due + fire); only the
tests of the apscheduler timer itself use the real clock.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.clock import Clock, FakeClock, IdGenerator
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.base.notify import RecordingNotifier, StdoutNotifier
from memtray.core.llm.tools import ToolContext
from memtray.core.log.eventlog import EventLog
from memtray.core.log.store import CHECKPOINT_NAME
from memtray.core.reminders import spec as rs
from memtray.core.reminders.service import ReminderService
from memtray.core.reminders.spec import ReminderError, Schedule

ROOT = Path(__file__).resolve().parents[3]
T0 = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)
BERLIN = "Europe/Berlin"
NEW_YORK = "America/New_York"


# --- helpers -----------------------------------------------------------------------------


def open_app(home: Home, clock: Clock, **cfg: Any) -> App:
    cfg.setdefault("timezone", BERLIN)
    llm = cfg.pop("llm", None)
    app = App.open(home, clock=clock, ids=IdGenerator(clock), config=Config(**cfg), llm=llm)
    app.notifier.set(RecordingNotifier())
    return app


def svc_of(app: App) -> ReminderService:
    svc = app.reminders
    assert isinstance(svc, ReminderService)
    return svc


def sent(app: App) -> list[dict[str, Any]]:
    n = app.notifier.current
    assert isinstance(n, RecordingNotifier)
    out: list[dict[str, Any]] = n.sent
    return out


def reminder_events(home: Home) -> list[tuple[str, dict[str, Any]]]:
    elog = EventLog.open(home.events, readonly=True)
    return [(r.type, dict(r.data)) for r in elog.records() if r.type.startswith("reminder.")]


def fired(home: Home) -> list[dict[str, Any]]:
    return [d for t, d in reminder_events(home) if t == "reminder.fired"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0, zone=BERLIN)


@pytest.fixture
def app(home: Home, clock: FakeClock) -> Iterator[App]:
    a = open_app(home, clock)
    yield a
    a.close()


def at_iso(t: datetime) -> str:
    return t.isoformat()


# --- validation: clear errors, nothing in the log ----------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cron": "61 * * * *"}, "invalid cron expression"),
        ({"cron": "* * *"}, "expected 5"),
        ({"cron": "0 9 1 * mon"}, "both day of month and day of week"),
        ({"cron": "0 0 30 2 *"}, "never fires"),
        ({"every": "1h", "tz": "Mars/Olympus_Mons"}, "unknown time zone"),
        ({"every": "1h", "tz": "../../etc/passwd"}, "unknown time zone"),
        ({"at": "2026-11-30T08:59:00+00:00"}, "in the past"),
        ({"at": "2026-11-30T10:00"}, "in the past"),  # 10:00 Berlin = 09:00 UTC = now
        ({"at": "next tuesday-ish"}, "not a date and time"),
        ({"every": "0m"}, "must be positive"),
        ({"every": "0s"}, "must be positive"),
        ({"every": "-5m"}, "must be positive"),
        ({"every": "30s"}, "too short"),
        ({"every": "5 parsecs"}, "not a duration"),
        ({"at": "in 1h", "every": "1h"}, "exactly one"),
        ({}, "exactly one"),
    ],
)
def test_invalid_specs_raise_and_write_nothing(app: App, home: Home, kwargs: dict[str, str], message: str) -> None:
    before = app.store.log.last_seq
    with pytest.raises(ReminderError, match=message):
        svc_of(app).schedule("stretch", **kwargs)
    assert app.store.log.last_seq == before
    assert reminder_events(home) == []


def test_bad_text_and_mode_are_rejected(app: App) -> None:
    with pytest.raises(ReminderError, match="needs a text"):
        svc_of(app).schedule("   ", every="1h")
    with pytest.raises(ReminderError, match="limit"):
        svc_of(app).schedule("x" * (rs.MAX_TEXT + 1), every="1h")
    with pytest.raises(ReminderError, match="unknown mode"):
        svc_of(app).schedule("x", every="1h", mode="shout")
    assert app.store.state.reminders == {}


def test_durations() -> None:
    assert rs.parse_duration("90s") == timedelta(seconds=90)
    assert rs.parse_duration("1h30m") == timedelta(minutes=90)
    assert rs.parse_duration("1 d 2h") == timedelta(hours=26)
    assert rs.format_duration(rs.parse_duration("1h 30m")) == "1h30m"
    for bad in ("", "h", "1x", "1h30", "m30"):
        with pytest.raises(ReminderError):
            rs.parse_duration(bad)


def test_at_forms_in_the_reminders_zone() -> None:
    now = T0  # 10:00 in Berlin
    assert rs.parse_at("2026-11-30T12:00", BERLIN, now) == datetime(2026, 11, 30, 11, 0, tzinfo=UTC)
    assert rs.parse_at("2026-11-30T12:00Z", BERLIN, now) == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert rs.parse_at("2026-11-30T12:00-05:00", BERLIN, now) == datetime(2026, 11, 30, 17, 0, tzinfo=UTC)
    assert rs.parse_at("in 10m", BERLIN, now) == now + timedelta(minutes=10)
    assert rs.parse_at("+2h", BERLIN, now) == now + timedelta(hours=2)
    assert rs.parse_at("18:30", BERLIN, now) == datetime(2026, 11, 30, 17, 30, tzinfo=UTC)
    assert rs.parse_at("09:30", BERLIN, now) == datetime(2026, 12, 1, 8, 30, tzinfo=UTC)  # tomorrow


def test_standard_cron_weekdays_are_translated() -> None:
    # apscheduler 3.x counts 0 as Monday; users write classic cron where 0 is Sunday
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)  # a Wednesday
    sched = Schedule.build("cron", rs.normalise_cron("0 9 * * 0"), "UTC", now)
    nxt = sched.next_after(now)
    assert nxt is not None and nxt.strftime("%A %H:%M") == "Sunday 09:00"
    sched = Schedule.build("cron", rs.normalise_cron("0 9 * * 1-5"), "UTC", now)
    nxt = sched.next_after(now)
    assert nxt is not None and nxt.strftime("%A") == "Thursday"
    assert rs.make_spec(cron="@daily", tz="UTC", now=now).spec == "0 0 * * *"


# --- DST ---------------------------------------------------------------------------------


def fire_times(kind: str, spec: str, tz: str, start: datetime, end: datetime) -> list[datetime]:
    sched = Schedule.build(kind, spec, tz, start)
    out, t = [], sched.next_after(start)
    while t is not None and t <= end:
        out.append(t)
        t = sched.next_after(t)
    return out


def utc(y: int, mo: int, d: int, h: int = 0, mi: int = 0) -> datetime:
    return datetime(y, mo, d, h, mi, tzinfo=UTC)


@pytest.mark.parametrize(
    ("tz", "spec", "start", "end", "want"),
    [
        # spring forward, Berlin 2026-03-29 02:00 -> 03:00: 02:30 does not exist; fires once,
        # at the instant 02:30 +01:00 names (03:30 CEST)
        (BERLIN, "30 2 * * *", utc(2026, 3, 27, 12), utc(2026, 3, 30, 12),
         [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 30)]),
        # autumn, Berlin 2026-10-25 03:00 -> 02:00: 02:30 happens twice; fires on the first only
        (BERLIN, "30 2 * * *", utc(2026, 10, 23, 12), utc(2026, 10, 26, 12),
         [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]),
        # an hourly cron follows elapsed time: both 02:00 CEST and 02:00 CET
        (BERLIN, "0 * * * *", utc(2026, 10, 24, 22, 30), utc(2026, 10, 25, 2, 30),
         [utc(2026, 10, 24, 23), utc(2026, 10, 25, 0), utc(2026, 10, 25, 1), utc(2026, 10, 25, 2)]),
        # and skips the hour that does not exist in spring
        (BERLIN, "0 * * * *", utc(2026, 3, 28, 23, 30), utc(2026, 3, 29, 2, 30),
         [utc(2026, 3, 29, 0), utc(2026, 3, 29, 1), utc(2026, 3, 29, 2)]),
        # New York: spring forward 2026-03-08 02:00 -> 03:00
        (NEW_YORK, "30 2 * * *", utc(2026, 3, 6, 12), utc(2026, 3, 9, 12),
         [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 30), utc(2026, 3, 9, 6, 30)]),
        # New York: fall back 2026-11-01 02:00 -> 01:00, 01:30 twice; fires once
        (NEW_YORK, "30 1 * * *", utc(2026, 10, 30, 12), utc(2026, 11, 2, 12),
         [utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]),
        # a pinned hour with a minute step: the first pass only
        (NEW_YORK, "*/20 1 * * *", utc(2026, 11, 1, 4), utc(2026, 11, 1, 8),
         [utc(2026, 11, 1, 5), utc(2026, 11, 1, 5, 20), utc(2026, 11, 1, 5, 40)]),
    ],
)
def test_cron_across_dst(tz: str, spec: str, start: datetime, end: datetime, want: list[datetime]) -> None:
    assert fire_times("cron", spec, tz, start, end) == want


def test_one_shot_at_a_skipped_or_repeated_wall_time() -> None:
    now = utc(2026, 3, 1)
    skipped = rs.make_spec(at="2026-03-29T02:30", tz=BERLIN, now=now)
    assert skipped.first == utc(2026, 3, 29, 1, 30)  # 03:30 CEST, the instant 02:30 +01:00 names
    assert skipped.spec == "2026-03-29T03:30:00+02:00"
    repeated = rs.make_spec(at="2026-10-25T02:30", tz=BERLIN, now=now)
    assert repeated.first == utc(2026, 10, 25, 0, 30)  # the first pass (CEST)
    ny = rs.make_spec(at="2026-11-01T01:30", tz=NEW_YORK, now=now)
    assert ny.first == utc(2026, 11, 1, 5, 30)  # EDT, the first pass


def test_interval_is_elapsed_time_across_dst() -> None:
    times = fire_times("every", "1d", BERLIN, utc(2026, 3, 27, 8), utc(2026, 3, 30, 9))
    assert [t - times[0] for t in times] == [timedelta(days=i) for i in range(len(times))]
    assert [rs.local(t, BERLIN).hour for t in times] == [9, 10, 10]


def test_daily_cron_delivered_once_per_day_through_the_autumn_change(home: Home) -> None:
    clock = FakeClock(utc(2026, 10, 23, 12), zone=BERLIN)
    app = open_app(home, clock)
    try:
        svc_of(app).schedule("water the plants", cron="30 2 * * *")
        while clock.now() < utc(2026, 10, 27, 12):
            clock.advance(15 * 60)
            svc_of(app).tick()
        assert [d["occurrence"] for d in fired(home)] == [
            "2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z",
        ]
        assert not any(d["late"] for d in fired(home))
    finally:
        app.close()


def test_spring_forward_cron_delivered_once_in_new_york(home: Home) -> None:
    clock = FakeClock(utc(2026, 3, 7, 12), zone=NEW_YORK)
    app = open_app(home, clock, timezone=NEW_YORK)
    try:
        svc_of(app).schedule("stretch", cron="30 2 * * *")
        while clock.now() < utc(2026, 3, 9, 12):
            clock.advance(10 * 60)
            svc_of(app).tick()
        assert [d["occurrence"] for d in fired(home)] == ["2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"]
    finally:
        app.close()


# --- firing, restarts, missed, grace -----------------------------------------------------


def test_one_shot_fires_once_on_time(app: App, home: Home, clock: FakeClock) -> None:
    svc = svc_of(app)
    r = svc.schedule("stand up", at="in 10m")
    assert r.tz == BERLIN and r.spec == "2026-11-30T10:10:00+01:00"
    clock.advance(599)
    assert svc.tick() == []
    clock.advance(1)
    [occ] = svc.tick()
    assert occ.key == "2026-11-30T09:10:00Z" and not occ.late
    assert sent(app) == [{"title": "Reminder", "body": "stand up", "kind": "reminder", "target": f"reminder:{r.id}"}]
    clock.advance(3600)
    assert svc.tick() == []
    assert fired(home) == [{"reminder": r.id, "occurrence": "2026-11-30T09:10:00Z", "late": False}]
    assert not app.store.state.reminders[r.id].active
    assert svc.reminders() == []


def test_firing_is_idempotent_per_occurrence(app: App, home: Home, clock: FakeClock) -> None:
    svc = svc_of(app)
    svc.schedule("drink water", every="1h")
    clock.advance(3600)
    [occ] = svc.due()
    assert app.run(svc.fire(occ)) is True
    assert app.run(svc.fire(occ)) is False
    assert svc.due() == []
    assert len(fired(home)) == 1 and len(sent(app)) == 1


def test_recurring_coalesces_and_keeps_going(app: App, home: Home, clock: FakeClock) -> None:
    svc = svc_of(app)
    svc.schedule("drink water", every="30m")
    clock.advance(30 * 60)
    assert len(svc.tick()) == 1
    clock.advance(5 * 3600 + 120)  # ten occurrences missed (say, asleep)
    [occ] = svc.tick()
    assert occ.key == "2026-11-30T14:30:00Z" and occ.late  # the newest missed one, once
    clock.advance(28 * 60)
    [occ] = svc.tick()
    assert occ.key == "2026-11-30T15:00:00Z" and not occ.late
    assert len(fired(home)) == 3


def test_cancelled_reminder_does_not_fire_after_restart(home: Home, clock: FakeClock) -> None:
    app = open_app(home, clock)
    svc = svc_of(app)
    keep = svc.schedule("keep", at="in 1h")
    gone = svc.schedule("gone", at="in 1h")
    rec = svc.schedule("gone too", cron="*/5 * * * *")
    svc.cancel(gone.id)
    svc.cancel(rec.id[:12])  # a unique prefix works
    app.close()
    clock.advance(2 * 3600)
    for use_checkpoint in (True, False):
        if not use_checkpoint:
            (home.state / CHECKPOINT_NAME).unlink()
        app = open_app(home, clock)
        try:
            if use_checkpoint:
                assert [o.reminder for o in svc_of(app).tick()] == [keep.id]
            assert svc_of(app).tick() == []
            assert [d["reminder"] for d in fired(home)] == [keep.id]
        finally:
            app.close()


def test_missed_while_off_delivered_once_late_then_never_again(home: Home, clock: FakeClock) -> None:
    app = open_app(home, clock)
    r = svc_of(app).schedule("call mum", at="2026-11-30T11:00")
    app.close()
    clock.advance(5 * 3600)  # off from 10:00 to 15:00 local
    app = open_app(home, clock)
    [occ] = svc_of(app).tick()
    assert occ.late and occ.reminder == r.id
    [note] = sent(app)
    assert note["body"] == "call mum" and "late" in note["title"] and "11:00" in note["title"]
    app.close()
    for _ in range(2):
        clock.advance(3600)
        app = open_app(home, clock)
        assert svc_of(app).tick() == []
        assert sent(app) == []
        app.close()
    assert fired(home) == [{"reminder": r.id, "occurrence": "2026-11-30T10:00:00Z", "late": True}]


def test_beyond_grace_one_shot_is_recorded_as_expired_not_delivered(home: Home, clock: FakeClock) -> None:
    app = open_app(home, clock, reminder_grace_hours=2)
    r = svc_of(app).schedule("pay rent", at="in 1h")
    app.close()
    clock.advance(4 * 3600)  # 3 h late > 2 h grace
    app = open_app(home, clock, reminder_grace_hours=2)
    assert svc_of(app).tick() == []
    assert sent(app) == []
    assert svc_of(app).as_json(app.store.state.reminders[r.id])["status"] == "cancelled"
    app.close()
    app = open_app(home, clock, reminder_grace_hours=48)  # raising the grace later changes nothing
    assert svc_of(app).tick() == []
    app.close()
    assert reminder_events(home)[1:] == [("reminder.cancelled", {"reminder": r.id, "reason": "expired"})]


def test_beyond_grace_recurring_skips_to_its_next_occurrence(home: Home, clock: FakeClock) -> None:
    app = open_app(home, clock, reminder_grace_hours=1)
    svc_of(app).schedule("standup", cron="0 9 * * *")  # 09:00 Berlin = 08:00 UTC
    app.close()
    clock.advance(26 * 3600)  # 11:00 next day; today's 09:00 is 2 h late
    app = open_app(home, clock, reminder_grace_hours=1)
    try:
        assert svc_of(app).tick() == []
        assert reminder_events(home)[1:] == []  # nothing recorded: it simply comes tomorrow
        clock.advance(21 * 3600)
        [occ] = svc_of(app).tick()
        assert occ.key == "2026-12-02T08:00:00Z" and not occ.late
    finally:
        app.close()


def test_late_within_a_minute_is_on_time(app: App, clock: FakeClock) -> None:
    svc_of(app).schedule("tea", at="in 5m")
    clock.advance(5 * 60 + 59)
    [occ] = svc_of(app).tick()
    assert not occ.late


_CRASH_SCRIPT = r"""
import os, sys
from datetime import datetime
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, IdGenerator
from memtray.core.base.config import Config
from memtray.core.base.home import Home

class CrashingNotifier:
    def notify(self, title, body, *, kind, target):
        sys.stdout.write(f"shown: {body}\n")
        sys.stdout.flush()
        os._exit(9)  # the process dies after the user saw it, before reminder.fired is logged

clock = FakeClock(datetime.fromisoformat(sys.argv[2]), zone="Europe/Berlin")
app = App.open(Home.resolve(sys.argv[1]), clock=clock, ids=IdGenerator(clock),
               config=Config(timezone="Europe/Berlin"))
app.notifier.set(CrashingNotifier())
app.reminders.tick()
print("not reached")
"""


def test_crash_between_notifying_and_logging_redelivers_once(home: Home, clock: FakeClock) -> None:
    app = open_app(home, clock)
    r = svc_of(app).schedule("take the pills", at="in 10m")
    app.close()
    crash_at = (T0 + timedelta(minutes=10, seconds=5)).isoformat()
    out = subprocess.run(
        [sys.executable, "-c", _CRASH_SCRIPT, str(home.root), crash_at],
        capture_output=True, text=True, timeout=120, cwd=str(ROOT),
    )
    assert out.returncode == 9, out.stderr
    assert out.stdout == "shown: take the pills\n"
    assert fired(home) == []  # the crash hit before the log write
    clock.advance(30 * 60)
    app = open_app(home, clock)
    [occ] = svc_of(app).tick()  # delivered again at the next start, marked late
    assert occ.late and [n["body"] for n in sent(app)] == ["take the pills"]
    app.close()
    app = open_app(home, clock)
    assert svc_of(app).tick() == []
    app.close()
    assert fired(home) == [{"reminder": r.id, "occurrence": "2026-11-30T09:10:00Z", "late": True}]


def test_a_failing_notifier_does_not_lose_the_record(app: App, home: Home, clock: FakeClock) -> None:
    class Broken:
        def notify(self, title: str, body: str, *, kind: str, target: str | None) -> None:
            raise RuntimeError("display gone")

    app.notifier.set(Broken())
    svc_of(app).schedule("x", at="in 1m")
    clock.advance(60)
    assert len(svc_of(app).tick()) == 1
    assert len(fired(home)) == 1


def test_rebuild_from_deleted_state_is_identical(home: Home, clock: FakeClock) -> None:
    app = open_app(home, clock)
    svc = svc_of(app)
    svc.schedule("a", every="1h")
    b = svc.schedule("b", at="in 5h")
    svc.schedule("c", cron="15 * * * *")
    for _ in range(6):
        clock.advance(1800)
        svc.tick()
    svc.cancel(b.id)
    live = app.store.state.to_json()["reminders"]
    app.close()
    (home.state / CHECKPOINT_NAME).unlink(missing_ok=True)
    app = open_app(home, clock)
    try:
        assert app.store.state.to_json()["reminders"] == live
        assert svc_of(app).tick() == []
    finally:
        app.close()


# --- tools -------------------------------------------------------------------------------


def call(app: App, name: str, args: Any, *, in_reminder: bool = False) -> str:
    raw = args if isinstance(args, str) else json.dumps(args)
    return str(app.run(app.tools.call(name, raw, ToolContext(session="quick", in_reminder=in_reminder))))


def test_tools_schedule_list_cancel(app: App, home: Home) -> None:
    out = call(app, "schedule_reminder", {"text": "stand up", "at": "2026-11-30T12:00:00+01:00"})
    assert out.startswith("scheduled reminder ") and "2026-11-30 12:00:00 CET" in out
    rid = out.split()[2].rstrip(":")
    out = call(app, "schedule_reminder", {"text": "water", "every": "2h", "at": "", "mode": "agent"})
    assert "every 2h" in out
    listing = call(app, "list_reminders", {})
    assert rid in listing and "'stand up'" in listing and "mode agent" in listing
    assert call(app, "cancel_reminder", {"id": rid}) == f"cancelled reminder {rid}: 'stand up'"
    assert rid not in call(app, "list_reminders", {})
    assert [t for t, _ in reminder_events(home)] == ["reminder.scheduled"] * 2 + ["reminder.cancelled"]
    assert reminder_events(home)[0][1]["reminder"] == rid


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("schedule_reminder", "{not json", "not valid JSON"),
        ("schedule_reminder", {"at": "2026-12-01T09:00:00Z"}, "missing required argument 'text'"),
        ("schedule_reminder", {"text": 5, "every": "1h"}, "'text' must be string"),
        ("schedule_reminder", {"text": "x"}, "exactly one of at, every or cron"),
        ("schedule_reminder", {"text": "x", "at": "2026-12-01T09:00Z", "cron": "* * * * *"}, "exactly one"),
        ("schedule_reminder", {"text": "x", "cron": "every monday"}, "invalid cron expression"),
        ("schedule_reminder", {"text": "x", "every": "0m"}, "must be positive"),
        ("schedule_reminder", {"text": "x", "every": "1h", "tz": "Atlantis"}, "unknown time zone"),
        ("schedule_reminder", {"text": "x", "at": "2020-01-01T00:00:00Z"}, "in the past"),
        ("schedule_reminder", {"text": "x", "every": "1h", "mode": "loud"}, "must be one of"),
        ("schedule_reminder", {"text": "x", "every": "1h", "when": "now"}, "unknown argument 'when'"),
        ("cancel_reminder", {}, "missing required argument 'id'"),
        ("cancel_reminder", {"id": "NOPE0000"}, "no reminder with id"),
    ],
)
def test_tools_with_bad_arguments_return_errors_and_write_nothing(
    app: App, home: Home, name: str, args: Any, message: str
) -> None:
    out = call(app, name, args)
    assert out.startswith("error: ") and message in out, out
    assert reminder_events(home) == []


def test_a_reminders_own_run_cannot_schedule(app: App, home: Home) -> None:
    out = call(app, "schedule_reminder", {"text": "again", "every": "1h"}, in_reminder=True)
    assert out == "error: a reminder's own run cannot schedule new reminders"
    assert reminder_events(home) == []


# --- agent mode --------------------------------------------------------------------------

pytestmark_agent = pytest.mark.filterwarnings(
    "ignore:.*on TypedDict class .* using the `ReadOnly` qualifier:UserWarning"
)


def agent_app(home: Home, clock: FakeClock, server: Any) -> App:
    from memtray.core.llm.client import LLMClient

    cfg = Config(timezone=BERLIN, model="openai/test-model", api_base=server.base_url, llm_retries=0)
    app = open_app(home, clock, model=cfg.model, api_base=cfg.api_base, llm_retries=0,
                    llm=LLMClient(cfg, key_lookup=lambda _p: "sk-test"))
    return app


@pytestmark_agent
def test_agent_mode_reply_is_the_notification_and_cannot_schedule(
    home: Home, clock: FakeClock, llm_server: Any
) -> None:
    from tests.fixtures.llm_server import reply, tool_call

    app = agent_app(home, clock, llm_server)
    try:
        r = svc_of(app).schedule("check the oven", at="in 1m", mode="agent")
        llm_server.script(
            tool_call("schedule_reminder", {"text": "check again", "every": "5m"}),
            reply("Time to check the oven!"),
        )
        clock.advance(60)
        [occ] = svc_of(app).tick()
        assert [n["body"] for n in sent(app)] == ["Time to check the oven!"]
        assert sent(app)[0]["target"] == f"reminder:{r.id}"
        assert fired(home) == [{"reminder": r.id, "occurrence": occ.key, "late": False,
                                "reply": "Time to check the oven!"}]
        # the turn ran in the reminder's own session, and its schedule attempt was refused
        msgs = app.store.state.sessions[f"reminder:{r.id}"].messages
        assert "check the oven" in msgs[0]["content"] and occ.key in msgs[0]["content"]
        tool_result = next(m for m in msgs if m["role"] == "tool")
        assert "cannot schedule new reminders" in tool_result["content"]
        assert list(app.store.state.reminders) == [r.id]
    finally:
        app.close()


@pytestmark_agent
def test_agent_failure_still_delivers_the_text(home: Home, clock: FakeClock, llm_server: Any) -> None:
    from tests.fixtures.llm_server import error

    app = agent_app(home, clock, llm_server)
    try:
        r = svc_of(app).schedule("leave for the train", at="in 1m", mode="agent")
        llm_server.script(error(500), error(500), error(500))
        clock.advance(60)
        assert len(svc_of(app).tick()) == 1
        [note] = sent(app)
        assert note["body"].startswith("leave for the train (the assistant could not run")
        assert fired(home)[0] == {"reminder": r.id, "occurrence": "2026-11-30T09:01:00Z", "late": False}
    finally:
        app.close()


# --- the timer (real clock) --------------------------------------------------------------


def test_one_shot_cli_apps_never_start_delivery(home: Home) -> None:
    app = App.open(home, start_services=False, config=Config(timezone=BERLIN))
    try:
        assert svc_of(app).start() is False and not svc_of(app).running
    finally:
        app.close()


def test_timer_rebuilds_jobs_from_the_log_and_follows_changes(home: Home) -> None:
    clock = Clock()
    app = open_app(home, clock)
    svc = svc_of(app)
    a = svc.schedule("a", at="in 1h")
    b = svc.schedule("b", every="2h")
    c = svc.schedule("c", cron="0 9 * * *")
    svc.cancel(c.id)
    app.close()
    app = open_app(home, clock)
    svc = svc_of(app)
    try:
        assert svc.start() is True
        assert svc.start() is True  # idempotent
        timers = app.scheduler.timers()
        maintenance = {"maintenance:idle-consolidation", "maintenance:git-gc", "maintenance:settings",
                       "maintenance:sync", "maintenance:embedding", "maintenance:dated-facts"}
        # one timer for the earliest reminder, not one job per reminder
        assert set(timers) == {"memtray:next-reminder", "memtray:wake", *maintenance}
        assert timers["memtray:next-reminder"] == min(svc.next_fire(a), svc.next_fire(b))
        d = svc.schedule("d", cron="*/5 * * * *")
        assert app.scheduler.timers()["memtray:next-reminder"] == svc.next_fire(d)  # sooner: the timer moved
        svc.cancel(d.id)
        svc.cancel(a.id)
        assert app.scheduler.timers()["memtray:next-reminder"] == svc.next_fire(b)
    finally:
        app.close()
    assert not svc.running


def test_timer_delivers_on_time_and_runs_maintenance(home: Home, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    app = open_app(home, clock)
    svc = svc_of(app)
    ran = threading.Event()
    app.scheduler.add_maintenance("probe", 0.05, ran.set)
    failing = threading.Event()

    def boom() -> None:
        failing.set()
        raise RuntimeError("chore failed")

    app.scheduler.add_maintenance("boom", 0.05, boom)
    try:
        assert not ran.wait(0.2)  # nothing runs before start()
        svc.start()
        when = (clock.now() + timedelta(seconds=1.5)).replace(microsecond=0) + timedelta(seconds=1)
        r = svc.schedule("now-ish", at=when.isoformat())
        deadline = time.monotonic() + 10
        while not app.store.state.reminders[r.id].fired and time.monotonic() < deadline:
            time.sleep(0.05)  # (the notification comes first, then the log record)
        assert app.store.state.reminders[r.id].fired == [rs.occurrence_key(when)]
        assert [n["body"] for n in sent(app)] == ["now-ish"]
        assert ran.wait(5) and failing.wait(5)
    finally:
        app.close()
    assert "maintenance task boom failed" in caplog.text  # logged, and the timer kept going


def test_quitting_cancels_a_running_chore_and_start_after_close_does_nothing(home: Home) -> None:
    import asyncio

    app = open_app(home, Clock())
    svc = svc_of(app)
    running, cancelled = threading.Event(), threading.Event()

    async def slow_chore() -> None:
        running.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    app.scheduler.add_maintenance("slow", 0.05, slow_chore)
    try:
        assert svc.start() is True
        assert running.wait(10)
    finally:
        app.close()  # returns without waiting out the hour: the chore is cancelled
    assert cancelled.is_set() and not svc.running
    assert svc.start() is False  # e.g. the desktop's start still queued on the worker at quit
    assert not svc.running


def test_start_catches_up_missed_occurrences(home: Home) -> None:
    clock = FakeClock(datetime.now(UTC) - timedelta(hours=3), zone=BERLIN)
    app = open_app(home, clock)
    r = svc_of(app).schedule("missed", at="in 1h")
    app.close()
    app = open_app(home, Clock())
    try:
        svc_of(app).start()
        deadline = time.monotonic() + 10
        while not fired(home) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [(d["reminder"], d["late"]) for d in fired(home)] == [(r.id, True)]
    finally:
        app.close()


def test_stdout_notifier_writes_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    StdoutNotifier().notify("Reminder", "stand\nup  now", kind="reminder", target="reminder:X")
    assert capsys.readouterr().out == "reminder: Reminder: stand up now\n"
