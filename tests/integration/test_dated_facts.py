"""Facts with a time end to end (issue 32), with an injected clock and real litellm against
the scripted server: the consolidating model sets a time from what was said, the prompt says
what is upcoming, current and past as the days pass, a fact past its end leaves memory as a
recorded (undoable) revision, and a check answered "no longer" or "yes" is a revision. A
hostile model's dates are held with the reason, never written, never lost."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from memtray.core.app import App
from memtray.core.base.clock import FakeClock
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.memory.dated import NO_LONGER

from tests.fixtures.llm_server import Reply, Response, ScriptedLLMServer, tool_call

DAY = 86_400.0
CHAT = [
    ("user", "I'm going to Kyoto in July, from the 1st to the 31st."),
    ("assistant", "How exciting!"),
    ("user", "I'm training for the Berlin marathon."),
    ("assistant", "Good luck with the training."),
]


def open_app(home: Home, server: ScriptedLLMServer, clock: FakeClock) -> App:
    # generous timeouts: on a loaded machine litellm's first import alone takes seconds
    cfg = Config(model="openai/test-model", api_base=server.base_url, llm_retries=0, llm_timeout=60.0,
                 memory_window=1000, idle_consolidate_minutes=0, consolidation_timeout=120.0, timezone="UTC")
    app = App.open(home, config=cfg, clock=clock)
    app.store.append_many([(Message(role=r, content=t), "s", None) for r, t in CHAT])
    return app


class Model:
    """Answers save_memory with ``edits`` and any other request with a short reply, and
    keeps the prompts of the replies (the user message with its runtime context)."""

    def __init__(self, edits: list[dict[str, Any]]) -> None:
        self.edits = edits
        self.turns: list[str] = []

    def __call__(self, req: Any) -> Response:
        if req.get("tool_choice"):
            return tool_call("save_memory", {"history_entry": "[2027-06-20 09:00] Kyoto and the marathon.",
                                             "edits": self.edits, "removed_facts": []})
        self.turns.append(str(req["messages"][-1]["content"]))
        return Reply("ok")


GOOD = [
    {"op": "add", "text": "Going to Kyoto", "section": "Plans", "from": "2027-07-01", "until": "2027-07-31",
     "receipt": {"messages": [1], "quote": "going to Kyoto in July"}},
    {"op": "add", "text": "Training for the Berlin marathon", "section": "Sport", "review_after": "2027-07-10",
     "receipt": {"messages": [3], "quote": "training for the Berlin marathon"}},
]


def _turn(app: App, model: Model) -> str:
    app.run(app.agent.turn("quick", "hello", stream=False))
    return model.turns[-1]


def test_a_dated_fact_is_upcoming_then_current_then_past_then_leaves_by_a_revision(
        home: Home, llm_server: ScriptedLLMServer) -> None:
    clock = FakeClock(datetime(2027, 6, 20, 9, 0, tzinfo=UTC))
    model = Model(GOOD)
    llm_server.responder = model
    app = open_app(home, llm_server, clock)
    try:
        app.run(app.consolidation.consolidate("s", trigger="manual"))
        memory = app.store.state.memory
        assert "- Going to Kyoto (from 2027-07-01 until 2027-07-31)\n" in memory
        assert "- Training for the Berlin marathon (check after 2027-07-10)\n" in memory
        kyoto = "Going to Kyoto (from 2027-07-01 until 2027-07-31)"
        assert f"> Upcoming: {kyoto}" in _turn(app, model)
        # the request keeps that message: the next one, a minute later, does not repeat it
        clock.advance(60)
        assert "Memory as of" not in _turn(app, model)
        clock.advance(14 * DAY)  # 2027-07-04
        prompt = _turn(app, model)
        assert f"> Current: {kyoto}" in prompt and "Upcoming" not in prompt
        clock.advance(28 * DAY)  # 2027-08-01: over, still shown as past for a few days
        assert f"> Past: {kyoto}" in _turn(app, model)
        assert "Kyoto" in app.store.state.memory
        revisions = app.memory.revisions()
        clock.advance(7 * DAY)  # 2027-08-08: past its end by more than the grace days
        prompt = _turn(app, model)
        assert "Kyoto" not in prompt and "Kyoto" not in app.store.state.memory
        assert "> (none)" in prompt  # the earlier "Past: Going to Kyoto" in the request no longer holds
        [rev] = app.memory.revisions()[: len(app.memory.revisions()) - len(revisions)]
        assert rev.reason == "expired" and rev.removed == 1
        [gone] = [d for d in app.memory.dropped() if d["rev"] == rev.rev]
        assert gone["reason"] == "ended on 2027-07-31" and gone["by"] == "expired"
        # undoable, and the undo stands: the next turn does not take it out again
        app.memory.undo(rev.rev)
        assert "Going to Kyoto" in app.store.state.memory
        assert f"> Past: {kyoto}" in _turn(app, model)
        assert "Going to Kyoto" in app.store.state.memory
    finally:
        app.close()


def test_a_check_answered_no_longer_removes_the_fact_and_yes_records_the_check(
        home: Home, llm_server: ScriptedLLMServer) -> None:
    clock = FakeClock(datetime(2027, 6, 20, 9, 0, tzinfo=UTC))
    llm_server.responder = Model(GOOD)
    app = open_app(home, llm_server, clock)
    try:
        app.run(app.consolidation.consolidate("s", trigger="manual"))
        today = date(2027, 6, 20)
        assert app.memory.review_due(today) == []
        clock.advance(20 * DAY)
        [due] = app.memory.review_due(date(2027, 7, 10))
        assert due["question"] == "Still training for the Berlin marathon?"
        fid = due["id"]
        rev = app.memory.check_fact(fid, "yes", date(2027, 7, 10))
        assert rev.reason == "review" and rev.changed == 1
        after = app.memory.ledger().get(fid)
        assert after is not None and after.text == (
            "Training for the Berlin marathon (checked 2027-07-10; check after 2027-10-08)")
        assert app.memory.review_due(date(2027, 7, 11)) == []
        # a second "yes" the same day is no new revision (it would write the same words again)
        revisions = app.store.state.memory_revisions
        again = app.memory.check_fact(fid, "yes", date(2027, 7, 10))
        assert again.rev == rev.rev and app.store.state.memory_revisions == revisions
        assert app.memory.ledger().get(fid) == after
        # a check changes the fact's time, not its words: its receipt and sources stay
        why = app.memory.why(fid)
        assert why["receipt"] is not None and why["receipt"]["quote"] == "training for the Berlin marathon"
        assert why["consolidation"] is not None
        # no longer: removed, with that reason, undoable
        rev = app.memory.check_fact(fid, "no-longer", date(2027, 10, 9))
        assert rev.reason == "review" and "marathon" not in app.store.state.memory
        [gone] = [d for d in app.memory.dropped() if d["id"] == fid]
        assert gone["reason"] == NO_LONGER
        app.memory.undo(rev.rev)
        assert "marathon" in app.store.state.memory
    finally:
        app.close()


HOSTILE = [
    # a month in words where a date belongs
    {"op": "add", "text": "Going to Kyoto", "until": "July", "receipt": {"messages": [1], "quote": "Kyoto in July"}},
    # no such day
    {"op": "add", "text": "Going to Kyoto in July", "from": "2027-02-30",
     "receipt": {"messages": [1], "quote": "Kyoto in July"}},
    # a real date the quote does not say (another month)
    {"op": "add", "text": "Will go to Kyoto", "from": "2027-09-01", "until": "2027-09-30",
     "receipt": {"messages": [1], "quote": "going to Kyoto in July"}},
    # a time nobody said, on a fact that is said
    {"op": "add", "text": "Training for the Berlin marathon", "until": "2027-12-31",
     "receipt": {"messages": [3], "quote": "training for the Berlin marathon"}},
    # a number where a string belongs, and an end before the start
    {"op": "add", "text": "Is going to Kyoto", "from": 20270701, "receipt": {"messages": [1], "quote": "Kyoto in July"}},
    {"op": "add", "text": "Will be in Kyoto", "from": "2027-07-31", "until": "2027-07-01",
     "receipt": {"messages": [1], "quote": "Kyoto in July"}},
]


def test_a_hostile_models_dates_are_held_with_the_reason(home: Home, llm_server: ScriptedLLMServer) -> None:
    clock = FakeClock(datetime(2027, 6, 20, 9, 0, tzinfo=UTC))
    llm_server.responder = Model(HOSTILE)
    app = open_app(home, llm_server, clock)
    try:
        out = app.run(app.consolidation.consolidate("s", trigger="manual"))
        assert out is not None
        assert "Kyoto" not in app.store.state.memory and "marathon" not in app.store.state.memory
        reasons = sorted(i["reason"] for i in app.memory.pending_review() if i["kind"] == "unsupported")
        assert reasons == sorted([
            "its time: 'until' is not a date in the form YYYY-MM-DD: 'July'",
            "its time: 'from' is not a real date: '2027-02-30'",
            "its time: the quote names another month than 2027-09-01, 2027-09-30",
            "its time: the quote does not say when (a month, a year, 'this week', 'until the end of the year'...)",
            "its time: 'from' is not a date (YYYY-MM-DD)",
            "its time: 'from' (2027-07-31) is after 'until' (2027-07-01)",
        ]), reasons
    finally:
        app.close()


def test_the_sweep_asks_once_per_check_date_and_says_what_ended(home: Home, llm_server: ScriptedLLMServer) -> None:
    from memtray.core.base.notify import RecordingNotifier
    from memtray.core.memory.dated import CheckIns

    clock = FakeClock(datetime(2027, 6, 20, 9, 0, tzinfo=UTC))
    llm_server.responder = Model(GOOD)
    app = open_app(home, llm_server, clock)
    try:
        app.run(app.consolidation.consolidate("s", trigger="manual"))
        rec = RecordingNotifier()
        sweep = CheckIns(app.memory, clock, lambda: "UTC", rec, lambda: False)
        app.worker.call(sweep.sweep)
        assert rec.sent == []  # nothing due, nothing ended
        clock.advance(20 * DAY)  # 2027-07-10: the marathon's check date
        app.worker.call(sweep.sweep)
        app.worker.call(sweep.sweep)
        [asked] = rec.sent
        fid = app.memory.review_due(sweep.today())[0]["id"]
        assert (asked["title"], asked["kind"], asked["target"]) == ("Still true?", "memory", f"check:{fid}")
        assert asked["body"].startswith("Still training for the Berlin marathon?")
        clock.advance(30 * DAY)  # 2027-08-09: Kyoto ended more than a week ago
        app.worker.call(sweep.sweep)
        assert [s["title"] for s in rec.sent[1:]] == ["Memory: past their end"]  # asked already: not again
        assert rec.sent[1]["body"] == "Going to Kyoto" and rec.sent[1]["target"].startswith("memory:")
    finally:
        app.close()


def test_the_agents_remember_sets_a_time_through_the_consolidations_door(
        home: Home, llm_server: ScriptedLLMServer) -> None:
    """The chat's own ``remember`` takes from / until / review_after (issue 32): valid dates become
    the fact's time as consolidation writes it; a date that is not one, or an end before the
    start, is an error the model reads and nothing is written; a time for a fact memory holds
    is set on that fact, under its id."""
    clock = FakeClock(datetime(2027, 6, 20, 9, 0, tzinfo=UTC))
    app = open_app(home, llm_server, clock)
    try:
        llm_server.script(
            tool_call("remember", {"fact": "Going to Kyoto", "from": "2027-07-01", "until": "2027-07-31"}, id="c1"),
            tool_call("remember", {"fact": "Going to Osaka", "until": "July"}, id="c2"),
            tool_call("remember", {"fact": "Going to Nara", "from": "2027-08-02", "until": "2027-08-01"}, id="c3"),
            tool_call("remember", {"fact": "Going to Kobe", "review_after": "2027-02-30"}, id="c4"),
            tool_call("remember", {"fact": "Training for the Berlin marathon"}, id="c5"),
            tool_call("remember", {"fact": "Training for the Berlin marathon", "review_after": "2027-09-01"}, id="c6"),
            Reply("Noted."),
        )
        app.run(app.agent.turn("s", "Kyoto in July; and the marathon", stream=False))
        said = {r.data["tool_call_id"]: r.data["content"] for r in app.store.log.records()
                if r.type == "message" and r.data.get("role") == "tool"}
        assert said["c1"] == "remembered: Going to Kyoto (from 2027-07-01 until 2027-07-31)"
        assert said["c2"] == "error: the fact's time: 'until' is not a date in the form YYYY-MM-DD: 'July'; " \
                             "nothing was remembered"
        assert said["c3"] == "error: the fact's time: 'from' (2027-08-02) is after 'until' (2027-08-01); " \
                             "nothing was remembered"
        assert said["c4"] == "error: the fact's time: 'review_after' is not a real date: '2027-02-30'; " \
                             "nothing was remembered"
        memory = app.store.state.memory
        assert "Osaka" not in memory and "Nara" not in memory and "Kobe" not in memory
        facts = {f.text: f.id for f in app.memory.ledger().facts}
        marathon = facts["Training for the Berlin marathon (check after 2027-09-01)"]
        assert said["c6"] == f"remembered: Training for the Berlin marathon (check after 2027-09-01) ({marathon}: its time set)"
        assert len(facts) == 2  # the time went onto the marathon fact, not into a second one
        [kyoto] = [d for d in app.memory.dated(date(2027, 7, 2)) if d["words"] == "Going to Kyoto"]
        assert kyoto["status"] == "current" and kyoto["time"] == {"from": "2027-07-01", "until": "2027-07-31"}
    finally:
        app.close()


RELATIVE_CHAT = [
    ("user", "I'm in Lisbon this week for the conference."),
    ("assistant", "Enjoy Lisbon!"),
    ("user", "My sister Ana visits tomorrow."),
    ("assistant", "Nice."),
    ("user", "And I'm going to Kyoto in July."),
]
# a model that reads "this week" and "tomorrow" against the day it runs (Thursday 2026-12-10),
# not the day they were said (Wednesday 2026-12-02), as a late consolidation invites
LATE = [
    {"op": "add", "text": "In Lisbon for a conference", "until": "2026-12-13",
     "receipt": {"messages": [1], "quote": "I'm in Lisbon this week for the conference"}},
    {"op": "add", "text": "Sister Ana visits", "from": "2026-12-11", "until": "2026-12-11",
     "receipt": {"messages": [3], "quote": "My sister Ana visits tomorrow"}},
    {"op": "add", "text": "Going to Kyoto", "from": "2027-07-01", "until": "2027-07-31",
     "receipt": {"messages": [5], "quote": "going to Kyoto in July"}},
]


def test_this_week_is_the_week_the_message_was_said_in(home: Home, llm_server: ScriptedLLMServer) -> None:
    """A consolidation that runs a week late reads "this week" and "tomorrow" on the day of the
    message that says them: "this week" ends on that week's Sunday, "tomorrow" is the day after
    the message; "in July" is left to the model (issue 32)."""
    clock = FakeClock(datetime(2026, 12, 2, 18, 0, tzinfo=UTC))  # a Wednesday
    cfg = Config(model="openai/test-model", api_base=llm_server.base_url, llm_retries=0, llm_timeout=60.0,
                 memory_window=1000, idle_consolidate_minutes=0, consolidation_timeout=120.0, timezone="UTC")
    app = App.open(home, config=cfg, clock=clock)
    try:
        app.store.append_many([(Message(role=r, content=t), "s", None) for r, t in RELATIVE_CHAT])
        clock.advance(8 * DAY)  # Thursday of the next week
        llm_server.responder = Model(LATE)
        out = app.run(app.consolidation.consolidate("s", trigger="manual"))
        assert out is not None
        texts = sorted(f.text for f in app.memory.ledger().facts)
        assert texts == ["Going to Kyoto (from 2027-07-01 until 2027-07-31)",
                         "In Lisbon for a conference (until 2026-12-06)",
                         "Sister Ana visits (from 2026-12-03 until 2026-12-03)"]
        assert any("'until 2026-12-13' read as 'until 2026-12-06'" in n and "2026-12-02" in n for n in out.notes), \
            out.notes
        today = {d["words"]: d["status"] for d in app.memory.dated(date(2026, 12, 10))}
        assert today["In Lisbon for a conference"] == "past" and today["Sister Ana visits"] == "past"
    finally:
        app.close()
