"""What the Chats list shows of a conversation, folded from the log: its title (the first
line the user wrote, an imported conversation's, or one the user set), when it began, its
last words, and the turn that failed until a reply; the same after a full replay."""

from __future__ import annotations

import shutil

import pytest
from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.log import transcript
from memtray.core.log.events import ImportItem, Message, TurnFailed
from memtray.core.log.projections import first_line
from memtray.core.log.store import Store

from tests.unit.log.test_golden import _records


def _info(store: Store, key: str) -> transcript.SessionInfo:
    return next(i for i in transcript.sessions(store.state) if i.key == key)


def test_title_date_preview_rename_and_import(store: Store) -> None:
    store.append(Message(role="user", content="Context (from my clipboard):\n```\nraise KeyError\n```\n\n"
                         "Why does this fail?"), session="chat-1")
    store.append(Message(role="assistant", content="Because the key is missing.\nUse .get()."), session="chat-1")
    info = _info(store, "chat-1")
    assert info.title == "Why does this fail?" and info.titled == ""  # not the clipboard's label
    assert info.preview == "Because the key is missing."
    assert info.first_ts is not None and info.first_ts <= str(info.last_ts)
    assert transcript.rename(store, "chat-1", "  KeyError   question ") == "KeyError question"
    store.append(Message(role="user", content="thanks"), session="chat-1")
    info = _info(store, "chat-1")
    assert (info.title, info.titled, info.preview) == ("KeyError question", "user", "thanks")
    with pytest.raises(MemtrayError):
        transcript.rename(store, "chat-1", "   ")
    with pytest.raises(MemtrayError):
        transcript.rename(store, "chat-1", "x" * (transcript.MAX_TITLE + 1))
    # an imported conversation keeps its title
    store.append(Message(role="user", content="hola"), session="chatgpt:c1")
    store.append(ImportItem(import_id="I", source="chatgpt", key="c1", kind="conversation", digest="d",
                            session="chatgpt:c1", messages=1, title="Spanish lessons"), session="chatgpt:c1")
    assert (_info(store, "chatgpt:c1").title, _info(store, "chatgpt:c1").titled) == ("Spanish lessons", "import")


def test_a_failed_turn_keeps_its_mark_until_a_reply(store: Store) -> None:
    store.append(Message(role="user", content="hello"), session="quick")
    store.append(TurnFailed(error="the provider refused the key", kind="LLMAuthError"), session="quick")
    snap = transcript.snapshot(store.state, "quick")
    assert snap.messages[-1]["failed"] == {"error": "the provider refused the key", "kind": "LLMAuthError"}
    assert _info(store, "quick").failed
    store.append(Message(role="assistant", content=None,
                         tool_calls=[{"id": "t", "type": "function", "function": {"name": "x", "arguments": "{}"}}]),
                 session="quick")
    assert _info(store, "quick").failed  # a tool call is not a reply
    store.append(Message(role="assistant", content="hi!"), session="quick")
    snap = transcript.snapshot(store.state, "quick")
    assert "failed" not in snap.messages[0] and not _info(store, "quick").failed


def test_a_full_replay_gives_the_same(home: Home) -> None:
    s = Store.open(home)
    s.append(Message(role="user", content="Plan the trip"), session="a")
    transcript.rename(s, "a", "Trip")
    s.append(Message(role="user", content="x"), session="b")
    s.append(TurnFailed(error="boom"), session="b")
    live = transcript.sessions(s.state)
    s.close()
    shutil.rmtree(home.root / "state", ignore_errors=True)
    again = Store.open(home)
    try:
        assert transcript.sessions(again.state) == live
    finally:
        again.close()


def test_golden_titles_fixture_replays() -> None:
    from memtray.core.log.events import SCHEMA
    from memtray.core.log.projections import replay

    state = replay(SCHEMA.upcast(r) for r in _records("v1-titles.jsonl"))
    s = state.sessions["chat-1"]
    assert (s.title, s.titled, s.preview) == ("Lisbon trip", "user", "Sure: flights first.")


@pytest.mark.parametrize(("text", "want"), [
    ("hello\nworld", "hello"),
    ("\n\n  spaced   out  \n", "spaced out"),
    ("```\ncode only\n```", "code only"),
    ("Look at this:\n```py\nx = 1\n```\nwhat is x?", "what is x?"),
    ("a" * 100, "a" * 79 + "…"),
])
def test_first_line(text: str, want: str) -> None:
    assert first_line(text, 80) == want
