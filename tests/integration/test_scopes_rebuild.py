"""Everything that makes memory again from the log keeps each fact in its scope (issue 32):
`memtray doctor`'s rebuild of memory/ (the projection from the events), and `memtray memory
rebuild` (a re-consolidation onto rebuild/NAME) whose consolidations run in their
conversation's scope and whose patches re-do main's moves and undos. A home with two scopes
and the global memory, moves and undos, then a rebuild: the same file for every scope."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from memtray.core.admin import doctor
from memtray.core.app import App
from memtray.core.audit import rebuild
from memtray.core.audit.adopt import adopt
from memtray.core.base.clock import FakeClock
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.memory import scopes

from tests.fixtures.llm_server import Response, ScriptedLLMServer, reply, tool_call
from tests.integration.test_scopes import morning, open_app

JSON = dict[str, Any]
MEMORY = "# Memory\n\n## General\n- Lives in Lyon\n- Drinks green tea\n\n## Work\n- Reviews code at Acme on Fridays\n"
#: what each conversation says, and the fact a consolidation makes of it (in a section no scope
#: has yet, so a fact put "anywhere" lands in the global memory, not under a heading of its scope)
SAID = {"I write Rust at work every day.": ("Writes Rust at work every day", "Languages"),
        "My son Leo plays the drums.": ("Son Leo plays the drums", "Music"),
        "I am vegetarian.": ("Is vegetarian", "Food")}


def consolidator(shown: list[str]) -> Any:
    """A model that answers turns and, asked to consolidate, adds one fact per thing the user
    said (without naming a scope), recording the memory it was shown."""
    def respond(req: JSON) -> Response:
        if not any(t.get("function", {}).get("name") == "save_memory" for t in req.get("tools") or []):
            return reply("Noted.")
        sent = json.dumps(req["messages"], ensure_ascii=False)
        shown.append(sent)
        edits = [{"op": "add", "text": fact, "section": section, "receipt": {"messages": [1], "quote": said.rstrip(".")}}
                 for said, (fact, section) in SAID.items() if said in sent]
        return tool_call("save_memory", {"history_entry": "[2026-12-03 10:00] Talk.", "edits": edits,
                                         "removed_facts": []})
    return respond


@pytest.fixture
def clock() -> FakeClock:
    return morning()


@pytest.fixture
def app(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock) -> Iterator[App]:
    a = open_app(home, llm_server, clock)
    yield a
    a.close()


def fact_id(app: App, words: str) -> str:
    return next(f.id for f in app.memory.ledger().facts if words in f.text)


def live_home(app: App, clock: FakeClock) -> None:
    """Two scopes and the global memory, written by consolidations in scoped conversations, by
    hand, by moves and by undos (whole and through a scope)."""
    app.memory.write(MEMORY, reason="user-edit", source="user")
    app.memory.move_fact(fact_id(app, "Acme"), "work", "a work convention")
    app.memory.write(app.store.state.memory + "\n## Family\n- Daughter Ada plays the cello\n",
                     reason="user-edit", source="user")
    app.memory.move_fact(fact_id(app, "Ada"), "family", "about the family")
    for session, scope, said in (("w", "work", "I write Rust at work every day."),
                                 ("f", "family", "My son Leo plays the drums."),
                                 ("g", None, "I am vegetarian.")):
        if scope is not None:
            app.worker.call(lambda s=session, n=scope: scopes.choose(app.store, s, n))
        clock.advance(60)
        app.run(app.agent.turn(session, said, stream=False))
        app.run(app.consolidation.consolidate(session, trigger="manual"))
    app.memory.move_fact(fact_id(app, "tea"), "family", "only at home")
    app.memory.move_fact(fact_id(app, "Lyon"), "work", "the office is in Lyon")
    app.memory.undo("HEAD")  # Lyon back in the global memory
    app.memory.move_fact(fact_id(app, "Rust"), "global", "I write Rust everywhere")
    app.memory.forget_fact(fact_id(app, "Leo"), "he stopped")
    app.memory.undo("HEAD", "family")  # Leo back, in family
    where = scopes.scope_map(app.memory.ledger(), app.store.state.memory)
    assert {t: where[fact_id(app, t)] for t in ("Lyon", "tea", "Acme", "Ada", "Rust", "Leo", "vegetarian")} == {
        "Lyon": "global", "tea": "family", "Acme": "work", "Ada": "family", "Rust": "global", "Leo": "family",
        "vegetarian": "global"}


def files(home: Home) -> dict[str, str]:
    return {str(p.relative_to(home.memory)): p.read_text() for p in sorted(home.memory.rglob("*.md"))
            if ".git" not in p.parts}


def git(home: Home, *args: str) -> str:
    return subprocess.run(["git", "-C", str(home.memory), *args], capture_output=True, text=True, check=True).stdout


def test_doctor_rebuilds_every_scope_file_as_it_was(app: App, llm_server: ScriptedLLMServer, clock: FakeClock,
                                                    home: Home) -> None:
    llm_server.responder = consolidator([])
    live_home(app, clock)
    app.close()
    before, head = files(home), git(home, "rev-parse", "HEAD").strip()
    assert {"MEMORY.md", "scopes/work.md", "scopes/family.md"} <= set(before)
    findings = doctor.check_memory(home)
    assert all(f.ok for f in findings), findings  # a home with scopes is in sync with its log

    said = doctor.rebuild_memory(home)  # memory/ moved aside and made again from the events
    assert "rebuilt memory/ from the event log" in said and "hand edit" not in said
    assert files(home) == before
    assert git(home, "rev-parse", "HEAD").strip() == head  # the same commits, scope files and all
    assert all(f.ok for f in doctor.check_memory(home))

    # a hand edit of a scope's file not yet recorded survives the rebuild, and is recorded
    work = home.memory / "scopes" / "work.md"
    work.write_text(work.read_text() + "- Standup at 9:30\n")
    assert any(not f.ok and "scopes/work.md" in f.detail for f in doctor.check_memory(home))
    said = doctor.rebuild_memory(home)
    assert "the hand edit of scopes/work.md was recorded" in said
    again = App.open(home, config=Config(model="openai/x"), start_services=False)
    try:
        where = scopes.scope_map(again.memory.ledger(), again.store.state.memory)
        assert where[fact_id(again, "Standup")] == "work"
    finally:
        again.close()
    assert files(home) == {**before, "scopes/work.md": before["scopes/work.md"] + "- Standup at 9:30\n"}


def test_a_rebuild_branch_has_every_scope_file_main_has(app: App, llm_server: ScriptedLLMServer, clock: FakeClock,
                                                         home: Home) -> None:
    llm_server.responder = consolidator([])
    live_home(app, clock)
    shown: list[str] = []
    llm_server.responder = consolidator(shown)
    out = app.run(rebuild.run(app, model="openai/test-model", name="again"))
    assert out.info.status == "completed" and out.done_now == out.total
    assert len(shown) == 3
    # each re-done consolidation saw what its conversation saw on main, never another scope
    work_sees = next(s for s in shown if "Rust" in s)
    family_sees = next(s for s in shown if "drums" in s)
    assert "Acme" in work_sees and "cello" not in work_sees
    assert "cello" in family_sees and "Acme" not in family_sees

    main = {n: git(home, "show", f"main:{n}") for n in ("MEMORY.md", "scopes/work.md", "scopes/family.md")}
    branch = {n: git(home, "show", f"rebuild/again:{n}") for n in main}
    assert branch == main
    assert sorted(re.findall(r"\S+\.md", git(home, "ls-tree", "-r", "--name-only", "rebuild/again"))) == sorted(
        re.findall(r"\S+\.md", git(home, "ls-tree", "-r", "--name-only", "main")))
    # the branch's facts: the same ids in the same scopes as main's
    last = rebuild.scan(app.store.log.records())[0][out.info.id].progress[-1]
    led = rebuild.step_ledger(last)
    memory = json.loads(json.dumps(last.to_json()))["data"]["memory"]
    assert memory == app.store.state.memory
    assert scopes.scope_map(led, memory) == scopes.scope_map(app.memory.ledger(), app.store.state.memory)

    # adopting it makes its memory current as it stands, each fact in the branch's scope: main
    # moved a fact since, and --force takes the branch's (the move is recorded, undoable)
    with pytest.raises(rebuild.RebuildError, match="already the current memory"):
        adopt(app, "again")
    acme = fact_id(app, "Acme")
    app.memory.move_fact(acme, "global", "about me everywhere")
    adopt(app, "again", force=True)
    assert files(home)["scopes/work.md"] == main["scopes/work.md"]
    assert app.store.state.memory == memory
    last = app.memory.moves("HEAD")
    assert [(m["id"], m["source"], m["target"]) for m in last] == [(acme, "global", "work")]
