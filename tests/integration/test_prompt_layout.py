"""Prompt layout 3 end to end (real litellm, the scripted server, real consolidations): the
turn after a consolidation repeats the previous request whole, memory is never stale (the
change is told in a note), the prompt starts over at a re-base, and time travel rebuilds
every request byte for byte."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from memtray.core.agent.timetravel import reconstruct
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message

from tests.fixtures.llm_server import Response, ScriptedLLMServer, reply, tool_call
from tests.fixtures.receipting import with_receipts
from tests.support import drain_consolidations

JSON = dict[str, Any]
FACT = "User keeps bees on the roof"


def is_consolidation(req: JSON) -> bool:
    return any(t.get("function", {}).get("name") == "save_memory" for t in req.get("tools") or [])


def respond(req: JSON) -> Response:
    if is_consolidation(req):
        return tool_call("save_memory", {"history_entry": "[2026-12-03 10:00] Bees.",
                                         "memory_update": f"# Memory\n\n- {FACT} [#1]\n", "removed_facts": []})
    return reply("Noted.")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 12, 3, 10, 0, tzinfo=UTC))


@pytest.fixture
def app(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock) -> Iterator[App]:
    llm_server.responder = with_receipts(respond)  # a careful model sends receipts (issue 27)
    a = App.open(home, config=Config(model="openai/test-model", api_base=llm_server.base_url, llm_retries=0,
                                     memory_window=8, idle_consolidate_minutes=0),
                 clock=clock, ids=seeded_ids(clock), start_services=False)
    yield a
    a.close()


def turn(app: App, clock: FakeClock, text: str) -> None:
    clock.advance(60)
    app.run(app.agent.turn("quick", text, stream=False))
    drain_consolidations(app)


def chats(server: ScriptedLLMServer) -> list[list[JSON]]:
    return [r["messages"] for r in server.chat_requests if not is_consolidation(r.json)]


def reuse(a: list[JSON], b: list[JSON]) -> float:
    """The share of request ``a`` that request ``b`` repeats as an identical prefix (bytes)."""
    x, y = json.dumps(a).encode(), json.dumps(b).encode()
    n = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y)))
    return n / len(x)


def rebased(app: App) -> list[bool]:
    return [bool(Message.of(r).rebase) for r in app.store.log.records()
            if r.type == Message.TYPE and r.data["role"] == "user"]


def test_the_turn_after_a_consolidation_repeats_the_previous_request(
        app: App, llm_server: ScriptedLLMServer, clock: FakeClock) -> None:
    for i in range(4):  # 8 messages: the window is full after the fourth turn
        turn(app, clock, f"turn {i}: I keep bees on the roof")
    assert FACT in app.store.state.memory  # consolidated in the background after the fourth turn
    turn(app, clock, "what do you know about me?")
    before, after = chats(llm_server)[-2:]
    assert FACT not in after[0]["content"]  # the system prompt keeps its snapshot ...
    assert after[0] == before[0]
    note = after[-1]["content"]
    assert note.startswith("[Memory changed") and f"> + [Memory] {FACT}" in note  # ... and is told the change
    assert reuse(before, after) > 0.9  # all of it but the closing of the list
    assert [m["content"] for m in after[1:len(before) - 1]] == [m["content"] for m in before[1:-1]]
    assert rebased(app) == [True, False, False, False, False]

    recs = list(app.store.log.records())
    turns = [r.seq for r in recs if r.type == Message.TYPE and r.data.get("request_hash")]
    rebuilt = reconstruct(recs, turns)
    assert all(rebuilt[s].match for s in turns), [rebuilt[s].notes for s in turns]


def test_the_prompt_starts_over_after_a_window_folded_and_after_a_pause(
        app: App, llm_server: ScriptedLLMServer, clock: FakeClock) -> None:
    for i in range(6):
        turn(app, clock, f"turn {i}: I keep bees on the roof")
    # consolidations after turns 4 and 6 (window 8, keep 4) folded 4 + 4 messages: a window, so
    # the next turn starts over
    assert rebased(app) == [True] + [False] * 5
    turn(app, clock, "and now?")
    assert rebased(app)[-1] is True
    last = chats(llm_server)[-1]
    assert FACT in last[0]["content"] and "[Memory changed" not in json.dumps(last[1:])
    s = app.store.state.sessions["quick"]
    # the system prompt and the messages since the pointer (the reply to it came after)
    assert s.prompt_base == s.last_consolidated == 8 and len(last) == 1 + (s.count - 1 - s.last_consolidated)
    turn(app, clock, "one more")
    assert rebased(app)[-1] is False
    clock.advance(6 * 60)  # a pause longer than a provider keeps a cached prefix
    turn(app, clock, "back again")
    assert rebased(app)[-1] is True

    recs = list(app.store.log.records())
    turns = [r.seq for r in recs if r.type == Message.TYPE and r.data.get("request_hash")]
    rebuilt = reconstruct(recs, turns)
    assert all(rebuilt[s].match for s in turns)
