"""`memtray chats …` as a user runs it (a separate process): list with titles and marks,
rename, delete and restore (nothing erased), pin, a conversation's own model; errors in
words; the ``--json`` shape of docs/CLI.md."""

from __future__ import annotations

import json

from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.log.store import Store

from tests.integration.test_memory_cli import fails, ok

KEYS = {"key", "title", "titled", "started", "last", "preview", "failed", "pinned", "deleted", "model", "scope"}


def _seed(home: Home) -> None:
    s = Store.open(home)
    try:
        s.append(Message(role="user", content="Plan the Lisbon trip"), session="chat-1")
        s.append(Message(role="assistant", content="Flights first."), session="chat-1")
        s.append(Message(role="user", content="What is a monad?"), session="chat-2")
    finally:
        s.close()


def _rows(home: Home, *flags: str) -> list[dict[str, object]]:
    rows = json.loads(ok(home, "chats", "list", "--json", *flags))
    assert all(set(r) == KEYS for r in rows)
    return rows


def test_the_chats_commands(home: Home) -> None:
    _seed(home)
    assert [r["key"] for r in _rows(home)] == ["chat-2", "chat-1"]
    first = _rows(home)[1]
    assert (first["title"], first["preview"], first["pinned"], first["deleted"], first["model"]) == (
        "Plan the Lisbon trip", "Flights first.", False, None, None)

    assert "pinned chat-1" in ok(home, "chats", "pin", "chat-1")
    assert "already pinned" in ok(home, "chats", "pin", "chat-1")
    assert [r["key"] for r in _rows(home)] == ["chat-1", "chat-2"]
    assert "[pinned]" in ok(home, "chats", "list")

    ok(home, "chats", "rename", "chat-2", "Monads", "explained")
    assert _rows(home)[1]["title"] == "Monads explained" and _rows(home)[1]["titled"] == "user"
    fails(home, "chats", "rename", "chat-9", "x", needle="no conversation 'chat-9'")

    out = ok(home, "chats", "delete", "chat-2")
    assert "memtray chats restore chat-2" in out
    assert [r["key"] for r in _rows(home)] == ["chat-1"]
    assert [r["key"] for r in _rows(home, "--deleted")] == ["chat-2"]
    assert [r["key"] for r in _rows(home, "--all")] == ["chat-1", "chat-2"]
    fails(home, "chats", "delete", "chat-2", needle="already deleted")
    ok(home, "chats", "restore", "chat-2")
    assert [r["key"] for r in _rows(home)] == ["chat-1", "chat-2"]
    assert "Monads explained" in ok(home, "chats", "list")

    ok(home, "chats", "model", "chat-1", "ollama/llava")
    assert ok(home, "chats", "model", "chat-1").strip() == "ollama/llava"
    assert _rows(home)[0]["model"] == "ollama/llava"
    fails(home, "chats", "model", "chat-1", "two words", needle="is not a model name")
    ok(home, "chats", "model", "chat-1", "--default")
    assert "(the configured model)" in ok(home, "chats", "model", "chat-1")

    assert [r["scope"] for r in _rows(home)] == [None, None]  # a conversation is global until it chooses
    s = Store.open(home)
    try:
        from memtray.core.memory import scopes

        scopes.choose(s, "chat-2", "work")
    finally:
        s.close()
    assert {r["key"]: r["scope"] for r in _rows(home)} == {"chat-1": None, "chat-2": "work"}
    assert "[scope work]" in ok(home, "chats", "list")

    s = Store.open(home)  # nothing was erased: every message is still in the log
    try:
        said = [r.data.get("content") for r in s.log.records() if r.type == "message"]
    finally:
        s.close()
    assert said == ["Plan the Lisbon trip", "Flights first.", "What is a monad?"]
