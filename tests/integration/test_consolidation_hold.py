"""A model too small to judge facts does not write memory: its consolidation is held for review.

Real litellm against the scripted server, which plays a small model that garbles a fact,
invents one, drops one and writes a diary entry (what SmolLM2-135M did: "Mia's baby Mia.").
The model string says its size (``openai/smollm2-135m-instruct``), as Ollama's and LM
Studio's names do; resources/models/capability.toml puts the bar at 3B parameters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message

from tests.fixtures.llm_server import Response, ScriptedLLMServer, tool_call
from tests.support import cli_here

SMALL = "openai/smollm2-135m-instruct"
MEM0 = "# Memory\n\n## Family\n- User has a daughter called Mia, she is 7\n- User works as a nurse in Graz\n"
CHAT = [("user", "My bike is a red Brompton. I have a daughter called Mia, she is 7."),
        ("assistant", "Noted!"), ("user", "I stopped working as a nurse, by the way."), ("assistant", "OK.")]
ENTRY = "[2026-12-03 10:00] Talked about the bike and Mia."


def junk(_req: Any) -> Response:
    """What a tiny model proposes: a garbled rewording by id, a new fact, a removal, a diary entry."""
    return tool_call("save_memory", {
        "history_entry": ENTRY,
        "memory_update": "# Memory\n\n## Family\n- [F1] Mia's baby Mia.\n\n## Things\n- User's bike is a red Brompton [#1]\n",
        "receipts": [{"fact": "User's bike is a red Brompton", "messages": [1], "quote": "My bike is a red Brompton"}],
        "removed_facts": [{"fact": "F2", "reason": "stopped working as a nurse"}],
    })


def open_app(home: Home, server: ScriptedLLMServer, model: str, **kw: Any) -> App:
    clock = FakeClock()
    cfg = Config(model=model, api_base=server.base_url, llm_retries=0, memory_window=1000,
                 idle_consolidate_minutes=0, **kw)
    app = App.open(home, config=cfg, clock=clock, ids=seeded_ids(clock), start_services=False)
    app.memory.write(MEM0, reason="user-edit", source="user")
    app.store.append_many([(Message(role=r, content=t), "s", None) for r, t in CHAT])
    return app


@pytest.fixture
def small(home: Home, llm_server: ScriptedLLMServer) -> Iterator[App]:
    llm_server.responder = junk
    app = open_app(home, llm_server, SMALL)
    yield app
    app.close()


def history(home: Home) -> str:
    return (home.memory / "HISTORY.md").read_text(encoding="utf-8") if (home.memory / "HISTORY.md").exists() else ""


def test_the_small_models_proposal_waits_for_review_and_memory_is_unchanged(small: App, home: Home) -> None:
    out = small.run(small.consolidation.consolidate("s", archive_all=True))
    assert small.store.state.memory == MEM0 and (home.memory / "MEMORY.md").read_text(encoding="utf-8") == MEM0
    assert ENTRY not in history(home)
    assert small.store.state.sessions["s"].last_consolidated == 4  # done with: not sent again and again
    assert (out.added, out.removed, out.changed) == (0, 0, 0) and out.flagged == 3
    assert any("too small to judge facts" in n and "held for review" in n for n in out.notes)
    assert any("would remove F2" in n and "not done" in n for n in out.notes)
    items = {i["text"]: i for i in small.memory.pending_review() if i["kind"] != "not-remembered"}
    assert set(items) == {"Mia's baby Mia.", "User's bike is a red Brompton", ENTRY}
    # the garbled rewording by id has no receipt and says what its old wording does not: the
    # receipt check holds it before the size rule does, and says why
    assert {t: i["kind"] for t, i in items.items()} == {
        "Mia's baby Mia.": "unsupported", "User's bike is a red Brompton": "proposal", ENTRY: "proposal"}
    assert items["Mia's baby Mia."]["reason"] == "no receipt, and the old wording does not say 'baby'"
    # the removal is not done and nothing else keeps what the user said: it is not remembered
    [unsaid] = [i for i in small.memory.pending_review() if i["kind"] == "not-remembered"]
    assert unsaid["text"] == "User stopped working as a nurse" and out.not_remembered == 1
    assert items["Mia's baby Mia."]["replaces"] == "F1" and items[ENTRY]["section"] == "History"
    assert all("smollm2-135m-instruct (135M parameters) is too small" in i["reason"] for i in items.values()
               if i["kind"] == "proposal")


def test_the_user_takes_what_is_right_from_the_held_proposal(small: App, home: Home) -> None:
    small.run(small.consolidation.consolidate("s", archive_all=True))
    items = {i["text"]: i for i in small.memory.pending_review()}
    small.memory.restore_review(items["User's bike is a red Brompton"]["id"])
    small.memory.restore_review(items[ENTRY]["id"])
    small.memory.accept_review(items["Mia's baby Mia."]["id"])  # the junk stays out
    small.memory.restore_review(items["User stopped working as a nurse"]["id"])  # what the removal meant
    memory = small.store.state.memory
    assert "- User's bike is a red Brompton" in memory and "Mia's baby" not in memory
    assert "daughter called Mia" in memory and ENTRY in history(home)
    assert ENTRY not in memory  # the diary entry went to HISTORY.md, not into the facts
    assert "- User stopped working as a nurse" in memory
    assert small.memory.pending_review() == []


def test_a_held_rewording_taken_replaces_the_fact_under_its_id(small: App) -> None:
    small.run(small.consolidation.consolidate("s", archive_all=True))
    item = next(i for i in small.memory.pending_review() if i.get("replaces") == "F1")
    small.memory.restore_review(item["id"])
    led = small.memory.ledger()
    assert led.get("F1") is not None and led.get("F1").text == "Mia's baby Mia."
    assert "daughter called Mia" not in small.store.state.memory


def test_a_model_at_the_bar_writes_and_the_setting_holds_any(home: Home, llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = junk
    app = open_app(home, llm_server, "openai/qwen2.5-3b-instruct")
    try:
        out = app.run(app.consolidation.consolidate("s", archive_all=True))
        assert "Brompton" in app.store.state.memory and out.changed == 0 and out.removed == 1
        assert [i for i in app.memory.pending_review() if i["kind"] == "proposal"] == []
        # its rewording by id says more than the old wording and has no receipt: held, old words kept
        [held] = [i for i in app.memory.pending_review() if i["kind"] == "unsupported"]
        assert held["text"] == "Mia's baby Mia." and held["replaces"] == "F1"
        assert "- User has a daughter called Mia, she is 7" in app.store.state.memory
    finally:
        app.close()


def test_hold_consolidations_always_holds_a_big_model(tmp_path: Any, llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = junk
    app = open_app(Home.resolve(tmp_path / "h"), llm_server, "openai/gpt-4o-mini", hold_consolidations="always")
    try:
        out = app.run(app.consolidation.consolidate("s", archive_all=True))
        assert app.store.state.memory == MEM0 and out.flagged == 3
        assert any("hold_consolidations = always" in n for n in out.notes)
    finally:
        app.close()


def test_the_cli_says_it_and_review_lists_the_proposal(home: Home, llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = junk
    open_app(home, llm_server, SMALL).close()
    env = {"OPENAI_API_KEY": "sk-test"}
    for key, value in (("model", SMALL), ("api_base", llm_server.base_url), ("llm_retries", "0")):
        assert cli_here(home.root, "config", "set", key, value).returncode == 0
    done = cli_here(home.root, "consolidate", "--session", "s", **env)
    assert done.returncode == 0, done.stderr
    assert "3 flagged" in done.stdout and "too small to judge facts" in done.stdout
    listed = json.loads(cli_here(home.root, "memory", "review", "--json").stdout)
    assert sorted(i["kind"] for i in listed) == ["not-remembered", "proposal", "proposal", "unsupported"]
    assert "1 thing you said was not remembered" in done.stdout
    entry = next(i for i in listed if i["section"] == "History")
    taken = cli_here(home.root, "memory", "review", "restore", entry["id"])
    assert taken.returncode == 0 and "HISTORY.md" in taken.stdout


def test_a_rewording_the_receipt_check_held_taken_replaces_its_fact_and_undoes(home: Home,
                                                                              llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = junk
    app = open_app(home, llm_server, "openai/qwen2.5-3b-instruct")
    try:
        app.run(app.consolidation.consolidate("s", archive_all=True))
        [held] = [i for i in app.memory.pending_review() if i["kind"] == "unsupported"]
        before = app.memory.ledger()
        app.memory.add_review(held["id"])  # "Add to memory": the new words, under F1, no second fact
        led = app.memory.ledger()
        assert led.get("F1") is not None and led.get("F1").text == "Mia's baby Mia."
        assert led.ids == before.ids and "daughter called Mia" not in app.store.state.memory
        app.memory.undo_review(held["id"])
        assert app.memory.ledger().get("F1").text == "User has a daughter called Mia, she is 7"
        assert [i["id"] for i in app.memory.pending_review() if i["kind"] == "unsupported"] == [held["id"]]
    finally:
        app.close()
