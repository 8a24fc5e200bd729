"""Managing memory one fact at a time, from the command line as a user would: `memory facts`
lists the facts with their ids and who wrote them; `memory edit ID TEXT` and `memory forget
ID` each make one revision with its reason, by id only (never a fact with similar words)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.app import App
from memtray.core.mcp import writes

from tests.fixtures.llm_server import ScriptedLLMServer
from tests.integration.test_memory_cli import Seeded, clone, fails, git, ok, seed


@pytest.fixture(scope="module")
def seeded_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """The memory CLI tests' seeded home: a hand edit, two consolidations, a remember."""
    with ScriptedLLMServer() as server:
        yield seed(tmp_path_factory.mktemp("manage") / "home", server)


@pytest.fixture
def copy(seeded_home: Seeded, tmp_path: Path) -> Seeded:
    return clone(seeded_home, tmp_path / "home")

FACT_KEYS = {"id", "section", "text", "by", "reason", "client", "device", "device_name", "event_seq", "edited", "receipt"}


def _facts(home: object) -> dict[str, dict[str, object]]:
    rows = json.loads(ok(home, "memory", "facts", "--json"))  # type: ignore[arg-type]
    assert rows and all(set(r) == FACT_KEYS for r in rows)
    return {str(r["text"]): r for r in rows}


def test_facts_say_who_wrote_each_one(copy: Seeded) -> None:
    h = copy.home
    with App.open(h, start_services=False) as app:  # another assistant writes through MCP
        app.worker.call(lambda: writes.remember(app.memory, "User runs on Sundays", "Hobbies", "Claude Desktop"))
    facts = _facts(h)
    assert facts["User's name is Ada"]["by"] == "you"  # the first revision was a hand edit
    assert facts["User lives in Lyon"]["by"] == "a chat (consolidation)"
    assert facts["User plays the cello"]["by"] == "a chat"  # the assistant's remember in a chat
    assert facts["User runs on Sundays"]["by"] == "Claude Desktop (MCP)"
    assert facts["User runs on Sundays"]["client"] == "Claude Desktop"
    text = ok(h, "memory", "facts")
    fid = facts["User plays the cello"]["id"]
    assert f"{fid}" in text and "by Claude Desktop (MCP)" in text


def test_edit_rewords_one_fact_under_its_id_with_its_reason(copy: Seeded) -> None:
    h = copy.home
    before = _facts(h)
    fid = str(before["User lives in Lyon"]["id"])
    out = json.loads(ok(h, "memory", "edit", fid, "User", "lives", "in", "Paris", "--reason", "moved in May",
                        "--json"))
    assert set(out) == {"revision", "fact", "new", "reason"}
    assert out["fact"] == {"id": fid, "section": "Identity", "text": "User lives in Lyon"}
    assert out["new"] == {"id": fid, "section": "Identity", "text": "User lives in Paris"}
    assert out["reason"] == "moved in May"
    rev = out["revision"]
    assert (rev["reason"], rev["changed"], rev["added"], rev["removed"]) == ("user-edit", 1, 0, 0)
    after = _facts(h)
    assert after["User lives in Paris"]["id"] == fid and "User lives in Lyon" not in after
    assert after["User lives in Paris"]["edited"] is True
    assert len(after) == len(before)
    assert git(h, "log", "-1", "--format=%s").strip() == 'edit "User lives in Paris": +0 -0 ~1'
    assert "Reason: user-edit" in git(h, "log", "-1", "--format=%B")
    diff = json.loads(ok(h, "memory", "diff", "--json"))
    assert [(c["old"]["text"], c["new"]["text"]) for c in diff["changed"]] == [("User lives in Lyon", "User lives in Paris")]
    text = ok(h, "memory", "edit", fid, "User lives in Paris, near the Seine")
    assert text.startswith(f"edited {fid}: User lives in Paris → User lives in Paris, near the Seine (edited by the user)")


def test_forget_removes_one_fact_and_restore_brings_it_back(copy: Seeded) -> None:
    h = copy.home
    before = _facts(h)
    fid = str(before["User plays the cello"]["id"])
    out = json.loads(ok(h, "memory", "forget", fid, "--reason", "I stopped years ago", "--json"))
    assert out["fact"]["text"] == "User plays the cello" and out["new"] is None
    assert out["reason"] == "I stopped years ago"
    assert (out["revision"]["reason"], out["revision"]["removed"]) == ("user-edit", 1)
    assert "User plays the cello" not in _facts(h)
    assert "cello" not in ok(h, "memory", "show")
    assert git(h, "log", "-1", "--format=%s").strip() == 'forget "User plays the cello": +0 -1 ~0'
    dropped = [d for d in json.loads(ok(h, "memory", "dropped", "--json")) if d["id"] == fid]
    assert dropped[-1]["reason"] == "I stopped years ago" and dropped[-1]["by"] == "user-edit"
    ok(h, "memory", "restore-fact", fid)
    assert _facts(h)["User plays the cello"]["id"] == fid


def test_edit_and_forget_refuse_what_they_cannot_do_and_change_nothing(copy: Seeded) -> None:
    h = copy.home
    head = git(h, "rev-parse", "HEAD")
    fid = str(_facts(h)["User lives in Lyon"]["id"])
    fails(h, "memory", "forget", "F999", needle="no fact 'F999' in memory now")
    fails(h, "memory", "forget", "cello", needle="no fact 'cello'")  # words are not an id: no guessing
    fails(h, "memory", "edit", fid, "  ", needle="the new text is empty")
    fails(h, "memory", "edit", fid, "User lives in Lyon", needle="already says that")
    assert git(h, "rev-parse", "HEAD") == head
