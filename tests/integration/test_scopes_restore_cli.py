"""Memory scopes from the command line (issue 32), what an outside tester found: `memory
restore-fact` judged and placed by the fact's own scope, `memory move` keeping MEMORY.md's
title, a not-remembered statement naming its message once. Each command runs in this process
(tests/support.cli_here) against a real data home."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.home import Home
from memtray.core.mcp.writes import remember as mcp_remember
from memtray.core.memory import scopes
from memtray.core.memory.items import review_item

from tests.fixtures.llm_server import ScriptedLLMServer
from tests.integration.test_scopes import MEMORY, consolidating, morning, setup_scopes
from tests.support import cli_here, configure

ADA = "Daughter Ada plays the cello"
ACME = "Reviews code at Acme on Fridays"


@pytest.fixture
def clock() -> FakeClock:
    return morning()


def prepared(home: Home, clock: FakeClock, then: Callable[[App, dict[str, str]], None] | None = None) -> dict[str, str]:
    """The scopes of tests/integration/test_scopes.py (global, work, family) in ``home``, and
    ``then`` done with the app; the ids of their facts."""
    a = App.open(home, clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        ids = setup_scopes(a)
        if then is not None:
            then(a, ids)
    finally:
        a.close()
    return ids


def cli(home: Home, *argv: str) -> Any:
    out = cli_here(home.root, *argv)
    assert out.returncode == 0, out.stderr
    return out


def where(home: Home) -> list[tuple[str, str, str]]:
    """(id, text, scope) of every fact now, as `memory facts --json` lists them."""
    return [(f["id"], f["text"], f.get("scope") or scopes.GLOBAL)
            for f in json.loads(cli(home, "memory", "facts", "--json").stdout)]


def test_restore_fact_is_judged_by_its_own_scope_and_lands_there(home: Home, clock: FakeClock) -> None:
    """The same words in another scope are another fact: restoring a work fact that family also
    holds (family sorts first, so a match by words alone finds family's) is not "already in
    memory", and it comes back into work under its id, family's copy untouched."""
    def twin(a: App, _ids: dict[str, str]) -> None:
        assert mcp_remember(a.memory, ACME, "Work", "t", scope="family").startswith("remembered")

    ids = prepared(home, clock, twin)
    acme = ids["Acme"]
    family_copy = next(i for i, t, s in where(home) if t == ACME and s == "family")
    family = (home.memory / "scopes" / "family.md").read_text()
    cli(home, "memory", "forget", acme, "--reason", "left the job")
    assert (acme, ACME, "work") not in where(home)

    out = cli_here(home.root, "memory", "restore-fact", acme)
    assert out.returncode == 0, out.stderr
    assert "restored as revision" in out.stdout
    now = where(home)
    assert (acme, ACME, "work") in now and (family_copy, ACME, "family") in now
    assert [t for _i, t, _s in now].count(ACME) == 2
    assert (home.memory / "scopes" / "family.md").read_text() == family
    assert ACME not in (home.memory / "MEMORY.md").read_text()  # not into the global memory


def test_restore_fact_into_a_scope_sorted_after_the_twin(home: Home, clock: FakeClock) -> None:
    """A family fact whose words work holds too (work sorts after family, so the restored
    bullet comes first by words): back in family, under its id; work's keeps its own."""
    def twin(a: App, _ids: dict[str, str]) -> None:
        assert mcp_remember(a.memory, ADA, "Family", "t", scope="work").startswith("remembered")

    ids = prepared(home, clock, twin)
    ada = ids["Ada"]
    work_copy = next(i for i, t, s in where(home) if t == ADA and s == "work")
    cli(home, "memory", "forget", ada, "--reason", "she stopped")
    assert cli_here(home.root, "memory", "restore-fact", ada).returncode == 0
    now = where(home)
    assert (ada, ADA, "family") in now and (work_copy, ADA, "work") in now


def test_restore_fact_is_refused_when_its_scope_sees_the_words(home: Home, clock: FakeClock) -> None:
    """The global memory is part of what every scope sees: the same words there are "already
    in memory" for a scoped fact, and nothing is written."""
    ids = prepared(home, clock)
    ada = ids["Ada"]
    cli(home, "memory", "forget", ada, "--reason", "she stopped")
    cli(home, "mcp", "remember", "--client", "t", "--", ADA)  # now a global fact
    before = where(home)
    out = cli_here(home.root, "memory", "restore-fact", ada)
    assert out.returncode == 1 and "already in memory" in out.stderr and "Traceback" not in out.stderr
    assert where(home) == before


def test_memory_move_keeps_the_title_of_memory_md(home: Home, clock: FakeClock) -> None:
    """The first move out of the global memory kept MEMORY.md's facts and dropped its
    `# Memory` title (a heading with no line of its own under it read as emptied); the
    section the fact leaves goes, the title stays, also once no global fact is left."""
    a = App.open(home, clock=clock, ids=seeded_ids(clock), start_services=False)
    try:
        a.memory.write(MEMORY, reason="user-edit", source="user")
    finally:
        a.close()
    ids = {t: i for i, t, _s in where(home)}
    root = home.memory

    cli(home, "memory", "move", ids[ACME], "--scope", "work", "--reason", "a work convention")
    assert (root / "MEMORY.md").read_text() == "# Memory\n\n## General\n- Lives in Lyon\n- Drinks green tea\n"
    assert (root / "scopes" / "work.md").read_text() == f"## Work\n- {ACME}\n"
    cli(home, "memory", "move", ids["Lives in Lyon"], "--scope", "family", "--reason", "home")
    cli(home, "memory", "move", ids["Drinks green tea"], "--scope", "family", "--reason", "home")
    assert (root / "MEMORY.md").read_text() == "# Memory\n"
    assert where(home) == [(ids["Lives in Lyon"], "Lives in Lyon", "family"),
                           (ids["Drinks green tea"], "Drinks green tea", "family"), (ids[ACME], ACME, "work")]
    cli(home, "memory", "move", ids[ACME], "--scope", "global", "--reason", "everywhere")
    assert (root / "MEMORY.md").read_text() == f"# Memory\n\n## Work\n- {ACME}\n"
    assert not (root / "scopes" / "work.md").exists()


def test_a_statement_nothing_kept_names_its_message_once(home: Home, llm_server: ScriptedLLMServer,
                                                         clock: FakeClock) -> None:
    """A not-remembered item said "you said this (message #3)" (the consolidation's own count)
    above "you said: ... (message #9)" (the log's): two numbers for one message. It names the
    message once, by the log's number, in the listing, its JSON and the desktop's review (the
    same source); an item held before says the same (its log keeps the old words)."""
    configure(home, llm_server)
    said = ("I write Rust at work every day.", "I am vegetarian.")

    def talk(a: App, _ids: dict[str, str]) -> None:
        llm_server.responder = consolidating([], [])
        a.worker.call(lambda: scopes.choose(a.store, "w", "work"))
        for text in said:
            clock.advance(60)
            a.run(a.agent.turn("w", text, stream=False))
        a.run(a.consolidation.consolidate("w"))
        old = review_item("not-remembered", "User keeps bees", "", None,
                          "you said this (message #5); no fact, diary entry or skip keeps it", quote="I keep bees.")
        old["source_seqs"] = [2]
        a.memory.write(a.store.state.memory, reason="consolidation", source="model", flagged=[old])

    prepared(home, clock, talk)
    rows = {r["text"]: r for r in json.loads(cli(home, "memory", "review", "--json").stdout)}
    wanted = {"User is vegetarian": "I am vegetarian.", "User writes Rust at work every day": said[0],
              "User keeps bees": "I keep bees."}
    assert {t: rows[t]["quote"] for t in wanted} == wanted, rows
    for text in wanted:
        row = rows[text]
        assert row["kind"] == "not-remembered" and "#" not in row["reason"], row
        assert row["reason"] == "you said this; no fact, diary entry or skip keeps it"
        assert len(row["source_seqs"]) == 1
    listing = cli(home, "memory", "review").stdout
    for text in wanted:
        block = listing[listing.index(text):].split("keep out:")[0]
        assert block.count("message #") == 1, block
        assert f'you said: "{rows[text]["quote"]}" (message #{rows[text]["source_seqs"][0]})' in block

    a = App.open(home, clock=clock, ids=seeded_ids(clock), start_services=False)
    try:  # the desktop's review (core/memory/review.py review_view) lists the same words
        shown = {i["text"]: i["reason"] for i in a.memory.review_view()["items"]}
    finally:
        a.close()
    assert {t: shown[t] for t in wanted} == {t: rows[t]["reason"] for t in wanted}
