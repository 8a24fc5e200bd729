"""core/log/transcript.py: what a front end shows of the conversations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.base.home import Home
from memtray.core.log import transcript
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import Message, SessionReset
from memtray.core.log.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(Home.resolve(tmp_path / "home"))
    yield s
    s.close()


def _say(store: Store, session: str, *texts: str) -> None:
    for i, text in enumerate(texts):
        store.append(Message(role="user" if i % 2 == 0 else "assistant", content=text), session=session)


def test_snapshot_is_a_copy_of_the_visible_messages(store: Store) -> None:
    _say(store, "quick", "hello", "hi")
    store.append(Message(role="assistant", content=None, tool_calls=[{"id": "t1", "function": {"name": "remember", "arguments": "{}"}}]),
                 session="quick")
    store.append(Message(role="tool", content="ok", tool_call_id="t1"), session="quick")
    snap = transcript.snapshot(store.state, "quick")
    assert [m.get("content") for m in snap.messages] == ["hello", "hi", None]  # the tool result is not shown
    assert (snap.base, snap.count, snap.resets) == (0, 4, 0)
    assert snap.next_seq == store.log.last_seq + 1 and snap.start_seq == snap.messages[0]["seq"]
    snap.messages[0]["content"] = "changed by a view"
    assert store.state.sessions["quick"].messages[0]["content"] == "hello"  # the live state is untouched


def test_snapshot_of_a_session_without_events_and_after_a_reset(store: Store) -> None:
    empty = transcript.snapshot(store.state, "nobody")
    assert empty.messages == [] and empty.start_seq == empty.next_seq == 1
    _say(store, "quick", "one", "two")
    store.append(SessionReset(reason="user"), session="quick")
    _say(store, "quick", "three")
    snap = transcript.snapshot(store.state, "quick")
    assert [m["content"] for m in snap.messages] == ["three"]
    assert (snap.base, snap.count, snap.resets) == (2, 3, 1)


def test_sessions_most_recent_first(store: Store) -> None:
    _say(store, "a", "first")
    _say(store, "b", "second")
    _say(store, "a", "third")
    assert [s.key for s in transcript.sessions(store.state)] == ["a", "b"]


def test_earlier_pages_read_the_log_newest_first(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "home")
    store = Store.open(home, segment_bytes=600)  # many small segments
    try:
        for i in range(12):
            _say(store, "quick", f"q{i}", f"a{i}")
            _say(store, "other", "noise")
        store.append(SessionReset(reason="user"), session="quick")
        _say(store, "quick", "now")
        log: EventLog = store.log
        segments = len(list(home.events.glob("*.jsonl")))
        assert segments > 3
        start = transcript.snapshot(store.state, "quick").start_seq
        page = transcript.earlier(log, "quick", start, limit=5)
        assert [m.get("content") for m in page.messages] == ["q10", "a10", "q11", "a11", None]
        assert page.messages[-1]["kind"] == "reset" and not page.at_start
        older = transcript.earlier(log, "quick", int(page.messages[0]["seq"]), limit=100)
        assert [m["content"] for m in older.messages] == [t for i in range(10) for t in (f"q{i}", f"a{i}")]
        assert older.at_start
        assert all(m["seq"] < page.messages[0]["seq"] for m in older.messages)
    finally:
        store.close()
