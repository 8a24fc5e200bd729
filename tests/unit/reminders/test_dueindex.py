"""The next-due index of reminders: derived from the log, brought up to date from its
tail, rebuilt when it does not match, and answering "what is due" without a scan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memtray.core.base.clock import FakeClock, IdGenerator
from memtray.core.base.home import Home
from memtray.core.log.events import ReminderCancelled, ReminderFired, ReminderScheduled
from memtray.core.log.store import Store
from memtray.core.reminders.dueindex import INDEX_NAME, DueIndex, next_at
from memtray.core.reminders.spec import Schedule, occurrence_key

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _store(tmp_path: Path) -> Store:
    clock = FakeClock(NOW)
    return Store.open(Home(tmp_path / "home"), clock=clock, ids=IdGenerator(clock))


def _schedule(store: Store, rid: str, kind: str, spec: str) -> None:
    store.append(ReminderScheduled(reminder=rid, text=rid, kind=kind, spec=spec, tz="UTC", mode="notify"))


def _open(store: Store) -> DueIndex:
    idx = DueIndex.open(store.home.state)
    idx.sync(store.log, store.state, Schedule.of)
    return idx


def test_due_and_earliest_follow_the_log(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _schedule(store, "soon", "at", (NOW + timedelta(minutes=5)).isoformat())
    _schedule(store, "later", "at", (NOW + timedelta(hours=5)).isoformat())
    _schedule(store, "hourly", "every", "1h")
    idx = _open(store)
    try:
        assert idx.count() == 3
        assert idx.earliest() == NOW + timedelta(minutes=5)
        assert idx.due_ids(NOW) == []
        assert idx.due_ids(NOW + timedelta(minutes=61)) == ["soon", "hourly"]
        # a listener's view of new records: cancelling the soonest moves the earliest on
        rec = store.append(ReminderCancelled(reminder="soon", reason="user"))
        idx.note([rec], store.state, Schedule.of)
        assert idx.earliest() == NOW + timedelta(hours=1)
        # firing a recurring one moves it to its next occurrence
        fired = store.append(ReminderFired(reminder="hourly", occurrence=occurrence_key(NOW + timedelta(hours=1)), late=False))
        idx.note([fired], store.state, Schedule.of)
        assert idx.due_ids(NOW + timedelta(minutes=61)) == []
        assert idx.due_ids(NOW + timedelta(hours=2)) == ["hourly"]
    finally:
        idx.close()
        store.close()


def test_reopen_applies_only_the_tail_and_a_mismatch_rebuilds(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _schedule(store, "a", "at", (NOW + timedelta(minutes=30)).isoformat())
    idx = _open(store)
    idx.close()
    # written while the index was closed (a one-shot CLI command): picked up from the tail
    _schedule(store, "b", "at", (NOW + timedelta(minutes=10)).isoformat())
    idx = DueIndex.open(store.home.state)
    assert idx.sync(store.log, store.state, Schedule.of) == 1  # only b was looked at
    assert idx.earliest() == NOW + timedelta(minutes=10)
    assert idx.sync(store.log, store.state, Schedule.of) == 0  # up to date: nothing to do
    idx.close()
    # a damaged or foreign file is derived data: rebuilt from the state
    (store.home.state / INDEX_NAME).write_bytes(b"not a database at all" * 100)
    for suffix in ("-wal", "-shm"):
        (store.home.state / f"{INDEX_NAME}{suffix}").unlink(missing_ok=True)
    idx = _open(store)
    try:
        assert idx.count() == 2 and idx.earliest() == NOW + timedelta(minutes=10)
    finally:
        idx.close()
        store.close()


def test_next_at_never_counts_a_fired_occurrence_again(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _schedule(store, "r", "every", "30m")
    r = store.state.reminders["r"]
    first = next_at(r, Schedule.of)
    assert first is not None and first > NOW.timestamp()
    key = occurrence_key(datetime.fromtimestamp(first, UTC))
    store.append(ReminderFired(reminder="r", occurrence=key, late=False))
    second = next_at(store.state.reminders["r"], Schedule.of)
    assert second is not None and second == first + 1800
    store.append(ReminderCancelled(reminder="r", reason="user"))
    assert next_at(store.state.reminders["r"], Schedule.of) is None
    store.close()
