"""Memory scopes end to end (issue 32): each scope its own file in the memory repository,
conversations that see the global memory and their own scope only (real litellm, the
scripted server), a fact moved between scopes under its id, old homes all global."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from memtray.core.agent.timetravel import reconstruct
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import MemoryWritten, decode_raw
from memtray.core.log.projections import replay
from memtray.core.mcp.writes import remember as mcp_remember
from memtray.core.memory import scopes
from memtray.core.memory.facts import Ledger
from memtray.core.memory.ledgers import find_in_history

from tests.fixtures.llm_server import Response, ScriptedLLMServer, reply, tool_call
from tests.support import cli_here, configure

JSON = dict[str, Any]
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "events"
MEMORY = "# Memory\n\n## General\n- Lives in Lyon\n- Drinks green tea\n\n## Work\n- Reviews code at Acme on Fridays\n"


def respond(req: JSON) -> Response:
    return reply("Noted.")


def morning() -> FakeClock:
    """The clock every scope test starts from: 2026-12-03 10:00 UTC."""
    return FakeClock(datetime(2026, 12, 3, 10, 0, tzinfo=UTC))


def open_app(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock, *, recall: bool = False) -> App:
    """The app the scope tests drive: the scripted server's model, no retries, consolidation
    only when asked, no background services."""
    return App.open(home, config=Config(model="openai/test-model", api_base=llm_server.base_url, llm_retries=0,
                                        memory_window=50, idle_consolidate_minutes=0, recall=recall),
                    clock=clock, ids=seeded_ids(clock), start_services=False)


@pytest.fixture
def clock() -> FakeClock:
    return morning()


@pytest.fixture
def app(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock) -> Iterator[App]:
    llm_server.responder = respond
    a = open_app(home, llm_server, clock, recall=True)
    yield a
    a.close()


def turn(app: App, clock: FakeClock, session: str, text: str) -> None:
    clock.advance(60)
    app.run(app.agent.turn(session, text, stream=False))


def prompt_text(server: ScriptedLLMServer) -> str:
    """Everything the last chat request carried (system prompt, notes, history)."""
    return json.dumps(server.chat_requests[-1].json["messages"], ensure_ascii=False)


def fact_id(app: App, words: str) -> str:
    return next(f.id for f in app.memory.ledger().facts if words in f.text)


def setup_scopes(app: App) -> dict[str, str]:
    app.memory.write(MEMORY, reason="user-edit", source="user")
    ids = {w: fact_id(app, w) for w in ("Lyon", "tea", "Acme")}
    app.memory.move_fact(ids["Acme"], "work", "a work convention")
    app.memory.write(app.store.state.memory + "\n## Family\n- Daughter Ada plays the cello\n",
                     reason="user-edit", source="user")
    ids["Ada"] = fact_id(app, "Ada")
    app.memory.move_fact(ids["Ada"], "family", "about the family")
    return ids


def test_two_scopes_never_see_each_others_facts(app: App, llm_server: ScriptedLLMServer, clock: FakeClock) -> None:
    ids = setup_scopes(app)
    app.worker.call(lambda: scopes.choose(app.store, "w", "work"))
    app.worker.call(lambda: scopes.choose(app.store, "f", "family"))

    turn(app, clock, "w", "What do I do on Fridays?")
    work = prompt_text(llm_server)
    assert "Reviews code at Acme" in work and "Lives in Lyon" in work
    assert "Ada" not in work and "cello" not in work

    turn(app, clock, "f", "What does my daughter play?")
    family = prompt_text(llm_server)
    assert "cello" in family and "Lives in Lyon" in family
    assert "Acme" not in family

    turn(app, clock, "g", "Where do I live?")
    everyday = prompt_text(llm_server)
    assert "Lives in Lyon" in everyday and "Acme" not in everyday and "cello" not in everyday

    # a change while the conversations run is told only where its fact belongs (layout 3's notes)
    app.memory.remember("Deploys on Tuesdays only", "Work", model=None, source_seq=None, scope="work")
    app.memory.remember("Ada has a recital in May", "Family", model=None, source_seq=None, scope="family")
    turn(app, clock, "f", "Anything new?")
    family = prompt_text(llm_server)
    assert "recital in May" in family and "Tuesdays" not in family and "Acme" not in family
    turn(app, clock, "w", "Anything new?")
    work = prompt_text(llm_server)
    assert "Tuesdays" in work and "recital" not in work and "cello" not in work

    # a fact moved out of the global memory into family leaves the work conversation's sight
    app.memory.move_fact(ids["tea"], "family", "only matters at home")
    turn(app, clock, "w", "And now?")
    notes = json.dumps(llm_server.chat_requests[-1].json["messages"][-1], ensure_ascii=False)
    assert "Drinks green tea (moved to another memory scope)" in notes
    turn(app, clock, "f", "And now?")
    assert "moved to another memory scope" not in json.dumps(llm_server.chat_requests[-1].json["messages"][-1])

    # prompt time travel rebuilds every scoped request byte for byte
    rebuilt = reconstruct(lambda: app.store.log.records())
    assert rebuilt and all(r.match for r in rebuilt.values())


def test_a_scopes_dated_facts_stay_out_of_other_conversations_time_notes(
    app: App, llm_server: ScriptedLLMServer, clock: FakeClock
) -> None:
    """The "Memory as of" block (facts with a time) lists only what the conversation may see."""
    setup_scopes(app)
    app.memory.remember("Ada's recital (from 2026-12-20 until 2026-12-20)", "Family", model=None,
                        source_seq=None, scope="family")
    app.memory.remember("Quarterly audit at Acme (from 2026-12-10 until 2026-12-12)", "Work", model=None,
                        source_seq=None, scope="work")
    app.worker.call(lambda: scopes.choose(app.store, "w", "work"))
    app.worker.call(lambda: scopes.choose(app.store, "f", "family"))
    turn(app, clock, "w", "What is coming up?")
    work = prompt_text(llm_server)
    assert "Quarterly audit" in work and "recital" not in work
    turn(app, clock, "f", "What is coming up?")
    family = prompt_text(llm_server)
    assert "recital" in family and "audit" not in family
    turn(app, clock, "g", "What is coming up?")
    everyday = prompt_text(llm_server)
    assert "audit" not in everyday and "recital" not in everyday


def test_each_scope_is_its_own_file_in_the_repository(app: App) -> None:
    setup_scopes(app)
    root = app.home.memory
    assert "Acme" not in (root / "MEMORY.md").read_text() and "Ada" not in (root / "MEMORY.md").read_text()
    assert "Reviews code at Acme" in (root / "scopes" / "work.md").read_text()
    assert "Ada plays the cello" in (root / "scopes" / "family.md").read_text()
    head = app.memory.git.head()
    assert head is not None
    assert app.memory.git.read_memory(head) == app.store.state.memory  # the files join back exactly

    # a hand edit moves a bullet from one file to another: the same fact, now global
    (root / "scopes" / "family.md").write_text("## Family\n")
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "- Daughter Ada plays the cello\n")
    ada = fact_id(app, "Ada")
    assert app.memory.check_worktree()
    assert fact_id(app, "Ada") == ada
    assert scopes.scope_map(app.memory.ledger(), app.store.state.memory)[ada] == scopes.GLOBAL
    assert not (root / "scopes" / "family.md").exists()  # a scope left without facts has no file


def test_a_moved_fact_keeps_its_id_and_history(app: App) -> None:
    ids = setup_scopes(app)
    acme = ids["Acme"]
    before = app.memory.ledger().get(acme)
    app.memory.move_fact(acme, "global", "it is about me everywhere")
    after = app.memory.ledger().get(acme)
    assert before is not None and after is not None and after.text == before.text
    last = MemoryWritten.of(next(r for r in reversed(list(app.store.log.records())) if r.type == MemoryWritten.TYPE))
    assert last.reason == "move"
    assert last.moved == [{"id": acme, "section": "Work", "text": "Reviews code at Acme on Fridays",
                           "source": "work", "target": "global", "reason": "it is about me everywhere"}]
    assert last.diff is not None and not (last.diff["added"] or last.diff["dropped"] or last.diff["changed"])
    assert find_in_history(app.memory.ledgers, acme) is not None
    # the history of the id runs through both scopes: every revision since its first write has it
    seen = [r.seq for r in app.store.log.records() if r.type == MemoryWritten.TYPE
            and acme in (MemoryWritten.of(r).facts or {"ids": []})["ids"]]
    assert len(seen) == app.store.state.memory_revisions
    # a consolidation's put-back, an undo, any rewrite never moves a fact on its own
    app.memory.write(app.store.state.memory.replace("- Daughter Ada plays the cello\n", "")
                     + "\n- Daughter Ada plays the cello\n", reason="user-edit", source="memtray")
    assert scopes.scope_map(app.memory.ledger(), app.store.state.memory)[ids["Ada"]] == "family"


def test_an_old_home_opens_with_everything_global(home: Home, clock: FakeClock) -> None:
    recs = [decode_raw(line) for line in (GOLDEN / "v1.jsonl").read_bytes().split(b"\n") if line]
    state = replay(recs)
    assert state.memory and all(s.scope is None for s in state.sessions.values())
    assert scopes.names(state.memory) == [] and scopes.view(state.memory, "work") == state.memory
    assert scopes.files(state.memory) == {"MEMORY.md": state.memory}
    # a home written before scopes: its memory is MEMORY.md whole, no scopes folder, one global memory
    a = App.open(home, config=Config(model="openai/x"), clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        a.memory.write(MEMORY, reason="user-edit", source="user")
        assert (home.memory / "MEMORY.md").read_text() == MEMORY
        assert not (home.memory / "scopes").exists()
        assert set(scopes.scope_map(a.memory.ledger(), a.store.state.memory).values()) == {"global"}
    finally:
        a.close()


def test_the_command_line_knows_scopes(home: Home, llm_server: ScriptedLLMServer, clock: FakeClock) -> None:
    llm_server.responder = respond
    env = configure(home, llm_server)
    a = App.open(home, clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        ids = setup_scopes(a)
    finally:
        a.close()
    acme, ada = ids["Acme"], ids["Ada"]

    out = cli_here(home.root, "ask", "--session", "job", "--scope", "work", "What do I do on Fridays?", **env)
    assert out.returncode == 0, out.stderr
    sent = json.dumps(llm_server.chat_requests[-1].json["messages"])
    assert "Acme" in sent and "cello" not in sent
    out = cli_here(home.root, "ask", "--session", "job", "And on Mondays?", **env)  # the scope is remembered
    sent = json.dumps(llm_server.chat_requests[-1].json["messages"])
    assert out.returncode == 0 and "Acme" in sent and "cello" not in sent
    bad = cli_here(home.root, "ask", "--scope", "../etc", "hi", **env)
    assert bad.returncode != 0 and "not a scope name" in bad.stderr and "Traceback" not in bad.stderr

    shown = cli_here(home.root, "memory", "show", "--scope", "work").stdout
    assert "Acme" in shown and "Lyon" not in shown and "cello" not in shown
    assert "Lyon" in cli_here(home.root, "memory", "show", "--scope", "global").stdout

    moved = cli_here(home.root, "memory", "move", acme, "--scope", "family", "--reason", "it was a family rota", "--json")
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["move"] == {"id": acme, "section": "Work", "text": "Reviews code at Acme on Fridays",
                                                "source": "work", "target": "family", "reason": "it was a family rota"}
    rows = json.loads(cli_here(home.root, "memory", "log", "--scope", "family", "--json").stdout)
    assert rows and all("family" in r["scopes"] for r in rows) and rows[0]["reason"] == "move"
    # every revision of family, and only those (the set-up has revisions that touched only work or global)
    every = json.loads(cli_here(home.root, "memory", "log", "--json").stdout)
    assert [r["rev"] for r in rows] == [r["rev"] for r in every if "family" in r.get("scopes", [])]
    assert any("family" not in r.get("scopes", []) for r in every), every
    diff = json.loads(cli_here(home.root, "memory", "diff", "--scope", "family", "--json").stdout)
    assert set(diff) >= {"added", "dropped", "changed", "unchanged"}
    why = cli_here(home.root, "memory", "why", acme, "--scope", "family", "--json")
    assert json.loads(why.stdout)["scope"] == "family" and json.loads(why.stdout)["fact"]["id"] == acme
    refused = cli_here(home.root, "memory", "why", ada, "--scope", "work")
    assert refused.returncode != 0 and "cello" not in refused.stdout + refused.stderr

    # undoing the move through one scope would write into the other: refused, said, nothing written
    refused = cli_here(home.root, "memory", "undo", "HEAD", "--scope", "family", "--json")
    assert refused.returncode == 1, refused.stderr
    assert json.loads(refused.stdout)["done"] == [] and json.loads(refused.stdout)["revision"] is None
    assert [d["why"] for d in json.loads(refused.stdout)["not_done"]] == [
        "it is in another memory scope now, or it came from one; undo it without --scope"]
    assert "Acme" in cli_here(home.root, "memory", "show", "--scope", "family").stdout
    undone = cli_here(home.root, "memory", "undo", "HEAD", "--json")  # whole: the user sees every scope
    assert undone.returncode == 0, undone.stderr
    assert [d["action"] for d in json.loads(undone.stdout)["done"]] == ["moved back"]
    assert "Acme" in cli_here(home.root, "memory", "show", "--scope", "work").stdout
    listed = json.loads(cli_here(home.root, "memory", "scopes", "--json").stdout)
    assert {r["scope"] for r in listed} == {"global", "work", "family"}


def consolidating(edits: list[JSON], seen: list[str]) -> Any:
    """A model that answers chat turns and, asked to consolidate, records what it was shown
    and sends ``edits`` (a hostile mix: a fact for another scope, an invented move...)."""
    def respond_(req: JSON) -> Response:
        if any(t.get("function", {}).get("name") == "save_memory" for t in req.get("tools") or []):
            seen.append(json.dumps(req["messages"], ensure_ascii=False))
            return tool_call("save_memory", {"history_entry": "[2026-12-03 10:00] Work talk.", "edits": edits,
                                             "removed_facts": []})
        return reply("Noted.")
    return respond_


def test_a_consolidation_writes_into_its_conversations_scope(app: App, llm_server: ScriptedLLMServer,
                                                             clock: FakeClock) -> None:
    ids = setup_scopes(app)
    family_before = scopes.only(app.store.state.memory, "family")
    seen: list[str] = []
    llm_server.responder = consolidating([
        {"op": "add", "text": "Writes Rust at work every day", "section": "Work",
         "receipt": {"messages": [1], "quote": "I write Rust at work every day"}},
        {"op": "add", "text": "Is vegetarian", "section": "Food", "scope": "global",
         "receipt": {"messages": [3], "quote": "I am vegetarian"}},
        {"op": "add", "text": "Has a daughter called Mia", "section": "Family", "scope": "family",
         "receipt": {"messages": [5], "quote": "My daughter is called Mia"}},
        {"op": "move", "id": ids["tea"], "scope": "work", "reason": "only drinks it at the office"},
        {"op": "move", "id": ids["Ada"], "scope": "work", "reason": "invented: a fact it was never shown"},
        {"op": "move", "id": ids["Lyon"], "scope": "work"},
    ], seen)
    app.worker.call(lambda: scopes.choose(app.store, "w", "work"))
    for text in ("I write Rust at work every day.", "I am vegetarian.", "My daughter is called Mia."):
        turn(app, clock, "w", text)
    out = app.run(app.consolidation.consolidate("w"))

    assert seen and "Acme" in seen[0] and "Lyon" in seen[0]
    assert 'belongs to the memory scope \\"work\\"' in seen[0]  # the model is told where its facts go
    assert "cello" not in seen[0] and "Ada" not in seen[0]  # the model never saw the family scope
    where = {f.text: s for f, s in zip(app.memory.ledger().facts, scopes.of_facts(app.store.state.memory),
                                       strict=True)}
    assert where["Writes Rust at work every day"] == "work"
    assert where["Is vegetarian"] == "global"
    assert where["Drinks green tea"] == "work"  # moved, with its reason
    assert where["Lives in Lyon"] == "global"  # a move without a reason is refused
    assert "Has a daughter called Mia" not in where  # another scope: refused at the door...
    assert scopes.only(app.store.state.memory, "family") == family_before  # ...and family is untouched
    assert any("refused" in n and "'family'" in n for n in out.notes)
    assert any("no fact of this conversation's memory" in n for n in out.notes)
    assert any("without a reason" in n for n in out.notes)
    # what the user said and nothing kept is listed, one click from memory
    assert any(i.get("kind") == "not-remembered" and "Mia" in i["text"] for i in app.store.state.review.values())
    last = MemoryWritten.of(next(r for r in reversed(list(app.store.log.records())) if r.type == MemoryWritten.TYPE))
    assert last.moved is not None and [(m["id"], m["target"], m["reason"]) for m in last.moved] == [
        (ids["tea"], "work", "only drinks it at the office")]


def test_recall_and_search_stay_in_their_scope(app: App, llm_server: ScriptedLLMServer, clock: FakeClock) -> None:
    setup_scopes(app)
    app.worker.call(lambda: scopes.choose(app.store, "f", "family"))
    app.worker.call(lambda: scopes.choose(app.store, "w", "work"))
    turn(app, clock, "f", "The cello teacher Mrs Okafor comes on Thursdays.")
    turn(app, clock, "w", "The staging server Okafor-7 reboots on Thursdays.")
    turn(app, clock, "g", "Who is Okafor again?")  # a global conversation: neither scope's talk
    assert "cello teacher" not in prompt_text(llm_server) and "staging server" not in prompt_text(llm_server)
    turn(app, clock, "w", "When does Okafor reboot?")
    work = prompt_text(llm_server)
    assert "cello teacher" not in work
    svc = app.search
    assert svc is not None
    found = app.run(svc.asearch("Okafor Thursdays", mode="keyword", scope="family"))
    assert {h.session for h in found.hits} == {"f"}
    everything = app.run(svc.asearch("Okafor Thursdays", mode="keyword"))
    assert {"f", "w"} <= {h.session for h in everything.hits}


def test_restore_and_rollback_bring_a_fact_back_in_its_scope(app: App) -> None:
    ids = setup_scopes(app)
    ada = ids["Ada"]
    app.memory.forget_fact(ada, "asked to forget")
    app.memory.restore_fact(None, ada)
    where = scopes.scope_map(app.memory.ledger(), app.store.state.memory)
    assert where[ada] == "family"  # back where it was, not in the global memory
    before_move = app.memory.revision("HEAD").rev
    app.memory.move_fact(ids["Acme"], "global", "about me everywhere")
    app.memory.rollback(before_move)
    assert scopes.scope_map(app.memory.ledger(), app.store.state.memory)[ids["Acme"]] == "work"


def test_a_client_limited_to_a_scope_learns_nothing_of_another_scopes_facts(home: Home) -> None:
    """What a scoped script (an MCP client's commands) is told does not depend on what other
    scopes hold: a fact elsewhere is written into its scope as new, `why` answers as for a fact
    that does not exist, `log` pages after filtering, `diff` counts only its scope."""
    def cli(*argv: str) -> Any:
        out = cli_here(home.root, *argv)
        return out

    assert cli("mcp", "remember", "--client", "t", "--scope", "family", "--", "User's daughter is named Zoe").returncode == 0
    assert cli("mcp", "remember", "--client", "t", "--scope", "work", "--", "User's employer is Acme").returncode == 0
    for n in range(3):  # the family scope changes after work's last revision
        assert cli("mcp", "remember", "--client", "t", "--scope", "family", "--", f"Family fact {n}").returncode == 0

    # why: a fact of another scope and no fact at all get the same answer, by words and by id
    other = cli("memory", "why", "--scope", "work", "--", "Zoe")
    nothing = cli("memory", "why", "--scope", "work", "--", "xyzzy")
    assert other.returncode == nothing.returncode == 1
    assert other.stderr.replace("'Zoe'", "Q") == nothing.stderr.replace("'xyzzy'", "Q")
    zoe = json.loads(cli("memory", "facts", "--json").stdout)
    zoe_id = next(f["id"] for f in zoe if "Zoe" in f["text"])
    by_id, no_id = cli("memory", "why", "--scope", "work", "--", zoe_id), cli("memory", "why", "--scope", "work", "--", "F99")
    assert by_id.stderr.replace(repr(zoe_id), "Q") == no_id.stderr.replace("'F99'", "Q")
    assert json.loads(cli("memory", "why", "--scope", "work", "--json", "--", "Acme").stdout)["scope"] == "work"

    # remember: the same words in another scope are not "already remembered" from work
    same = cli("mcp", "remember", "--client", "t", "--scope", "work", "--", "User's daughter is named Zoe")
    assert same.returncode == 0 and "remembered: " in same.stdout, same.stdout
    assert "Zoe" in cli("memory", "show", "--scope", "work").stdout
    assert "Zoe" in cli("memory", "show", "--scope", "family").stdout
    again = cli("mcp", "remember", "--client", "t", "--scope", "work", "--", "User's daughter is named Zoe")
    assert "already remembered" in again.stdout

    # log: the page is cut after the scope's rows are chosen
    rows = json.loads(cli("memory", "log", "--json", "--scope", "work", "--limit", "1").stdout)
    assert len(rows) == 1
    # diff: the unchanged count is the scope's own
    d = json.loads(cli("memory", "diff", "--json", "--scope", "work").stdout)
    assert [f["text"] for f in d["added"]] == ["User's daughter is named Zoe"]
    assert d["unchanged"] == 1  # Acme; the family's five facts are not counted


def test_an_undo_through_a_scope_never_writes_or_shows_another_scope(app: App) -> None:
    """`memory undo REV --scope X` (what an MCP client limited to X runs) undoes only the
    changes that stay inside X; a change that crosses into another scope is listed as not
    undone, in the words X saw, the same whichever scope it is, and every other file is
    left byte for byte."""
    ids = setup_scopes(app)
    root = app.home.memory
    # one revision that touches both scopes: a family fact reworded, a work fact removed
    mem = app.store.state.memory.replace("Daughter Ada plays the cello", "Daughter Ada plays the viola")
    mem = mem.replace("- Reviews code at Acme on Fridays\n", "")
    led = app.memory.ledger()
    app.memory.write(mem, reason="user-edit", source="memtray",
                     facts=Ledger.with_ids(mem, [i for i in led.ids if i != ids["Acme"]], led.next))
    both = app.memory.revision("HEAD").rev
    app.memory.remember("Deploys on Tuesdays", "Work", model=None, source_seq=None, scope="work")
    work_before = (root / "scopes" / "work.md").read_text()
    res = app.memory.undo(both, "family")
    assert [(d["id"], d["action"]) for d in res.done] == [(ids["Ada"], "reverted")]
    assert res.not_done == []  # the work fact's removal is not family's: not even named
    assert "plays the cello" in (root / "scopes" / "family.md").read_text()
    assert (root / "scopes" / "work.md").read_text() == work_before  # work untouched: Acme stays gone

    # a fact added in family and moved to work since: undoing its addition through family would
    # remove it from work; a work fact moved into family and reworded there: through family it
    # would go back into work
    app.memory.remember("Ada has a recital in May", "Family", model=None, source_seq=None, scope="family")
    added = app.memory.revision("HEAD").rev
    recital = fact_id(app, "recital")
    app.memory.move_fact(recital, "work", "a work calendar entry")
    app.memory.move_fact(fact_id(app, "Deploys"), "family", "the family's car is deployed")
    moved = app.memory.revision("HEAD").rev
    snapshot = {p.name: p.read_text() for p in [root / "MEMORY.md", *sorted((root / "scopes").iterdir())]}
    revisions = app.store.state.memory_revisions
    for rev, words in ((added, "Ada has a recital in May"), (moved, "Deploys on Tuesdays")):
        res = app.memory.undo(rev, "family")
        assert res.revision is None and res.done == []
        assert [(d["text"], d["why"]) for d in res.not_done] == [
            (words, "it is in another memory scope now, or it came from one; undo it without --scope")]
        assert "work" not in str(res.to_json()["not_done"]) and "global" not in str(res.to_json()["not_done"])
    assert app.store.state.memory_revisions == revisions
    assert {p.name: p.read_text() for p in [root / "MEMORY.md", *sorted((root / "scopes").iterdir())]} == snapshot

    # removed from family, brought back through family: into family, though work holds the same
    # words (refusing "the same words are in memory" would tell family what work holds)
    assert mcp_remember(app.memory, "Ada has a recital in May", "Family", "t", scope="family").startswith("remembered")
    again = next(f.id for f, s in zip(app.memory.ledger().facts, scopes.of_facts(app.store.state.memory), strict=True)
                 if "recital" in f.text and s == "family")
    app.memory.forget_fact(again, "cancelled")
    res = app.memory.undo("HEAD", "family")
    assert [(d["id"], d["action"]) for d in res.done] == [(again, "restored")], res.not_done
    where = scopes.scope_map(app.memory.ledger(), app.store.state.memory)
    assert where[again] == "family" and where[recital] == "work"


def test_an_undo_through_a_scope_that_has_no_fact_left_keeps_the_global_memory(app: App) -> None:
    """The scope's only fact removed (memory has no scope block then), brought back through
    the scope: it returns into the scope and the global memory stays whole."""
    app.memory.write(MEMORY, reason="user-edit", source="user")
    acme = fact_id(app, "Acme")
    app.memory.move_fact(acme, "work", "a work convention")
    app.memory.forget_fact(acme, "left the job")
    assert "<!-- scope:" not in app.store.state.memory
    res = app.memory.undo("HEAD", "work")
    assert [(d["id"], d["action"]) for d in res.done] == [(acme, "restored")]
    where = scopes.scope_map(app.memory.ledger(), app.store.state.memory)
    assert where == {fact_id(app, "Lyon"): "global", fact_id(app, "tea"): "global", acme: "work"}


def test_memory_diff_shows_a_fact_moved_between_scopes(home: Home, clock: FakeClock) -> None:
    a = App.open(home, clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        ids = setup_scopes(a)
    finally:
        a.close()
    ada = ids["Ada"]
    moved = cli_here(home.root, "memory", "move", ada, "--scope", "work", "--reason", "back")
    assert moved.returncode == 0, moved.stderr

    text = cli_here(home.root, "memory", "diff")
    assert text.returncode == 0, text.stderr
    assert "no fact changes" not in text.stdout
    assert f"> {ada} [Family] Daughter Ada plays the cello (moved from family to work)" in text.stdout
    data = json.loads(cli_here(home.root, "memory", "diff", "--json").stdout)
    assert data["moved"] == [{"id": ada, "section": "Family", "text": "Daughter Ada plays the cello",
                              "from": "family", "to": "work"}]
    assert data["added"] == data["dropped"] == data["changed"] == []
    # seen from each side: the fact leaves family and enters work; a scope it never was in sees nothing
    left = json.loads(cli_here(home.root, "memory", "diff", "--scope", "family", "--json").stdout)
    entered = json.loads(cli_here(home.root, "memory", "diff", "--scope", "work", "--json").stdout)
    other = json.loads(cli_here(home.root, "memory", "diff", "--scope", "global", "--json").stdout)
    assert [m["id"] for m in left["moved"]] == [m["id"] for m in entered["moved"]] == [ada]
    assert other["moved"] == [] and "cello" not in json.dumps(other)
    assert entered["unchanged"] == 1  # Acme; the fact that came in is counted as moved, not as unchanged
    assert "moved out, to work" in cli_here(home.root, "memory", "diff", "--scope", "family").stdout
    assert "moved in, from family" in cli_here(home.root, "memory", "diff", "--scope", "work").stdout
    assert "no fact changes" in cli_here(home.root, "memory", "diff", "--scope", "global").stdout
