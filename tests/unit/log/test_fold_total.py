"""The fold never raises, and reads every event the door lets in without calling it unfoldable.

The door and the fold are two readings of the same classes: whatever shape the validator
accepts (optional members absent or null, empty lists, members of a newer version) the fold
must take. A record the door would refuse (a log written before the door existed) is named
in ``State.unfoldable`` instead of raising, which the doctor explains and repairs."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from memtray.core.log.door import Door, Refusal, Source
from memtray.core.log.events import Record
from memtray.core.log.projections import State, apply, replay

from tests.unit.log.payload_strategies import JSON, TEXT, valid_event

SRC = Source("peer", "d0123456789ab")
TS = "2026-12-01T10:00:00.000Z"


def _records(events: list[tuple[str, dict[str, Any]]], sessions: list[str | None]) -> list[Record]:
    return [Record(i, f"01J{i:023d}", TS, t, 1, sessions[i % len(sessions)], d)
            for i, (t, d) in enumerate(events, 1)]


@given(st.lists(valid_event(), min_size=1, max_size=25), st.lists(st.none() | st.sampled_from(["quick", "cli"]),
                                                                   min_size=1, max_size=3))
def test_the_fold_reads_every_event_the_door_lets_in(events: list[tuple[str, dict[str, Any]]],
                                                     sessions: list[str | None]) -> None:
    door = Door()
    state = State()
    for rec in _records(events, sessions):
        got = door.record(rec, SRC)
        assert not isinstance(got, Refusal), got.reason  # the strategy makes only valid events
        apply(state, got)
        assert not state.unfoldable, (rec.type, rec.data, state.unfoldable)
    assert state.last_seq == len(events)
    assert State.from_json(state.to_json()).to_json() == state.to_json()  # and it checkpoints


@given(st.lists(st.tuples(st.sampled_from(["message", "reminder.cancelled", "reminder.scheduled", "memory.written",
                                           "consolidation.completed", "sync.pulled", "session.reset",
                                           "reminder.fired", "memory.reviewed", "context.changed"]) | TEXT,
                          JSON, JSON | st.none(), JSON), min_size=1, max_size=20))
def test_the_fold_never_raises_on_any_record(raw: list[tuple[Any, Any, Any, Any]]) -> None:
    # what an old log may hold: any JSON in any member (the codec never checked payloads)
    recs = [Record(i, f"id{i}", TS, t, v if isinstance(v, int) else 1, s, d) for i, (t, d, s, v) in enumerate(raw, 1)]
    state = replay(recs)
    assert state.last_seq == len(recs)


def test_a_cancel_without_its_reminder_is_named_not_raised() -> None:
    bricked = Record(7, "01JX", TS, "reminder.cancelled", 1, None, {"reason": "user"})
    state = replay([bricked])
    assert state.unfoldable == {"7": "reminder.cancelled: BadPayload: a reminder.cancelled event without reminder"}
    assert state.unfoldable_count == 1
    assert "missing required field(s): reminder" in Door().record(bricked._replace(id="01JX0000000000000000000000"),
                                                                 SRC).reason  # type: ignore[union-attr]
