"""The usage ledger end to end: real litellm against the scripted server, which reports
``usage`` on every reply (streamed ones only when asked with ``stream_options``).

Each kind of provider call records its tokens, and its cost where litellm knows the
model's price, on the event it writes; the fold sums them and ``memtray usage`` shows them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.llm.client import load_litellm
from memtray.core.log.events import (
    ConsolidationCompleted,
    ConsolidationFailed,
    Message,
    Record,
    UsageRecorded,
)
from memtray.core.log.usage import summarize, zone_of
from memtray.core.memory.consolidation import ConsolidationFailedError

from tests.fixtures.llm_server import Response, ScriptedLLMServer, reply, tool_call
from tests.support import cli_here

JSON = dict[str, Any]
PRICED = "openai/gpt-4o-mini"  # a model litellm's price list knows
EMBED = "openai/text-embedding-3-small"
SAID = "I play chess and I have a cat called Miso"


def price(model: str, prompt: int, completion: int, *, embedding: bool = False) -> float:
    """What litellm's own price list says the call costs (the oracle is litellm, not us)."""
    cin, cout = load_litellm().cost_per_token(model=model, prompt_tokens=prompt, completion_tokens=completion,
                                              call_type="aembedding" if embedding else "acompletion")
    return float(cin) + float(cout)


def open_app(home: Home, server: ScriptedLLMServer, clock: FakeClock, **kw: Any) -> App:
    cfg: dict[str, Any] = {"model": PRICED, "api_base": server.base_url, "llm_retries": 0, "llm_timeout": 10.0,
                           "memory_window": 1000, "idle_consolidate_minutes": 0, "consolidation_timeout": 30.0}
    cfg.update(kw)
    return App.open(home, config=Config(**cfg), clock=clock, ids=seeded_ids(clock), start_services=False)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 12, 3, 10, 0, tzinfo=UTC))


@pytest.fixture
def app(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock) -> Iterator[App]:
    a = open_app(home, llm_server, clock)
    yield a
    a.close()


def records(app: App, t: str) -> list[Record]:
    return [r for r in app.store.log.records() if r.type == t]


def is_consolidation(req: JSON) -> bool:
    return any(t.get("function", {}).get("name") == "save_memory" for t in req.get("tools") or [])


def save_memory(update: str, usage: JSON) -> Response:
    return tool_call("save_memory", {"history_entry": "[2026-12-03 10:00] Talked about chess.",
                                     "memory_update": update, "removed_facts": []}, usage=usage)


def test_a_turn_records_tokens_and_cost_streamed_or_not(app: App, llm_server: ScriptedLLMServer) -> None:
    llm_server.script(reply("Noted.", usage={"prompt_tokens": 1000, "completion_tokens": 100}),
                      reply("Still noted, streamed.", usage={"prompt_tokens": 1200, "completion_tokens": 30}))
    app.run(app.agent.turn("quick", SAID, stream=False))
    app.run(app.agent.turn("quick", "And a dog.", stream=True, on_delta=lambda _t: None))

    streamed = llm_server.chat_requests[-1]
    assert streamed["stream"] is True and streamed["stream_options"] == {"include_usage": True}
    replies = [Message.of(r) for r in records(app, Message.TYPE) if r.data["role"] == "assistant"]
    assert [(m.usage or {}).get("prompt_tokens") for m in replies] == [1000, 1200]
    assert [(m.usage or {}).get("completion_tokens") for m in replies] == [100, 30]
    costs = [(m.usage or {}).get("cost") for m in replies]
    assert costs == pytest.approx([price(PRICED, 1000, 100), price(PRICED, 1200, 30)]) and all(c and c > 0 for c in costs)

    s = summarize(app.store.state.usage, app.clock.now(), UTC, 30)
    assert (s.today.calls, s.today.prompt_tokens, s.today.completion_tokens) == (2, 2200, 130)
    assert s.today.cost == pytest.approx(sum(c for c in costs if c)) and s.today.unpriced == 0
    assert list(s.by_kind) == ["chat"] and s.by_group["upkeep"].calls == 0
    assert s.by_model[PRICED].calls == 2


def test_a_model_without_a_price_counts_tokens_and_says_the_cost_is_unknown(
        home: Home, llm_server: ScriptedLLMServer, clock: FakeClock) -> None:
    a = open_app(home, llm_server, clock, model="openai/our-own-server-model")
    try:
        llm_server.script(reply("Hello.", usage={"prompt_tokens": 50, "completion_tokens": 5}))
        a.run(a.agent.turn("quick", "hi", stream=True, on_delta=lambda _t: None))
        [m] = [Message.of(r) for r in records(a, Message.TYPE) if r.data["role"] == "assistant"]
        assert m.usage == {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}  # no invented price
        s = summarize(a.store.state.usage, a.clock.now(), UTC, 1)
        assert (s.today.calls, s.today.unpriced, s.today.cost) == (1, 1, 0.0)
    finally:
        a.close()


def test_consolidations_failed_or_completed_and_redos_record_what_they_cost(
        app: App, llm_server: ScriptedLLMServer) -> None:
    app.store.append_many([(Message(role="user" if i % 2 == 0 else "assistant", content=f"{i}: {SAID}"), "quick", None)
                           for i in range(6)])
    # a reply without save_memory costs tokens too: the failure records them
    llm_server.script(reply("I would rather not.", usage={"prompt_tokens": 700, "completion_tokens": 8}))
    with pytest.raises(ConsolidationFailedError):
        app.run(app.consolidation.consolidate("quick"))
    llm_server.script(save_memory("# Memory\n\n- User plays chess\n", {"prompt_tokens": 720, "completion_tokens": 60}))
    done = app.run(app.consolidation.consolidate("quick"))
    llm_server.script(save_memory("# Memory\n\n- User plays chess\n- User has a cat called Miso\n",
                                  {"prompt_tokens": 730, "completion_tokens": 70}))
    app.run(app.consolidation.redo(done.consolidation))

    [failed] = [ConsolidationFailed.of(r) for r in records(app, ConsolidationFailed.TYPE)]
    assert failed.usage is not None and failed.usage["prompt_tokens"] == 700
    assert failed.usage.get("cost") == pytest.approx(price(PRICED, 700, 8))
    completed = [ConsolidationCompleted.of(r) for r in records(app, ConsolidationCompleted.TYPE)]
    assert [(c.usage or {}).get("completion_tokens") for c in completed] == [60, 70]

    s = summarize(app.store.state.usage, app.clock.now(), UTC, 30)
    assert s.by_kind["consolidation"].calls == 2 and s.by_kind["consolidation"].prompt_tokens == 1420
    assert s.by_kind["redo"].calls == 1 and s.by_kind["redo"].completion_tokens == 70
    assert s.by_group["upkeep"].calls == 3 and s.by_group["chat"].calls == 0 and s.upkeep_today.calls == 3
    assert s.by_group["upkeep"].cost == pytest.approx(price(PRICED, 700, 8) + price(PRICED, 720, 60)
                                                      + price(PRICED, 730, 70))


def test_embedding_recall_and_search_record_their_calls(home: Home, llm_server: ScriptedLLMServer,
                                                         clock: FakeClock) -> None:
    a = open_app(home, llm_server, clock, embedding_model=EMBED, recall=True)
    try:
        a.store.append_many([(Message(role="user", content="Ada's teacher is Mr Okafor."), "old", None),
                             (Message(role="assistant", content="Noted."), "old", None)])
        a.run(a.search.backfill())
        a.run(a.agent.turn("quick", "Who is the teacher of Ada?", stream=False))
        a.run(a.search.asearch("teacher", mode="semantic"))

        got = [UsageRecorded.of(r) for r in records(a, UsageRecorded.TYPE)]
        assert [u.kind for u in got] == ["embedding", "recall", "search"]
        assert all(u.model == EMBED and u.usage["prompt_tokens"] > 0 for u in got)
        backfill = got[0].usage
        assert backfill.get("cost") == pytest.approx(price(EMBED, backfill["prompt_tokens"], 0, embedding=True))
        s = summarize(a.store.state.usage, a.clock.now(), UTC, 30)
        assert s.by_kind["embedding"].calls == 1 and s.by_group["upkeep"].calls == 1
        assert s.by_group["chat"].calls == 3  # the turn, its recall and the search: asked for by the user
    finally:
        a.close()


def test_memtray_usage_prints_the_ledger(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock) -> None:
    a = open_app(home, llm_server, clock)
    try:
        llm_server.script(reply("Noted.", usage={"prompt_tokens": 1000, "completion_tokens": 100}))
        a.run(a.agent.turn("quick", SAID, stream=False))
    finally:
        a.close()
    # the CLI's clock is the wall clock: the ledger's day is this test's fake day, so ask for
    # a window that holds it only if it is today; the JSON shape is what is checked here
    res = cli_here(home.root, "usage", "--json", "--days", "62")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"days", "today", "month", "period", "by_group", "by_kind", "by_model", "budget"}
    assert set(out["today"]) == {"calls", "prompt_tokens", "completion_tokens", "cost_usd", "unpriced_calls"}
    text = cli_here(home.root, "usage")
    assert text.returncode == 0 and "this month" in text.stdout and "memory upkeep" in text.stdout
    bad = cli_here(home.root, "usage", "--days", "0")
    assert bad.returncode != 0 and "must be 1 to 62" in bad.stderr and "Traceback" not in bad.stderr


def test_the_ledger_is_summed_by_the_users_day_not_utcs() -> None:
    from memtray.core.log.usage import UsageBook

    book = UsageBook()
    book.add("2026-12-03T07:30:00.000Z", "chat", PRICED, {"prompt_tokens": 10, "completion_tokens": 1, "cost": 0.5})
    book.add("2026-12-03T09:30:00.000Z", "consolidation", PRICED, {"prompt_tokens": 20, "completion_tokens": 2})
    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    assert summarize(book, now, UTC, 1).today.calls == 2
    # 10:00 UTC is 02:00 in Los Angeles, whose day began at 08:00 UTC: 07:30 UTC was yesterday there
    assert summarize(book, now, zone_of("America/Los_Angeles"), 1).today.calls == 1
    assert summarize(book, now, zone_of("Asia/Tokyo"), 1).today.calls == 2  # 19:00 there
    assert summarize(book, datetime(2026, 12, 3, 8, 0, tzinfo=UTC), UTC, 1).today.calls == 1  # before the second
    assert summarize(book, datetime(2026, 12, 4, 9, 0, tzinfo=UTC), UTC, 1).today.calls == 0
    s = summarize(book, datetime(2026, 12, 4, 9, 0, tzinfo=UTC), UTC, 2)
    assert (s.period.calls, s.period.unpriced, s.month.cost) == (2, 1, 0.5)
