"""Reminder times as people say them: "in 2 minutes", "tomorrow at noon", "every weekday at 9".

Each phrase goes through the same door as the CLI's --at/--every and the chat tool's
arguments (``make_spec``), in the reminder's zone, at a fixed now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock
from memtray.core.base.home import Home
from memtray.core.llm.tools import ToolContext
from memtray.core.reminders import natural
from memtray.core.reminders import spec as rs
from memtray.core.reminders.spec import ReminderError

from tests.unit.reminders.test_reminders import BERLIN, T0, open_app, reminder_events, svc_of

# T0 is Monday 2026-11-30 09:00 UTC = 10:00 in Berlin (UTC+1)


def _berlin(*args: int) -> datetime:
    from zoneinfo import ZoneInfo

    return datetime(*args, tzinfo=ZoneInfo(BERLIN)).astimezone(UTC)


@pytest.mark.parametrize(("phrase", "want"), [
    ("in 2 minutes", T0 + timedelta(minutes=2)),
    ("in an hour and a half", T0 + timedelta(minutes=90)),
    ("in half an hour", T0 + timedelta(minutes=30)),
    ("in 1 hour, 5 minutes", T0 + timedelta(minutes=65)),
    ("in two days", T0 + timedelta(days=2)),
    ("in 10m", T0 + timedelta(minutes=10)),
    ("tomorrow at noon", _berlin(2026, 12, 1, 12, 0)),
    ("Tomorrow at 9am", _berlin(2026, 12, 1, 9, 0)),
    ("9:30 pm tomorrow", _berlin(2026, 12, 1, 21, 30)),
    ("tomorrow", _berlin(2026, 12, 1, 9, 0)),  # a day without a time: 9:00
    ("friday 9am", _berlin(2026, 12, 4, 9, 0)),
    ("on Friday at 17:15", _berlin(2026, 12, 4, 17, 15)),
    ("monday at 9", _berlin(2026, 12, 7, 9, 0)),  # today is Monday and 9:00 has passed: next week's
    ("monday at 11", _berlin(2026, 11, 30, 11, 0)),  # ...but 11:00 is still ahead today
    ("next monday at 11", _berlin(2026, 12, 7, 11, 0)),
    ("at noon", _berlin(2026, 11, 30, 12, 0)),
    ("midnight", _berlin(2026, 12, 1, 0, 0)),
    ("tonight", _berlin(2026, 11, 30, 20, 0)),
    ("dec 5 at 7pm", _berlin(2026, 12, 5, 19, 0)),
    ("5 December 2027 at 8:15", _berlin(2027, 12, 5, 8, 15)),
    ("2026-12-24 at 18:00", _berlin(2026, 12, 24, 18, 0)),
    ("18:30", _berlin(2026, 11, 30, 18, 30)),
])
def test_one_shot_phrases(phrase: str, want: datetime) -> None:
    s = rs.make_spec(at=phrase, tz=BERLIN, now=T0)
    assert (s.kind, s.first) == ("at", want)


@pytest.mark.parametrize(("phrase", "kind", "spec"), [
    ("every weekday at 9", "cron", "0 9 * * mon-fri"),
    ("weekday at 9", "cron", "0 9 * * mon-fri"),
    ("weekdays at 8:30am", "cron", "30 8 * * mon-fri"),
    ("every day at 8:30", "cron", "30 8 * * *"),
    ("monday and thursday at 18:00", "cron", "0 18 * * mon,thu"),
    ("every tue, fri 5pm", "cron", "0 17 * * tue,fri"),
    ("weekend at 10am", "cron", "0 10 * * sat,sun"),
    ("every morning", "cron", "0 9 * * *"),
    ("every 2 hours", "every", "2h"),
    ("every hour", "every", "1h"),
    ("90 minutes", "every", "1h30m"),
    ("30m", "every", "30m"),
])
def test_repeating_phrases(phrase: str, kind: str, spec: str) -> None:
    s = rs.make_spec(every=phrase, tz=BERLIN, now=T0)
    assert (s.kind, s.spec) == (kind, spec)


def test_every_weekday_at_9_fires_on_weekdays_at_9_in_the_zone() -> None:
    s = rs.make_spec(at="every weekday at 9", tz=BERLIN, now=T0)  # said as a time: the same
    sched = rs.Schedule.build(s.kind, s.spec, s.tz, T0)
    t, fires = T0, []
    for _ in range(6):
        nxt = sched.next_after(t)
        assert nxt is not None
        fires.append(nxt)
        t = nxt
    assert fires == [_berlin(2026, 12, d, 9, 0) for d in (1, 2, 3, 4, 7, 8)]  # Tue..Fri, then Mon, Tue


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"at": "next tuesday-ish"}, "not a date and time"),
    ({"at": "in 3 fortnights"}, "not a duration"),
    ({"at": "monday at 25:00"}, "not a date and time"),
    ({"at": "13pm"}, "not a date and time"),
    ({"at": "yesterday"}, "not a date and time"),
    ({"every": "blue moon"}, "not a duration"),
    ({"every": "30 seconds"}, "too short"),
    ({"every": "weekday at 31:00"}, "not a duration"),
])
def test_what_it_does_not_understand_is_refused_plainly(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ReminderError, match=message) as err:
        rs.make_spec(tz=BERLIN, now=T0, **kwargs)
    assert err.value.hint


def test_durations_and_times_of_day() -> None:
    assert natural.duration("an hour and a half") == timedelta(minutes=90)
    assert natural.duration("1.5 hours") == timedelta(minutes=90)
    assert natural.duration("2 apples") is None
    assert natural.duration("and") is None
    assert natural.duration("5 minutes and") is None


def test_the_chat_tool_takes_the_users_words(home: Home) -> None:
    clock = FakeClock(T0, zone=BERLIN)
    app: App = open_app(home, clock)
    try:
        out = app.run(app.tools.call("schedule_reminder", '{"text": "call mum", "at": "tomorrow at noon"}',
                                     ToolContext(session="quick")))
        assert "scheduled reminder" in str(out)
        out = app.run(app.tools.call("schedule_reminder", '{"text": "stand up", "every": "weekday at 9"}',
                                     ToolContext(session="quick")))
        assert "scheduled reminder" in str(out)
        rows = {r.text: r for r in svc_of(app).reminders()}
        assert rows["call mum"].kind == "at" and rs.parse_ts(rows["call mum"].spec) == _berlin(2026, 12, 1, 12, 0)
        assert (rows["stand up"].kind, rows["stand up"].spec) == ("cron", "0 9 * * mon-fri")
    finally:
        app.close()


def _events(home: Home) -> list[tuple[str, dict[str, Any]]]:
    return reminder_events(home)


def test_snooze_moves_a_one_shot_and_adds_one_to_a_repeating_reminder(home: Home) -> None:
    clock = FakeClock(T0, zone=BERLIN)
    app = open_app(home, clock)
    try:
        svc = svc_of(app)
        once = app.worker.call(lambda: svc.schedule("tea", at="in 5 minutes"))
        daily = app.worker.call(lambda: svc.schedule("stand up", every="day at 11"))
        moved = app.worker.call(lambda: svc.snooze(once.id))  # default: 10 minutes from now
        assert not app.store.state.reminders[once.id].active
        assert moved.active and moved.text == "tea" and rs.parse_ts(moved.spec) == T0 + timedelta(minutes=10)
        cancelled = [d for t, d in _events(home) if t == "reminder.cancelled"]
        assert cancelled == [{"reminder": once.id, "reason": "snoozed"}]
        extra = app.worker.call(lambda: svc.snooze(daily.id, "tomorrow at 8"))
        assert app.store.state.reminders[daily.id].active  # the schedule goes on
        assert rs.parse_ts(extra.spec) == _berlin(2026, 12, 1, 8, 0) and extra.text == "stand up"
        before = app.store.log.last_seq
        with pytest.raises(ReminderError):
            app.worker.call(lambda: svc.snooze(daily.id, "whenever"))
        assert app.store.log.last_seq == before  # nothing written
    finally:
        app.close()
