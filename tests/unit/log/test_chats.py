"""Deleting (recoverably), restoring, pinning a conversation and choosing its model: each
one local event, folded into the session; the same after a reopen and a full replay, and
old logs (which have none of these events) replay as before."""

from __future__ import annotations

import shutil

import pytest
from memtray.core.base.home import Home
from memtray.core.log import chats, transcript
from memtray.core.log.events import SCHEMA, Message
from memtray.core.log.origin import EXPORTED
from memtray.core.log.projections import replay
from memtray.core.log.store import Store

from tests.unit.log.test_golden import _records


def _keys(store: Store, *, deleted: bool = False) -> list[str]:
    return [i.key for i in transcript.sessions(store.state) if (i.deleted is not None) == deleted]


def test_delete_restore_keeps_every_message(store: Store) -> None:
    store.append(Message(role="user", content="Plan the Lisbon trip"), session="chat-1")
    store.append(Message(role="assistant", content="Flights first."), session="chat-1")
    store.append(Message(role="user", content="hi"), session="chat-2")
    before = transcript.snapshot(store.state, "chat-1")
    chats.delete(store, "chat-1")
    assert _keys(store) == ["chat-2"] and _keys(store, deleted=True) == ["chat-1"]
    with pytest.raises(chats.ChatError, match="already deleted"):
        chats.delete(store, "chat-1")
    assert transcript.snapshot(store.state, "chat-1").messages == before.messages  # hidden, not erased
    chats.restore(store, "chat-1")
    assert _keys(store) == ["chat-2", "chat-1"] and not _keys(store, deleted=True)
    with pytest.raises(chats.ChatError, match="not deleted"):
        chats.restore(store, "chat-1")
    with pytest.raises(chats.ChatError, match="no conversation 'nope'"):
        chats.delete(store, "nope")


def test_writing_in_a_deleted_conversation_brings_it_back(store: Store) -> None:
    store.append(Message(role="user", content="hello"), session="quick")
    chats.delete(store, "quick")
    store.append(Message(role="assistant", content="a late reply"), session="quick")
    assert _keys(store, deleted=True) == ["quick"]  # a reply alone does not
    store.append(Message(role="user", content="again"), session="quick")
    assert _keys(store) == ["quick"]


def test_pinned_ones_come_first_each_group_by_date(store: Store) -> None:
    for key in ("a", "b", "c", "d"):
        store.append(Message(role="user", content=key), session=key)
    assert _keys(store) == ["d", "c", "b", "a"]
    assert chats.pin(store, "b") and chats.pin(store, "a")
    assert not chats.pin(store, "a")  # already: nothing appended
    assert _keys(store) == ["b", "a", "d", "c"]
    assert chats.pin(store, "b", False)
    assert _keys(store) == ["a", "d", "c", "b"]
    assert [i.pinned for i in transcript.sessions(store.state)] == [True, False, False, False]


def test_a_conversation_chooses_its_model(store: Store) -> None:
    seq = store.state.last_seq
    assert chats.choose_model(store, "chat-new", " ollama/llava ") == "ollama/llava"  # before its first message
    assert chats.model_of(store.state, "chat-new") == "ollama/llava"
    chats.choose_model(store, "chat-new", "ollama/llava")
    assert store.state.last_seq == seq + 1  # the same choice again appends nothing
    for bad in ("two words", "x" * (chats.MAX_MODEL + 1), "bell\x07"):
        with pytest.raises(chats.ChatError, match="is not a model name"):
            chats.choose_model(store, "chat-new", bad)
    chats.choose_model(store, "chat-new", "")
    assert chats.model_of(store.state, "chat-new") is None
    assert chats.model_of(store.state, "never-seen") is None


def test_the_same_after_a_full_replay(home: Home) -> None:
    s = Store.open(home)
    for key in ("a", "b", "c"):
        s.append(Message(role="user", content=key), session=key)
    chats.pin(s, "a")
    chats.delete(s, "b")
    chats.choose_model(s, "c", "openai/gpt-4o")
    live = transcript.sessions(s.state)
    s.close()
    reopened = Store.open(home)  # from the checkpoint
    try:
        assert transcript.sessions(reopened.state) == live
    finally:
        reopened.close()
    shutil.rmtree(home.root / "state", ignore_errors=True)
    again = Store.open(home)  # a full replay
    try:
        assert transcript.sessions(again.state) == live
        assert [(i.key, i.pinned, i.deleted is not None, i.model) for i in live] == [
            ("a", True, False, None), ("c", False, False, "openai/gpt-4o"), ("b", False, True, None)]
    finally:
        again.close()


def test_golden_fixtures_replay() -> None:
    state = replay(SCHEMA.upcast(r) for r in _records("v1-chats.jsonl"))
    s = state.sessions["chat-2"]
    assert (s.pinned, s.deleted, s.model, s.title) == (True, None, "ollama/llava", "Which tent for Lisbon?")
    old = replay(SCHEMA.upcast(r) for r in _records("v1-titles.jsonl"))  # before these events existed
    assert (old.sessions["chat-1"].pinned, old.sessions["chat-1"].deleted, old.sessions["chat-1"].model) == (
        False, None, None)


def test_they_stay_on_this_device() -> None:
    assert not {"session.deleted", "session.restored", "session.pinned", "session.model"} & EXPORTED
