"""Memory scopes on the command line, as the outside tester used them (issue 32): a scope name
that is empty, outside the rule or no scope at all is said clearly before anything runs."""

from __future__ import annotations

import json
import subprocess

import pytest
from memtray.core.app import App
from memtray.core.base.home import Home
from memtray.core.log.payloads import SCOPE_NAME_RULE

from tests.support import cli_here

MEMORY = """## General
- Lives in Lyon
- Trip to Kyoto (from 2001-07-01 until 2001-07-31)

## Work
- Reviews code at Acme on Fridays
- Conference in Oslo (from 2001-03-01 until 2001-03-03)

## Family
- Daughter Ada plays the cello
"""


def seed(home: Home) -> dict[str, str]:
    """Lyon and Kyoto global, Acme and Oslo in work; Ada was in family for one revision and is
    global again (family held facts once, and holds none now)."""
    with App.open(home, start_services=False) as app:
        mem = app.memory
        app.worker.call(lambda: mem.write(MEMORY, reason="user-edit", source="user"))
        ids = {w: next(f.id for f in mem.ledger().facts if w in f.text) for w in ("Lyon", "Kyoto", "Acme", "Oslo", "Ada")}
        for word, scope in (("Acme", "work"), ("Oslo", "work"), ("Ada", "family"), ("Ada", "global")):
            app.worker.call(lambda w=word, s=scope: mem.move_fact(ids[w], s, "for the test"))
        return ids


def cli(home: Home, *argv: str) -> subprocess.CompletedProcess[str]:
    return cli_here(home.root, *argv, TZ="UTC")


def refused(home: Home, *argv: str) -> str:
    out = cli(home, *argv)
    assert out.returncode == 1 and out.stdout == "", (argv, out.stdout, out.stderr)
    assert out.stderr.startswith("memtray: error: ") and "Traceback" not in out.stderr, out.stderr
    return out.stderr


READS = [("memory", "show"), ("memory", "log"), ("memory", "diff"), ("memory", "why", "Lyon"),
         ("memory", "undo", "HEAD"), ("history", "search", "Acme")]


def test_a_scope_that_does_not_exist_is_said_with_the_scopes_there_are(home: Home) -> None:
    seed(home)
    revisions = cli(home, "memory", "log", "--json").stdout
    for argv in READS:
        said = refused(home, *argv, "--scope", "wrok")
        assert said.startswith("memtray: error: there is no memory scope 'wrok'; the scopes are: global, work\n"), said
        assert "`memtray ask --scope NAME ...`" in said and "`memtray memory move ID --scope NAME" in said
    # a scope that held facts at a revision is read there (and is empty now), never refused
    assert cli(home, "memory", "show", "--scope", "family").returncode == 0
    assert "cello" in cli(home, "memory", "show", "HEAD~1", "--scope", "family").stdout
    assert cli(home, "memory", "log", "--json").stdout == revisions  # nothing was written


def test_an_empty_scope_name_is_said_to_be_empty(home: Home) -> None:
    ids = seed(home)
    revisions = cli(home, "memory", "log", "--json").stdout
    for argv in [*READS, ("memory", "move", ids["Lyon"], "--reason", "x"), ("ask", "hi"),
                 ("mcp", "remember", "--client", "t", "Likes tea"), ("mcp", "forget", "--client", "t", "--reason", "x", "Lyon")]:
        said = refused(home, *argv, "--scope", "")
        assert said.startswith("memtray: error: the scope name is empty\n"), (argv, said)
        assert SCOPE_NAME_RULE in said
    assert cli(home, "memory", "log", "--json").stdout == revisions  # not read as the global memory


@pytest.mark.parametrize("name", ["Café", "ü", "\u212a", "Work Stuff"])
def test_a_name_outside_ascii_or_the_rule_is_no_scope_name(home: Home, name: str) -> None:
    """The rule is the log door's (SCOPE_NAME): ASCII only, so the Kelvin sign, which lower-cases
    to the ASCII "k", is no scope name either."""
    ids = seed(home)
    for argv in [*READS, ("memory", "move", ids["Lyon"], "--reason", "x"), ("mcp", "remember", "--client", "t", "Tea")]:
        said = refused(home, *argv, "--scope", name)
        assert said.startswith(f"memtray: error: {name!r} is not a scope name: use 1-32 lower-case ASCII letters, "
                               "digits, '-' or '_'"), said
    assert "scope: k" not in cli(home, "memory", "show").stdout


def test_undo_json_names_the_scopes_the_undone_revision_changed(home: Home) -> None:
    """As a ``memory log`` row does (``scopes``); through ``--scope`` only that scope, since an
    undo through a scope never says which other scope a change crossed into."""
    seed(home)
    moved_back = json.loads(cli(home, "memory", "undo", "HEAD", "--json").stdout)  # Ada: family -> global, undone
    assert moved_back["undone"]["reason"] == "move" and moved_back["scopes"] == ["family", "global"]
    row = json.loads(cli(home, "memory", "log", "--json").stdout)[1]
    assert row["rev"] == moved_back["undone"]["rev"] and row["scopes"] == moved_back["scopes"]

    assert cli(home, "mcp", "remember", "--client", "t", "--scope", "work", "--", "Deploys on Tuesdays").returncode == 0
    undone = json.loads(cli(home, "memory", "undo", "HEAD", "--json", "--scope", "work").stdout)
    assert undone["scopes"] == ["work"] and [d["action"] for d in undone["done"]] == ["removed"]
    oslo = next(r for r in json.loads(cli(home, "memory", "log", "--json").stdout) if r["scopes"] == ["global", "work"])
    crossed = cli(home, "memory", "undo", oslo["rev"], "--json", "--scope", "work")  # a move from global: not undone
    assert crossed.returncode == 1 and json.loads(crossed.stdout)["scopes"] == ["work"]


def test_undo_json_of_a_home_without_scopes_keeps_its_shape(home: Home) -> None:
    with App.open(home, start_services=False) as app:
        app.worker.call(lambda: app.memory.write("## General\n- Lives in Lyon\n", reason="user-edit", source="user"))
    assert set(json.loads(cli(home, "memory", "undo", "HEAD", "--json").stdout)) == {"revision", "undone", "done",
                                                                                    "not_done"}


def test_dated_facts_show_their_scope_and_take_one(home: Home) -> None:
    ids = seed(home)
    rows = json.loads(cli(home, "memory", "dated", "--json").stdout)
    assert {r["id"]: r["scope"] for r in rows} == {ids["Kyoto"]: "global", ids["Oslo"]: "work"}
    text = cli(home, "memory", "dated").stdout
    assert f"{ids['Oslo']:<6} work         Conference in Oslo\n" in text
    assert f"{ids['Kyoto']:<6} global       Trip to Kyoto\n" in text
    work = json.loads(cli(home, "memory", "dated", "--scope", "work", "--json").stdout)
    assert [(r["id"], r["scope"]) for r in work] == [(ids["Oslo"], "work")]
    assert [r["id"] for r in json.loads(cli(home, "memory", "dated", "--scope", "global", "--json").stdout)] == [ids["Kyoto"]]
    assert cli(home, "memory", "dated", "--scope", "family").stdout == "no fact of the scope family has a time\n"
    assert refused(home, "memory", "dated", "--scope", "wrok").startswith("memtray: error: there is no memory scope 'wrok'")
