"""The guard on background memory upkeep: a daily budget, and a stop for loops.

Real litellm against the scripted server (which reports the tokens each reply cost), the
injected clock for "the next day", and hostile models: one whose every consolidation is
expensive, one that never calls save_memory, one whose replies change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.base.notify import RecordingNotifier
from memtray.core.log.events import (
    ConsolidationFailed,
    ConsolidationStarted,
    Message,
    UsageRecorded,
)
from memtray.core.memory.upkeep import MAX_TRIES

from tests.fixtures.llm_server import Response, ScriptedLLMServer, reply, tool_call
from tests.fixtures.receipting import with_receipts
from tests.support import cli_here, drain_consolidations

JSON = dict[str, Any]
SAID = "I play chess and I have a cat called Miso"
COSTLY = {"prompt_tokens": 900, "completion_tokens": 200}  # 1 100 tokens: past a 1 000-token day at once


def is_consolidation(req: JSON) -> bool:
    return any(t.get("function", {}).get("name") == "save_memory" for t in req.get("tools") or [])


def current_memory(req: JSON) -> str:
    text = req["messages"][-1]["content"]
    shown = text.split("## Current memory\n\n", 1)[1].split("\n\n## Conversation to consolidate", 1)[0]
    return "" if shown == "(empty)" else shown


class Model:
    """Consolidates by adding one fact (each costing ``COSTLY``), or misbehaves as told."""

    def __init__(self) -> None:
        self.mode = "good"  # good | no-tool | same
        self.n = 0

    def __call__(self, req: JSON) -> Response:
        if not is_consolidation(req):
            return reply("ok")
        self.n += 1
        if self.mode == "no-tool":
            return reply("I will not call any tool.", usage=COSTLY)
        if self.mode == "same":  # the memory as it was, no diary entry: changes nothing
            return tool_call("save_memory", {"history_entry": "", "memory_update": current_memory(req),
                                             "removed_facts": []}, usage={"prompt_tokens": 50, "completion_tokens": 5})
        return tool_call("save_memory", {"history_entry": f"[2026-12-03 10:00] Chess, part {self.n}.",
                                         "memory_update": "# Memory\n\n- User plays chess\n",
                                         "removed_facts": []}, usage=COSTLY)


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 12, 3, 10, 0, tzinfo=UTC))


def open_app(home: Home, server: ScriptedLLMServer, clock: FakeClock, **kw: Any) -> App:
    cfg: dict[str, Any] = {"model": "openai/test-model", "api_base": server.base_url, "llm_retries": 0,
                           "llm_timeout": 10.0, "memory_window": 6, "idle_consolidate_minutes": 0,
                           "consolidation_timeout": 30.0, "upkeep_daily_tokens": 1000}
    cfg.update(kw)
    a = App.open(home, config=Config(**cfg), clock=clock, ids=seeded_ids(clock), start_services=False)
    a.notifier.set(RecordingNotifier())
    return a


@pytest.fixture
def app(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock, model: Model) -> Iterator[App]:
    llm_server.responder = with_receipts(model)  # a careful model sends receipts (issue 27)
    a = open_app(home, llm_server, clock)
    yield a
    a.close()


def talk(app: App, n: int = 6) -> None:
    """``n`` messages, then the after-turn check, which starts a consolidation when due."""
    app.store.append_many([(Message(role="user" if i % 2 == 0 else "assistant", content=f"{i}: {SAID}"), "quick", None)
                           for i in range(n)])
    app.worker.call(lambda: app.consolidation.after_turn("quick"))
    drain_consolidations(app)


def started(app: App) -> list[ConsolidationStarted]:
    return [ConsolidationStarted.of(r) for r in app.store.log.records() if r.type == ConsolidationStarted.TYPE]


def sent(app: App, title: str) -> list[dict[str, Any]]:
    notifier = app.notifier.current
    assert isinstance(notifier, RecordingNotifier)
    return [n for n in notifier.sent if n["title"] == title]


def test_past_the_days_budget_background_consolidation_waits_for_the_next_day(
        app: App, clock: FakeClock, model: Model) -> None:
    talk(app)
    assert len(started(app)) == 1 and model.n == 1  # the first one spends 1 100 of 1 000 tokens
    assert app.consolidation.upkeep.over() is not None

    talk(app)
    talk(app)
    assert len(started(app)) == 1 and model.n == 1  # due, but waiting: no call was made
    assert app.store.state.sessions["quick"].unconsolidated >= 6
    [told] = sent(app, "Memory upkeep paused for today")  # once, however often it was due
    assert "has spent 1,100 of the 1,000 tokens a day it may use" in told["body"]
    assert app.search is not None and app.search.may_spend() is False  # background embedding waits too

    clock.advance(24 * 3600)  # the next day: the budget is new
    app.run(app.consolidation.sweep())
    assert len(started(app)) == 2 and model.n == 2
    talk(app)
    assert len(started(app)) == 2  # and spent again
    assert len(sent(app, "Memory upkeep paused for today")) == 2  # told once that day too


def test_a_consolidation_the_context_window_needs_runs_past_the_budget(
        home: Home, llm_server: ScriptedLLMServer, clock: FakeClock, model: Model) -> None:
    llm_server.responder = with_receipts(model)  # a careful model sends receipts (issue 27)
    a = open_app(home, llm_server, clock, memory_window=1000, context_tokens=50)  # no window trigger: the prompt's size
    try:
        a.write(lambda: a.store.append(UsageRecorded(kind="embedding", model="openai/test-embedding",
                                                     usage={"prompt_tokens": 5000, "total_tokens": 5000})))
        assert a.consolidation.upkeep.over() is not None
        talk(a)
        assert [s.trigger for s in started(a)] == ["budget"] and model.n == 1
        assert not sent(a, "Memory upkeep paused for today")  # nothing waited
    finally:
        a.close()


def test_run_now_lifts_the_budget_for_the_day_and_what_the_user_asks_always_runs(
        app: App, clock: FakeClock, model: Model) -> None:
    talk(app)
    talk(app)
    assert len(started(app)) == 1
    out = app.run(app.consolidation.consolidate("quick"))  # the user's own request: not held back
    assert not out.nothing_to_do and model.n == 2
    talk(app)
    assert len(started(app)) == 2  # background still waits
    app.worker.call(app.consolidation.upkeep.run_now)  # "Run now"
    app.run(app.consolidation.sweep())
    assert len(started(app)) == 3 and model.n == 3
    talk(app)
    assert len(started(app)) == 4  # lifted for the rest of the day
    clock.advance(24 * 3600)
    talk(app)
    talk(app)
    assert len(started(app)) == 5  # a new day: the budget holds again after the first


def test_a_model_that_never_calls_save_memory_is_tried_a_few_times_then_stops(
        home: Home, llm_server: ScriptedLLMServer, clock: FakeClock, model: Model) -> None:
    model.mode = "no-tool"
    llm_server.responder = with_receipts(model)  # a careful model sends receipts (issue 27)
    a = open_app(home, llm_server, clock, upkeep_daily_tokens=0)  # no budget: only the loop stop
    try:
        talk(a)
        for _ in range(6):  # past every backoff, many times over
            clock.advance(3 * 3600)
            a.run(a.consolidation.sweep())
        assert model.n == MAX_TRIES
        failed = [ConsolidationFailed.of(r) for r in a.store.log.records() if r.type == ConsolidationFailed.TYPE]
        assert [f.attempt for f in failed] == [1, 2, 3] and [f.halted for f in failed] == [None, None, "loop"]
        assert all(f.usage and f.usage["prompt_tokens"] == 900 for f in failed)  # each try's cost is on record
        [told] = sent(a, "Memory consolidation stopped")
        assert "failed 3 times in a row" in told["body"] and "without calling save_memory" in told["body"]
        assert len(sent(a, "Memory consolidation failed")) == MAX_TRIES - 1  # the last one says it stopped instead
    finally:
        a.close()
    b = open_app(home, llm_server, clock, upkeep_daily_tokens=0)  # a restart remembers it from the log
    try:
        clock.advance(3 * 3600)
        talk(b)
        b.run(b.consolidation.sweep())
        assert model.n == MAX_TRIES and "quick" in b.consolidation.upkeep.halted
        model.mode = "good"
        b.run(b.consolidation.consolidate("quick"))  # the user asks: it runs, and the stop is lifted
        assert model.n == MAX_TRIES + 1 and "quick" not in b.consolidation.upkeep.halted
    finally:
        b.close()


def test_replies_that_change_nothing_stop_being_retried(
        home: Home, llm_server: ScriptedLLMServer, clock: FakeClock, model: Model) -> None:
    model.mode = "same"
    llm_server.responder = with_receipts(model)  # a careful model sends receipts (issue 27)
    a = open_app(home, llm_server, clock, upkeep_daily_tokens=0)
    try:
        for _ in range(MAX_TRIES + 3):
            talk(a)
        assert model.n == MAX_TRIES
        assert "changed nothing" in a.consolidation.upkeep.halted["quick"]
        [told] = sent(a, "Memory consolidation stopped")
        assert "consolidate --session quick" in told["body"]
        a.worker.call(a.consolidation.upkeep.run_now)
        model.mode = "good"
        talk(a)
        assert model.n == MAX_TRIES + 1 and "User plays chess" in a.store.state.memory
    finally:
        a.close()


def test_memtray_usage_shows_the_budget_and_run_now(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock,
                                                    model: Model) -> None:
    import json

    for key, value in (("upkeep_daily_usd", "0.25"), ("upkeep_daily_tokens", "1000")):
        assert cli_here(home.root, "config", "set", key, value).returncode == 0
    res = cli_here(home.root, "usage", "--json", "--run-now")
    assert res.returncode == 0, res.stderr
    budget = json.loads(res.stdout)["budget"]
    assert budget == {"daily_usd": 0.25, "daily_tokens": 1000, "paused": None, "halted": {}}
    text = cli_here(home.root, "usage")
    assert "background upkeep budget: $0.25 a day or 1,000 tokens a day" in text.stdout
