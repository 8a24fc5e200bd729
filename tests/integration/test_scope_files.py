"""A file in memory/scopes/ whose name is no scope name (capitals, spaces, letters outside
ASCII, another extension) is never read by a guess and never ignored in silence: `memory
scopes` and `memory show` warn, the app says it at start, `memtray doctor` reports it and its
repair renames it to the scope's file name, after which its facts are in that scope."""

from __future__ import annotations

import json
from typing import Any

from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.memory import scopes
from memtray.core.memory.projection import scope_file_name, unread_scope_files

from tests.support import run_cli

MEMORY = "## General\n- Lives in Lyon\n"


def cli(home: Home, *argv: str) -> Any:
    return run_cli(home.root, *argv)


def test_scope_file_names_outside_the_rule_are_said_and_repaired(home: Home) -> None:
    assert cli(home, "mcp", "remember", "--client", "t", "--", "Lives in Lyon").returncode == 0
    folder = home.memory / "scopes"
    folder.mkdir()
    (folder / "Work.md").write_text("## Work\n- Reviews code at Acme on Fridays\n")
    (folder / "My Project.md").write_text("- Deadline is in March\n")
    (folder / "Famille é.md").write_text("- Ada plays the cello\n")
    (folder / ".DS_Store").write_bytes(b"\0")  # hidden: not the user's facts

    assert unread_scope_files(home.memory) == [("Famille é.md", "famille-e.md"), ("My Project.md", "my-project.md"),
                                               ("Work.md", "work.md")]
    listed = cli(home, "memory", "scopes", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == [{"scope": "global", "facts": 1, "conversations": 0}]
    for name, to in (("Work.md", "work.md"), ("My Project.md", "my-project.md"), ("Famille é.md", "famille-e.md")):
        assert f"warning: memory/scopes/{name} is not read" in listed.stderr
        assert f"rename it to scopes/{to}" in listed.stderr
    shown = cli(home, "memory", "show")
    assert "Acme" not in shown.stdout and "memory/scopes/Work.md is not read" in shown.stderr
    app = App.open(home, config=Config(model="openai/x"), start_services=False)
    try:
        assert any("scopes/Work.md is not read" in p for p in app.memory.problems)
        assert "Acme" not in app.store.state.memory  # read by no guess
    finally:
        app.close()

    report = cli(home, "doctor")
    assert report.returncode == 1
    assert [ln.split("is not read: ")[1].split(":")[0] for ln in report.stdout.splitlines() if "[FAIL] a file in" in ln] == [
        "Famille é.md", "My Project.md", "Work.md"]
    assert "repair: rename it to scopes/work.md (its facts are then recorded as a hand edit)" in report.stdout
    fixed = cli(home, "doctor", "--repair", "--yes")
    assert "renamed scopes/Work.md to scopes/work.md" in fixed.stdout, fixed.stdout + fixed.stderr
    assert unread_scope_files(home.memory) == []
    assert cli(home, "memory", "scopes").stderr == ""
    app = App.open(home, config=Config(model="openai/x"), start_services=False)
    try:
        where = scopes.scope_map(app.memory.ledger(), app.store.state.memory)
        texts = {f.text: where[f.id] for f in app.memory.ledger().facts}
        assert texts == {"Lives in Lyon": "global", "Reviews code at Acme on Fridays": "work",
                         "Deadline is in March": "my-project", "Ada plays the cello": "famille-e"}
        assert app.memory.problems == []
    finally:
        app.close()


def test_a_file_whose_scope_file_exists_is_reported_and_left_to_the_user(home: Home) -> None:
    assert cli(home, "mcp", "remember", "--client", "t", "--scope", "work", "--", "Reviews code at Acme").returncode == 0
    (home.memory / "scopes" / "WORK.md").write_text("- Deploys on Tuesdays\n")
    assert unread_scope_files(home.memory) == [("WORK.md", "work.md")]
    out = cli(home, "doctor", "--repair", "--yes")
    assert "scopes/work.md exists already; move the facts of WORK.md into it by hand" in out.stdout
    assert (home.memory / "scopes" / "WORK.md").read_text() == "- Deploys on Tuesdays\n"  # nothing lost
    assert "Deploys" not in cli(home, "memory", "show", "--scope", "work").stdout


def test_scope_file_name() -> None:
    assert scope_file_name("Work.md") == "work.md"
    assert scope_file_name("work.txt") == "work.md"
    assert scope_file_name("Ünïcode Stuff.MD") == "unicode-stuff.md"
    assert scope_file_name("家族.md") is None and scope_file_name("Global.md") is None
    assert scope_file_name("x" * 40 + ".md") == "x" * 32 + ".md"
