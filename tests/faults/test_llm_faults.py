"""LLM faults on the consolidation side, and a 5 MB reply, through real litellm and the scripted server.

Every fault has one defined outcome (the table is in docs/RELIABILITY.md): a
``consolidation.failed`` event with a plain reason, the pointer and MEMORY.md
unchanged, the messages still there to consolidate -- and the next attempt,
with a working model, consolidates exactly the same range. Retryable faults
(429 with Retry-After, 5xx) are retried first, honouring Retry-After.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.log.projections import replay
from memtray.core.log.segments import verify
from memtray.core.memory.consolidation import ConsolidationFailedError

from tests.crash.harness import check_app
from tests.faults.support import open_app
from tests.fixtures.llm_server import (
    ScriptedLLMServer,
    delay,
    error,
    hang,
    huge_reply,
    malformed_sse,
    reply,
    reset_mid_stream,
    tool_call,
)

# litellm's streaming path warns once per process about a pydantic TypedDict (not ours)
pytestmark = pytest.mark.filterwarnings("ignore:.*on TypedDict class .* using the `ReadOnly` qualifier:UserWarning")

GOOD = {"history_entry": "[2026-01-01 10:00] Talked about tea.", "memory_update": "## Prefs\n\n- Likes tea\n",
        "removed_facts": [], "receipts": [{"fact": "Likes tea", "messages": [1], "quote": "I like tea"}]}
FIVE_MB = 5 * 1024 * 1024


def _app(home: Home, server: ScriptedLLMServer, **kw: Any) -> Any:
    base: dict[str, Any] = {"model": "openai/test-model", "api_base": server.base_url, "llm_retries": 0,
                            "llm_timeout": 5.0, "memory_window": 1000, "consolidation_timeout": 30.0}
    base.update(kw)
    return open_app(home, **base)


def _seed(app: Any, n: int = 3) -> None:
    for i in range(n):
        app.store.append(Message(role="user", content=f"I like tea, note {i}"), session="quick")
        app.store.append(Message(role="assistant", content="noted"), session="quick")


FAULTS = [
    pytest.param(lambda: hang(), {"llm_timeout": 1.0}, "did not answer in time", id="timeout"),
    pytest.param(lambda: delay(3, tool_call("save_memory", GOOD)), {"consolidation_timeout": 1.0},
                 "timed out after 1s", id="consolidation-timeout"),
    pytest.param(lambda: error(429, headers={"Retry-After": "3"}), {}, "rate limited (429)", id="429"),
    pytest.param(lambda: error(500), {}, "provider failed (500)", id="500"),
    pytest.param(lambda: reset_mid_stream(), {}, "broke off", id="reset-mid-reply"),
    pytest.param(lambda: malformed_sse(), {}, "malformed", id="malformed-body"),
    pytest.param(lambda: tool_call("save_memory", '{"history_entry": "x", "memory_upd'), {},
                 "save_memory arguments are not valid JSON", id="truncated-tool-json"),
    pytest.param(lambda: tool_call("save_memory", {"history_entry": 3, "memory_update": "x"}), {},
                 "history_entry must be a string", id="wrong-types"),
    pytest.param(lambda: reply("I summarised it for you."), {}, "without calling save_memory", id="no-tool-call"),
    pytest.param(lambda: huge_reply(FIVE_MB), {}, "without calling save_memory", id="5MB-text"),
    pytest.param(lambda: tool_call("save_memory", {**GOOD, "memory_update": "- x\n" * (FIVE_MB // 4)}), {},
                 "memory_update is too long", id="5MB-memory-update"),
]


@pytest.mark.parametrize(("fault", "cfg", "reason"), FAULTS)
def test_consolidation_fault_loses_nothing(tmp_path: Path, llm_server: ScriptedLLMServer, fault: Any,
                                           cfg: dict[str, Any], reason: str) -> None:
    home = Home.resolve(tmp_path / "home")
    app = _app(home, llm_server, **cfg)
    try:
        _seed(app)
        cons = app.consolidation
        before = app.store.state.copy()
        llm_server.script(fault())
        with pytest.raises(ConsolidationFailedError) as exc:
            app.run(cons.consolidate("quick", trigger="manual"))
        assert reason in str(exc.value), str(exc.value)
        assert "Nothing was lost" in exc.value.hint
        failed = [r for r in app.store.log.records() if r.type == "consolidation.failed"]
        assert len(failed) == 1 and reason in failed[0].data["reason"] and failed[0].data["retry_after"] == 60.0
        s = app.store.state.sessions["quick"]
        assert s.last_consolidated == before.sessions["quick"].last_consolidated == 0
        assert s.messages == before.sessions["quick"].messages
        assert app.store.state.memory == "" and app.store.state.memory_revisions == 0
        assert not cons.due("quick")  # backoff: not retried on the next turn
        # the next attempt, with a working model, consolidates the same messages
        llm_server.script(tool_call("save_memory", GOOD))
        out = app.run(cons.consolidate("quick", trigger="manual"))
        assert (out.start, out.end) == (0, 6) and "Likes tea" in app.store.state.memory
    finally:
        app.close()
    check_app(home.root, set(), fsck=True)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retryable_errors_are_retried_honouring_retry_after(tmp_path: Path, llm_server: ScriptedLLMServer,
                                                            status: int) -> None:
    home = Home.resolve(tmp_path / "home")
    app = _app(home, llm_server, llm_retries=2)
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    app.llm._sleep = fake_sleep
    try:
        _seed(app)
        llm_server.script(error(status, headers={"Retry-After": "7"}), tool_call("save_memory", GOOD))
        out = app.run(app.consolidation.consolidate("quick", trigger="manual"))
        assert out.end == 6 and "Likes tea" in app.store.state.memory
        assert len(slept) == 1
        if status == 429:
            assert slept == [7.0]
        assert not [r for r in app.store.log.records() if r.type == "consolidation.failed"]
    finally:
        app.close()


@pytest.mark.parametrize("stream", [True, False])
def test_five_megabyte_reply_is_delivered_and_logged_whole(tmp_path: Path, llm_server: ScriptedLLMServer,
                                                          stream: bool) -> None:
    home = Home.resolve(tmp_path / "home")
    app = _app(home, llm_server, llm_timeout=60.0)
    try:
        llm_server.script(huge_reply(FIVE_MB))
        got: list[str] = []
        res = app.run(app.agent.turn("quick", "tell me everything", on_delta=got.append, stream=stream))
        assert len(res.reply) == FIVE_MB
        if stream:
            assert "".join(got) == res.reply and len(got) >= FIVE_MB // (64 * 1024)
        msg = [r for r in app.store.log.records() if r.type == "message"][-1]
        assert msg.data["role"] == "assistant" and len(msg.data["content"]) == FIVE_MB
        # the next prompt would carry it: it is over the token budget, so consolidation is due
        assert app.consolidation._over_budget("quick")
    finally:
        app.close()
    count, damages = verify(home.events)
    assert damages == [] and count >= 3
    size = sum(p.stat().st_size for p in home.events.glob("*.jsonl"))
    assert FIVE_MB < size < FIVE_MB + 64 * 1024
    check_app(home.root, set())
    again = open_app(home)
    try:
        assert again.store.state.to_json() == replay(again.store.log.records()).to_json()
        assert len(again.store.state.sessions["quick"].messages[-1]["content"]) == FIVE_MB
    finally:
        again.close()


def test_turn_failures_keep_the_user_message(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    """The turn side (more in tests/integration/test_ask.py): each failure is a turn.failed
    after the user's message; retry answers the same message."""
    from memtray.core.base.errors import LLMBadResponse, LLMError

    home = Home.resolve(tmp_path / "home")
    app = _app(home, llm_server, llm_timeout=2.0)
    try:
        for fault in (malformed_sse(), reset_mid_stream("half an ans"), tool_call("remember", '{"fact": "tr')):
            llm_server.script(fault, reply("recovered"))
            try:
                res = app.run(app.agent.turn("quick", "hello?", stream=True))
            except LLMError as exc:
                assert isinstance(exc, LLMBadResponse) or "malformed" in str(exc) or "broke off" in str(exc)
                res = app.run(app.agent.retry("quick", stream=True))
            assert res.reply == "recovered"
        kinds = [(r.type, r.data.get("role")) for r in app.store.log.records()]
        assert kinds.count(("message", "user")) == 3 and kinds.count(("message", "assistant")) >= 3
        tool = [r.data["content"] for r in app.store.log.records() if r.data.get("role") == "tool"]
        assert tool and tool[0].startswith("error: the arguments for remember are not valid JSON")
        assert json.dumps(app.store.state.to_json())  # serialisable, nothing half-written
    finally:
        app.close()
