"""`memtray ask` and the agent turn against the scripted server, through real litellm."""

from __future__ import annotations

import itertools
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.errors import (
    LLMAuthError,
    LLMError,
    LLMRateLimited,
    LLMTimeout,
)
from memtray.core.base.home import Home

from tests.fixtures.llm_server import (
    ScriptedLLMServer,
    error,
    hang,
    malformed_sse,
    reply,
    reset_mid_stream,
    tool_call,
)
from tests.support import cli_here


def _config(server: ScriptedLLMServer, **kw: Any) -> Config:
    base: dict[str, Any] = {"model": "openai/test-model", "api_base": server.base_url, "llm_retries": 0,
                            "llm_timeout": 5.0, "memory_window": 1000}
    base.update(kw)
    return Config(**base)


def _app(home: Home, server: ScriptedLLMServer, **kw: Any) -> App:
    return App.open(home, config=_config(server, **kw))


def _messages(home: Home) -> list[dict[str, Any]]:
    out = cli_here(home.root, "events", "tail", "-n", "1000", "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_cli_ask_prints_reply_and_logs_both_messages(home: Home, llm_server: ScriptedLLMServer) -> None:
    llm_server.script(reply("Hello, Ada!"))
    out = cli_here(home.root, "ask", "hello", MEMTRAY_MODEL="openai/test-model",
                  MEMTRAY_API_BASE=llm_server.base_url, OPENAI_API_KEY="sk-test-123")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Hello, Ada!\n"
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-test-123"
    events = _messages(home)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    msgs = [e for e in events if e["type"] == "message"]
    assert [(m["data"]["role"], m["data"]["content"]) for m in msgs] == [("user", "hello"), ("assistant", "Hello, Ada!")]
    assert msgs[0]["session"] == "cli" and msgs[0]["data"]["context"].startswith("[Runtime context:")
    assert "sk-test-123" not in (home.root / "events" / "000001.jsonl").read_text()


@pytest.mark.parametrize(
    ("response", "needle"),
    [
        (error(401), "rejected the api key"),
        (error(429, headers={"Retry-After": "1"}), "rate limited"),
        (error(500), "provider failed (500)"),
        (malformed_sse(), "malformed"),
    ],
)
def test_cli_provider_errors_are_one_line_and_keep_the_message(
    home: Home, llm_server: ScriptedLLMServer, response: Any, needle: str
) -> None:
    llm_server.script(response, response, response)  # the CLI retries retryable errors twice
    out = cli_here(home.root, "ask", "are you there?", MEMTRAY_MODEL="openai/test-model",
                  MEMTRAY_API_BASE=llm_server.base_url, OPENAI_API_KEY="sk-x")
    assert out.returncode == 1
    first = out.stderr.splitlines()[0]
    assert first.startswith("memtray: error: "), out.stderr
    assert needle in first.lower() or needle in out.stderr.lower(), out.stderr
    assert "Traceback" not in out.stderr
    types = [(e["type"], e["data"].get("role")) for e in _messages(home)]
    assert types == [("message", "user"), ("turn.failed", None)]


def test_cli_connection_refused(home: Home) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    out = cli_here(home.root, "ask", "hi", MEMTRAY_MODEL="openai/test-model",
                  MEMTRAY_API_BASE=f"http://127.0.0.1:{port}/v1", OPENAI_API_KEY="sk-x")
    assert out.returncode == 1 and "cannot connect" in out.stderr, out.stderr
    assert [e["type"] for e in _messages(home)] == ["message", "turn.failed"]


def test_no_model_configured_says_what_to_do(home: Home) -> None:
    out = cli_here(home.root, "ask", "hi")
    assert out.returncode == 1
    assert "no model is configured" in out.stderr and "memtray config set model" in out.stderr


def test_timeout_and_typed_errors_in_process(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _app(home, llm_server, llm_timeout=1.0)
    try:
        for response, exc in [(hang(), LLMTimeout), (error(401), LLMAuthError), (error(429), LLMRateLimited)]:
            llm_server.script(response)
            with pytest.raises(exc):
                app.run(app.agent.turn("quick", "ping", stream=True))
        llm_server.script(reset_mid_stream("partial "))
        with pytest.raises(LLMError):
            app.run(app.agent.turn("quick", "ping", stream=True))
        kinds = [r.type for r in app.store.log.records()]
        assert kinds.count("message") == 4 and kinds.count("turn.failed") == 4
    finally:
        app.close()


def test_retry_after_then_success_and_fallback(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _app(home, llm_server, llm_retries=1, fallback_model="openai/backup-model")
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    app.llm._sleep = fake_sleep
    try:
        llm_server.script(error(429, headers={"Retry-After": "7"}), reply("after retry"))
        assert app.run(app.agent.turn("quick", "one", stream=False)).reply == "after retry"
        assert slept == [7.0]
        llm_server.script(error(500), error(500), reply("from backup"))
        res = app.run(app.agent.turn("quick", "two", stream=False))
        assert res.reply == "from backup"
        assert llm_server.requests[-1]["model"] == "backup-model"
    finally:
        app.close()


def test_streaming_deltas_and_prompt_prefix_is_stable(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _app(home, llm_server)
    try:
        deltas: list[str] = []
        for i in range(4):
            llm_server.script(reply(f"reply number {i} with several words", chunk_size=3))
            app.run(app.agent.turn("quick", f"question {i}", on_delta=deltas.append, stream=True))
        assert "".join(deltas).startswith("reply number 0")
        assert len(deltas) > 8
        reqs = [r["messages"] for r in llm_server.requests]
        systems = {json.dumps(m[0]) for m in reqs}
        assert len(systems) == 1, "the system prompt changed between turns"
        for prev, cur in itertools.pairwise(reqs):
            assert cur[: len(prev)] == prev, "a turn's request must extend the previous one"
            assert cur[len(prev)]["role"] == "assistant"
        assert "[Runtime context:" in reqs[-1][-1]["content"]
    finally:
        app.close()


def test_tool_loop_logs_every_step_and_survives_bad_arguments(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _app(home, llm_server, max_tool_iterations=3)
    try:
        llm_server.script(
            tool_call("remember", '{"fact": "Likes tea"', id="call_bad"),  # truncated JSON
            tool_call("no_such_tool", {"x": 1}, id="call_unknown"),
            tool_call("remember", {"fact": "Likes green tea", "section": "Preferences"}, id="call_ok"),
            reply("Noted."),
        )
        res = app.run(app.agent.turn("quick", "I like green tea", stream=True))
        assert res.reply == "Noted." and res.tool_rounds == 3
        tool_results = [r.data["content"] for r in app.store.log.records() if r.data.get("role") == "tool"]
        assert tool_results[0].startswith("error: the arguments for remember are not valid JSON")
        assert tool_results[1].startswith("error: there is no tool named 'no_such_tool'")
        assert tool_results[2] == "remembered: Likes green tea"
        assert "Likes green tea" in app.store.state.memory
        # the cap: a model that never stops calling tools
        llm_server.script(*[tool_call("remember", {"fact": f"fact {i}"}) for i in range(5)])
        res = app.run(app.agent.turn("quick", "loop", stream=False))
        assert "stopped after 3 rounds" in res.reply
    finally:
        app.close()


def test_cancel_mid_stream_keeps_partial_and_user_message(home: Home, llm_server: ScriptedLLMServer) -> None:
    import threading

    app = _app(home, llm_server)
    try:
        llm_server.script(hang("I was saying "))
        got = threading.Event()
        fut = app.worker.submit(app.agent.turn("quick", "tell me a story", on_delta=lambda _t: got.set()))
        assert got.wait(10)
        fut.cancel()
        import concurrent.futures

        with pytest.raises(concurrent.futures.CancelledError):
            fut.result(10)
        app.run(_settle())
        msgs = [r.data for r in app.store.log.records() if r.type == "message"]
        assert msgs[0]["content"] == "tell me a story"
        # what had streamed when the cancel came: at least the first delta, however the server cut it
        assert msgs[1]["stop"] == "cancelled" and msgs[1]["content"] and "I was saying ".startswith(msgs[1]["content"])
    finally:
        app.close()


async def _settle() -> None:
    import asyncio

    await asyncio.sleep(0.05)


def test_secrets_in_user_message_never_reach_the_log(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _app(home, llm_server)
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    try:
        app.run(app.agent.turn("quick", f"my key is {key} keep it", stream=False))
    finally:
        app.close()
    raw = b"".join(p.read_bytes() for p in Path(home.events).glob("*.jsonl"))
    assert key.encode() not in raw
    assert key not in json.dumps(llm_server.requests[0].json)


def test_non_utf8_and_huge_input(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _app(home, llm_server)
    try:
        res = app.run(app.agent.turn("quick", "caf\udce9 \x00ok", stream=False))
        assert res.reply.endswith("caf\ufffd ok")
        logged = [r.data["content"] for r in app.store.log.records() if r.data.get("role") == "user"]
        assert logged == ["caf\ufffd ok"]
        from memtray.core.agent.loop import InputTooLarge

        with pytest.raises(InputTooLarge):
            app.run(app.agent.turn("quick", "x" * 1_000_001, stream=False))
    finally:
        app.close()
