"""`memtray memory undo CONSOLIDATION|REV`: one consolidation's fact changes reverted by id, end to end.

Three consolidations through real litellm over HTTP: a good one, a bad one (rewords a
fact, removes one with a reason, adds one), and a later good one that changes other
facts (and rewords the fact the bad one added). Undoing the bad one, by its
consolidation id and by its revision, must revert exactly its changes as one new
revision, keep the later ones, say what it could not undo, and show in ``git show``.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.memory import factdiff

from tests.fixtures.llm_server import ScriptedLLMServer, tool_call
from tests.fixtures.receipting import receipted
from tests.support import cli_here


def save(memory: str | None = None, removed: list[dict[str, str]] | None = None,
         edits: list[dict[str, Any]] | None = None) -> Any:
    args: dict[str, Any] = {"history_entry": "[2026-12-01 09:00] Talked.", "removed_facts": removed or []}
    if edits is not None:
        args["edits"] = edits
    else:
        args["memory_update"] = memory
    return receipted(tool_call("save_memory", args))


def git(home: Home, *args: str) -> str:
    return subprocess.run(["git", "-C", str(home.memory), *args], capture_output=True, text=True,
                          check=True).stdout


def texts(memory: str) -> list[str]:
    return [f.text for f in factdiff.parse(memory)]


def test_undo_one_consolidation_after_later_ones(home: Home, llm_server: ScriptedLLMServer) -> None:
    cfg = Config(model="openai/test-model", api_base=llm_server.base_url, llm_retries=0, memory_window=2)
    app = App.open(home, config=cfg)
    try:
        def turn(user: str) -> str:
            app.store.append_many([(Message(role="user", content=user), "chat", None),
                                   (Message(role="assistant", content="Noted."), "chat", None)])
            return app.run(app.consolidation.consolidate("chat", archive_all=True, trigger="manual")).consolidation

        llm_server.script(save("## Me\n- Lives in Paris [#1]\n- Likes green tea [#1]\n- Has a cat named Pixel [#1]\n"))
        turn("I live in Paris, I like green tea and I have a cat named Pixel.")
        ids = app.memory.ledger().ids
        assert ids == ["F1", "F2", "F3"]
        # the bad one: rewords F1 wrongly, removes F2 with a reason, adds a fact
        llm_server.script(save("## About me\n- [F1] Home city: Paris\n- [F3] Has a cat named Pixel\n"
                               "- Owns a red kayak [#1]\n", removed=[{"fact": "F2", "reason": "said so"}]))
        bad = turn("I bought a red kayak.")
        assert texts(app.store.state.memory) == ["Home city: Paris", "Has a cat named Pixel",
                                                 "Owns a red kayak"]
        # a later one: adds a fact, rewords the cat, and rewords the kayak the bad one added
        llm_server.script(save(edits=[{"op": "add", "text": "Plays chess on Sundays", "sources": [1]},
                                      {"op": "update", "id": "F3", "text": "Cat: Pixel"},
                                      {"op": "update", "id": "F4", "text": "Owns a red sea kayak"}]))
        turn("I play chess on Sundays, and the kayak is a sea kayak.")
    finally:
        app.close()

    out = cli_here(home.root, "memory", "undo", bad, "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert {d["id"]: d["action"] for d in result["done"]} == {"F1": "reverted", "F2": "restored"}
    assert [(d["id"], d["why"]) for d in result["not_done"]] == [
        ("F4", "changed by a later revision; left in memory")]
    memory = (home.memory / "MEMORY.md").read_text()
    assert texts(memory) == ["Lives in Paris", "Cat: Pixel", "Owns a red sea kayak", "Plays chess on Sundays",
                             "Likes green tea"]
    assert git(home, "show", "HEAD:MEMORY.md") == memory
    body = git(home, "log", "-1", "--format=%B")
    assert "Reason: undo" in body
    shown = git(home, "show", "HEAD")
    assert "+- Lives in Paris" in shown and "-- Home city: Paris" in shown and "+- Likes green tea" in shown
    # ids survive the undo: the restored facts have their old ids
    app = App.open(home, config=cfg, start_services=False)
    try:
        assert [(f.id, f.text) for f in app.memory.ledger().facts] == [
            ("F1", "Lives in Paris"), ("F3", "Cat: Pixel"), ("F4", "Owns a red sea kayak"),
            ("F5", "Plays chess on Sundays"), ("F2", "Likes green tea")]
        rev = app.memory.revision(bad).rev
    finally:
        app.close()
    # a second undo of the same consolidation has nothing left to undo, and says why
    out = cli_here(home.root, "memory", "undo", rev[:10])
    assert out.returncode == 1
    assert "nothing to undo" in out.stderr and "F1" in out.stdout + out.stderr
    assert git(home, "show", "HEAD:MEMORY.md") == memory
    # undoing the undo (by revision) puts the bad consolidation's changes back
    undo_rev = git(home, "log", "-1", "--format=%H").strip()
    out = cli_here(home.root, "memory", "undo", undo_rev)
    assert out.returncode == 0, out.stderr
    assert texts((home.memory / "MEMORY.md").read_text())[:1] == ["Home city: Paris"]
    out = cli_here(home.root, "memory", "undo", "no-such-thing")
    assert out.returncode != 0 and "memtray: error:" in out.stderr and "Traceback" not in out.stderr
