"""The chat's own memory tools through a scope (issue 32): a real turn (real litellm, the
scripted server) in which the model calls ``forget`` / ``remember``; a conversation changes
and learns of only what its prompt shows, its scope and the global memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.home import Home
from memtray.core.mcp.writes import remember as mcp_remember
from memtray.core.memory import scopes

from tests.fixtures.llm_server import ScriptedLLMServer, reply, tool_call
from tests.integration.test_scopes import consolidating, fact_id, morning, open_app, setup_scopes
from tests.support import cli_here, configure

MIA = "Daughter Mia plays cello"


@pytest.fixture
def clock() -> FakeClock:
    return morning()


@pytest.fixture
def app(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock) -> Iterator[App]:
    a = open_app(home, llm_server, clock)
    yield a
    a.close()


def tool_turn(app: App, server: ScriptedLLMServer, clock: FakeClock, session: str, name: str,
              args: dict[str, Any]) -> str:
    """One chat turn in ``session`` in which the model calls the tool ``name``; what the tool answered."""
    clock.advance(60)
    server.script(tool_call(name, args), reply("Done."))
    app.run(app.agent.turn(session, "Please do that.", stream=False))
    said = [r.data for r in app.store.log.records() if r.type == "message" and r.session == session
            and r.data.get("role") == "tool" and r.data.get("name") == name]
    return str(said[-1]["content"])


def files(app: App) -> dict[str, str]:
    root = app.home.memory
    return {p.relative_to(root).as_posix(): p.read_text() for p in [root / "MEMORY.md", *(root / "scopes").glob("*.md")]}


def in_scope(app: App) -> dict[str, str]:
    """Fact text -> its scope, now."""
    return {f.text: s for f, s in zip(app.memory.ledger().facts, scopes.of_facts(app.store.state.memory), strict=True)}


def test_a_conversation_forgets_only_what_its_prompt_shows(app: App, llm_server: ScriptedLLMServer,
                                                           clock: FakeClock) -> None:
    ids = setup_scopes(app)
    assert mcp_remember(app.memory, MIA, None, "t", scope="family").startswith("remembered")
    mia = fact_id(app, "Mia")
    app.worker.call(lambda: scopes.choose(app.store, "w", "work"))
    before, revisions = files(app), app.store.state.memory_revisions

    # another scope's fact, by its words and by its id, from a work and from a global conversation:
    # the same answer as for a fact that does not exist, and nothing is written
    for session, words in (("w", MIA), ("w", mia), ("w", ids["Ada"].lower()), ("g", "Reviews code at Acme on Fridays"),
                           ("g", ids["Acme"]), ("g", MIA)):
        said = tool_turn(app, llm_server, clock, session, "forget", {"fact": words, "reason": "attack"})
        assert said == f"no fact in memory matches {words!r}", said
    nothing = tool_turn(app, llm_server, clock, "w", "forget", {"fact": "F99", "reason": "attack"})
    assert nothing == "no fact in memory matches 'F99'"
    assert app.store.state.memory_revisions == revisions and files(app) == before
    # (the family file is in ``files``: what a refusal could still change is the facts' ids and scopes)
    assert {i for i, s in scopes.scope_map(app.memory.ledger(), app.store.state.memory).items()
            if s == "family"} == {ids["Ada"], mia}

    # what the prompt shows can be forgotten: the conversation's scope's fact (by id) and a global one
    said = tool_turn(app, llm_server, clock, "w", "forget", {"fact": ids["Acme"], "reason": "left Acme"})
    assert said == "forgot: Reviews code at Acme on Fridays (left Acme)"
    said = tool_turn(app, llm_server, clock, "w", "forget", {"fact": "Drinks green tea", "reason": "stopped"})
    assert said == "forgot: Drinks green tea (stopped)"
    said = tool_turn(app, llm_server, clock, "g", "forget", {"fact": "Lives in Lyon", "reason": "moved"})
    assert said == "forgot: Lives in Lyon (moved)"
    assert set(in_scope(app).items()) == {(MIA, "family"), ("Daughter Ada plays the cello", "family")}
    assert {d["id"]: d["reason"] for d in app.memory.dropped()} == {
        ids["Acme"]: "left Acme", ids["tea"]: "stopped", ids["Lyon"]: "moved"}


def placed(app: App) -> list[tuple[str, str]]:
    """(fact text, its scope) for every fact now, in order."""
    return list(zip([f.text for f in app.memory.ledger().facts], scopes.of_facts(app.store.state.memory), strict=True))


def test_a_conversation_remembers_what_only_another_scope_holds(app: App, llm_server: ScriptedLLMServer,
                                                                clock: FakeClock) -> None:
    """The same words in another scope are not "already remembered" (that tells the chat what the
    scope holds, and the user's fact is lost for this one): written into the conversation's scope."""
    ids = setup_scopes(app)
    assert mcp_remember(app.memory, MIA, None, "t", scope="family").startswith("remembered")
    family = (app.home.memory / "scopes" / "family.md").read_text()
    app.worker.call(lambda: scopes.choose(app.store, "w", "work"))

    said = tool_turn(app, llm_server, clock, "w", "remember", {"fact": MIA, "section": "People"})
    assert said == f"remembered: {MIA}"
    again = tool_turn(app, llm_server, clock, "w", "remember", {"fact": MIA, "section": "People"})
    assert again == "already remembered"  # what the conversation sees is still deduplicated
    said = tool_turn(app, llm_server, clock, "g", "remember", {"fact": "Reviews code at Acme on Fridays"})
    assert said == "remembered: Reviews code at Acme on Fridays"
    said = tool_turn(app, llm_server, clock, "w", "remember", {"fact": "Lives in Lyon"})
    assert said == "already remembered"  # a global fact is in the work chat's prompt

    where = placed(app)
    assert where.count((MIA, "work")) == 1 and where.count((MIA, "family")) == 1
    assert where.count(("Reviews code at Acme on Fridays", "work")) == 1
    assert where.count(("Reviews code at Acme on Fridays", "global")) == 1
    assert (app.home.memory / "scopes" / "family.md").read_text() == family  # family's file untouched
    assert scopes.scope_map(app.memory.ledger(), app.store.state.memory)[ids["Acme"]] == "work"  # ids kept
    assert MIA in (app.home.memory / "scopes" / "work.md").read_text()


def test_a_held_fact_added_from_review_lands_in_its_conversations_scope(
    home: Home, llm_server: ScriptedLLMServer, clock: FakeClock
) -> None:
    """`memory review add` (the desktop review's "Add to memory" is the same call) writes a fact
    held in a work conversation into work, one the model said is global into the global memory,
    and what the user said that a refused scope left unremembered into work: never into the
    global memory, where every other scope's prompt would show it. The listing says where."""
    env = configure(home, llm_server)
    a = App.open(home, clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        setup_scopes(a)
        llm_server.responder = consolidating([
            {"op": "add", "text": "Writes Rust at work every day", "section": "Work",
             "receipt": {"messages": [1], "quote": "I love sushi"}},
            {"op": "add", "text": "Is vegetarian", "section": "Food", "scope": "global",
             "receipt": {"messages": [3], "quote": "I eat fish daily"}},
            {"op": "add", "text": "Has a daughter called Mia", "section": "Family", "scope": "family",
             "receipt": {"messages": [5], "quote": "My daughter is called Mia"}},
        ], [])
        a.worker.call(lambda: scopes.choose(a.store, "w", "work"))
        for text in ("I write Rust at work every day.", "I am vegetarian.", "My daughter is called Mia."):
            clock.advance(60)
            a.run(a.agent.turn("w", text, stream=False))
        a.run(a.consolidation.consolidate("w"))
    finally:
        a.close()
    family = (home.memory / "scopes" / "family.md").read_text()

    listed = cli_here(home.root, "memory", "review", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["text"]: r for r in json.loads(listed.stdout)}
    want = {"Writes Rust at work every day": "work", "Is vegetarian": "global", "User's daughter is called Mia": "work"}
    assert {t: rows[t]["scope"] for t in want} == want, rows
    assert rows["User's daughter is called Mia"]["kind"] == "not-remembered"
    text = cli_here(home.root, "memory", "review").stdout
    # each item's own line says where `add` writes it (a line missing or worded otherwise fails here:
    # "not in text" alone would pass on any wording)
    for words, scope in want.items():
        line = f"add to memory (into the memory scope {scope}): memtray memory review add {rows[words]['id']}"
        assert line in text, text
    assert f"(into the memory scope work): memtray memory review add {rows['Is vegetarian']['id']}" not in text

    for words in want:
        out = cli_here(home.root, "memory", "review", "add", rows[words]["id"], **env)
        assert out.returncode == 0, out.stderr
    facts = {f["text"]: f.get("scope") for f in json.loads(cli_here(home.root, "memory", "facts", "--json").stdout)}
    assert facts["Writes Rust at work every day"] == "work"
    assert facts["Is vegetarian"] == "global"
    assert next(s for t, s in facts.items() if "Mia" in t) == "work"
    assert (home.memory / "scopes" / "family.md").read_text() == family
    assert "Mia" not in (home.memory / "MEMORY.md").read_text() and "Rust" not in (home.memory / "MEMORY.md").read_text()
