"""The memory command-line contract, run through the CLI's own entry point against real data homes
(in this process, tests/support.cli_here; the local-time test runs its commands in a fresh interpreter).

consolidate [--session KEY] [--all]; memory show [REV] [--at DATETIME]; memory log
[--limit N] [--json]; memory diff [REV_A [REV_B]] [--json] [--raw]; memory dropped
[--json]; memory restore-fact REV FACT; memory rollback REV; memory redo CONSOLIDATION
[--model MODEL]; memory why FACT; history search QUERY [--json]. REV is a sha or unique
prefix, HEAD~N, or a consolidation id.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base.clock import FakeClock, seeded_ids
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.memory.service import MemoryService

from tests.fixtures.llm_server import Response, ScriptedLLMServer, error, reply, tool_call
from tests.support import cli_here, run_cli

MEM0 = ("# Memory\n\n## Identity\n- User's name is Ada\n- User lives in London\n\n"
        "## Preferences\n- User likes green tea\n")
REV_KEYS = {"kind", "rev", "time", "reason", "model", "added", "removed", "changed", "flagged",
            "consolidation", "event_seq"}


@dataclass
class Seeded:
    home: Home
    shas: list[str]  # oldest first
    c1: str  # consolidation ids
    c2: str
    memories: list[str]


# the receipt the scripted model sends for each fact it adds (issue 27): message #1 says it
QUOTES = {"User lives in Lyon": "moved to Lyon", "User now lives in Lyon": "moved to Lyon",
          "User has a cat called Tom": "I adopted a cat called Tom", "User has a cat named Tom": "a cat called Tom",
          "User's sister is Anna": "My sister Anna", "User likes chess": "I like chess",
          "User likes bridge": "I like bridge"}


def save_memory(update: str, entry: str, removed: list[dict[str, str]] | None = None) -> Response:
    receipts = [{"fact": f, "messages": [1], "quote": q} for f, q in QUOTES.items() if f"- {f}\n" in update]
    return tool_call("save_memory", {"history_entry": entry, "memory_update": update, "removed_facts": removed or [],
                                     "receipts": receipts})


def config(server: ScriptedLLMServer) -> Config:
    return Config(model="openai/test-model", api_base=server.base_url, llm_retries=0, llm_timeout=10.0,
                  memory_window=1000, idle_consolidate_minutes=0)


def seed(root: Path, server: ScriptedLLMServer) -> Seeded:
    """Four revisions an hour apart from 2025-06-02 09:00 UTC (in the past, so what the
    commands do later sorts after them): a user edit, a consolidation
    that moves the user to Lyon (listing London as removed), an agent `remember`, and a
    consolidation that silently drops the tea (which the guard keeps)."""
    home = Home.resolve(root)
    clock = FakeClock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC))
    app = App.open(home, config=config(server), clock=clock, ids=seeded_ids(clock, 7), start_services=False)
    try:
        svc: MemoryService = app.memory
        cons = app.consolidation
        svc.write(MEM0, reason="user-edit", source="user")
        clock.advance(3600)
        app.store.append_many([
            (Message(role="user", content="I adopted a cat called Tom and moved to Lyon"), "quick", None),
            (Message(role="assistant", content="Congratulations on Tom!"), "quick", None),
        ])
        m1 = MEM0.replace("- User lives in London\n", "- User lives in Lyon\n") + "- User has a cat called Tom\n"
        server.script(save_memory(m1, "[2025-06-02 10:00] The user adopted Tom the cat and moved to Lyon.",
                                  [{"fact": "User lives in London", "reason": "moved to Lyon"}]))
        c1 = app.run(cons.consolidate("quick", trigger="manual")).consolidation
        clock.advance(3600)
        svc.remember("User plays the cello", "Hobbies", model="openai/test-model", source_seq=None)
        clock.advance(3600)
        app.store.append_many([
            (Message(role="user", content="My sister Anna visits next week"), "quick", None),
            (Message(role="assistant", content="Have fun with Anna."), "quick", None),
        ])
        m3 = app.store.state.memory.replace("- User likes green tea\n", "") + "- User's sister is Anna\n"
        server.script(save_memory(m3, "[2025-06-02 12:00] Anna, the user's sister, visits next week."))
        c2 = app.run(cons.consolidate("quick", trigger="manual")).consolidation
        shas = [r.rev for r in reversed(svc.revisions())]
        memories = [svc.show(s) for s in shas]
    finally:
        app.close()
    return Seeded(home, shas, c1, c2, memories)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    with ScriptedLLMServer() as server:
        yield seed(tmp_path_factory.mktemp("cli") / "home", server)


def clone(seeded: Seeded, root: Path) -> Seeded:
    """A private copy of the seeded home at ``root``, for commands that change it."""
    shutil.copytree(seeded.home.root, root)
    return Seeded(Home.resolve(root), seeded.shas, seeded.c1, seeded.c2, seeded.memories)


@pytest.fixture
def copy(seeded: Seeded, tmp_path: Path) -> Seeded:
    """A private copy of the seeded home, for commands that change it."""
    return clone(seeded, tmp_path / "home")


def cli(home: Home, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return cli_here(home.root, *args, TZ="UTC", **env)


def ok(home: Home, *args: str, **env: str) -> str:
    out = cli(home, *args, **env)
    assert out.returncode == 0, (args, out.stderr)
    return out.stdout


def fails(home: Home, *args: str, needle: str) -> None:
    out = cli(home, *args)
    assert out.returncode != 0, (args, out.stdout)
    assert out.stderr.startswith("memtray: error: "), out.stderr
    assert needle in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def git(home: Home, *args: str) -> str:
    return subprocess.run(["git", "-C", str(home.memory), *args], capture_output=True, text=True,
                          check=True).stdout


def llm_env(server: ScriptedLLMServer) -> dict[str, str]:
    return {"MEMTRAY_MODEL": "openai/test-model", "MEMTRAY_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}


# --- memory show -------------------------------------------------------------------------------------


def test_show_accepts_every_kind_of_rev(seeded: Seeded) -> None:
    h, shas, mems = seeded.home, seeded.shas, seeded.memories
    assert ok(h, "memory", "show") == mems[3]
    assert ok(h, "memory", "show", "HEAD") == mems[3]
    assert ok(h, "memory", "show", "HEAD~3") == mems[0] == MEM0
    assert ok(h, "memory", "show", shas[1]) == mems[1]
    assert ok(h, "memory", "show", shas[1][:7]) == mems[1]
    assert ok(h, "memory", "show", shas[1][:7].upper()) == mems[1]
    assert ok(h, "memory", "show", seeded.c1) == mems[1]
    assert ok(h, "memory", "show", f"{seeded.c2}~2") == mems[1]
    assert ok(h, "memory", "show", "--history").startswith("[2025-06-02 10:00] The user adopted Tom")


def test_show_at_a_date(seeded: Seeded) -> None:
    h, mems = seeded.home, seeded.memories
    assert ok(h, "memory", "show", "--at", "2025-06-02T09:30:00Z") == mems[0]
    assert ok(h, "memory", "show", "--at", "2025-06-02T10:00") == mems[1]  # naive: local time (TZ=UTC)
    assert ok(h, "memory", "show", "--at", "2025-06-02 11:59") == mems[2]
    assert ok(h, "memory", "show", "--at", "2025-06-02T13:00+01:00") == mems[3]
    assert ok(h, "memory", "show", "--at", "2027-01-01") == mems[3]
    fails(h, "memory", "show", "--at", "2025-06-02T08:00Z", needle="no revision yet")
    fails(h, "memory", "show", "--at", "yesterday-ish", needle="cannot read the date")


def test_show_at_without_offset_is_local_time(seeded: Seeded) -> None:
    h, mems = seeded.home, seeded.memories
    berlin = {"TZ": "Europe/Berlin"}  # UTC+2 in June
    for when in ("2025-06-02T11:30", "2025-06-02 11:30"):
        out = run_cli(h.root, "memory", "show", "--at", when, **berlin)
        assert out.returncode == 0 and out.stdout == mems[0], when  # 09:30 UTC
    out = run_cli(h.root, "memory", "show", "--at", "2025-06-02T10:30Z", **berlin)
    assert out.stdout == mems[1]


@pytest.mark.parametrize(
    ("rev", "needle"),
    [("nosuchrev", "unknown revision"), ("HEAD~9", "fewer than"), ("0000000", "unknown revision"),
     ("01ZZZZZZZZZZZZZZZZZZZZZZZZ", "unknown revision")],
)
def test_show_bad_revs(seeded: Seeded, rev: str, needle: str) -> None:
    fails(seeded.home, "memory", "show", rev, needle=needle)


def test_empty_memory_says_so(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "empty")
    assert ok(home, "memory", "log") == "memory has no revisions yet\n"
    assert json.loads(ok(home, "memory", "log", "--json")) == []
    fails(home, "memory", "show", needle="no revisions yet")
    assert json.loads(ok(home, "memory", "dropped", "--json")) == []


# --- memory log ---------------------------------------------------------------------------------------


def test_log_text_json_and_limit(seeded: Seeded) -> None:
    h, shas = seeded.home, seeded.shas
    rows = json.loads(ok(h, "memory", "log", "--json"))
    assert [r["rev"] for r in rows] == shas[::-1]
    assert all(set(r) == REV_KEYS and r["kind"] == "revision" for r in rows)
    assert [r["reason"] for r in rows] == ["consolidation", "agent", "consolidation", "user-edit"]
    assert [r["consolidation"] for r in rows] == [seeded.c2, None, seeded.c1, None]
    assert [r["time"] for r in rows] == ["2025-06-02T12:00:00Z", "2025-06-02T11:00:00Z",
                                         "2025-06-02T10:00:00Z", "2025-06-02T09:00:00Z"]
    # London -> Lyon was listed as removed: a removal and an addition, not a rewording
    assert (rows[2]["added"], rows[2]["removed"], rows[2]["changed"]) == (2, 1, 0)
    assert rows[1]["model"] == "openai/test-model" and rows[3]["model"] == "-"
    assert [r["rev"] for r in json.loads(ok(h, "memory", "log", "--json", "--limit", "2"))] == shas[:1:-1]
    text = ok(h, "memory", "log").splitlines()
    assert len(text) == 4 and text[0].startswith(shas[3][:8]) and "consolidation" in text[0]
    assert f"[{seeded.c1[:10]}]" in text[2] and "+2 −1 ~0" in text[2]
    assert len(ok(h, "memory", "log", "--limit", "1").splitlines()) == 1


# --- memory diff --------------------------------------------------------------------------------------


def test_diff_default_pairs_and_json(seeded: Seeded) -> None:
    h = seeded.home
    (line,) = ok(h, "memory", "diff").splitlines()
    assert re.fullmatch(r"\+ F\d+ \[Hobbies\] User's sister is Anna", line), line  # named by its id
    d = json.loads(ok(h, "memory", "diff", "HEAD~3", "HEAD~2", "--json"))
    assert set(d) == {"added", "dropped", "changed", "unchanged"}
    # by fact id: the consolidation removed London (with a reason) and added Lyon; two facts
    # that differ in a place are never paired as a rewording
    assert [f["text"] for f in d["added"]] == ["User lives in Lyon", "User has a cat called Tom"]
    assert [f["text"] for f in d["dropped"]] == ["User lives in London"]
    assert d["changed"] == [] and d["unchanged"] == 2
    assert all(set(f) == {"id", "section", "text"} for f in d["added"])
    assert d["dropped"][0]["id"] not in {f["id"] for f in d["added"]}
    # one rev: from there to HEAD
    d2 = json.loads(ok(h, "memory", "diff", seeded.c1, "--json"))
    assert sorted(f["text"] for f in d2["added"]) == ["User plays the cello", "User's sister is Anna"]
    assert ok(h, "memory", "diff", "HEAD", "HEAD") == "no fact changes\n"


def test_diff_raw(seeded: Seeded) -> None:
    raw = ok(seeded.home, "memory", "diff", "HEAD~3", "HEAD~2", "--raw")
    assert raw.startswith(f"--- a/MEMORY.md ({seeded.shas[0][:8]})\n+++ b/MEMORY.md ({seeded.shas[1][:8]})\n")
    assert "\n-- User lives in London\n" in raw and "\n+- User lives in Lyon\n" in raw


# --- memory dropped / why / history search ------------------------------------------------------------


def test_dropped_lists_every_removal_with_its_reason(seeded: Seeded) -> None:
    rows = json.loads(ok(seeded.home, "memory", "dropped", "--json"))
    assert [(r["text"], r["reason"], r["by"], r["present_now"], r["rev"]) for r in rows] == [
        ("User lives in London", "moved to Lyon", "consolidation", False, seeded.shas[1])]
    assert set(rows[0]) == {"id", "text", "section", "rev", "event_seq", "time", "reason", "by", "present_now"}
    text = ok(seeded.home, "memory", "dropped")
    assert "User lives in London" in text and "removed by a consolidation: moved to Lyon; still gone" in text
    # the silently dropped tea was put back, so it was never removed
    assert "User likes green tea" in seeded.memories[3]


def test_why_names_the_revision_and_the_messages(seeded: Seeded) -> None:
    info = json.loads(ok(seeded.home, "memory", "why", "cat", "called", "Tom", "--json"))
    assert info["fact"]["text"] == "User has a cat called Tom"
    assert info["revision"]["rev"] == seeded.shas[1] and info["consolidation"] == seeded.c1
    assert any("adopted a cat called Tom" in m["content"] for m in info["messages"])
    text = ok(seeded.home, "memory", "why", "cello")
    assert "User plays the cello" in text and seeded.shas[2][:8] in text and "agent" in text
    fails(seeded.home, "memory", "why", "quantum", "physics", needle="no fact in current memory")


def test_history_search_finds_consolidated_diary(seeded: Seeded) -> None:
    hits = json.loads(ok(seeded.home, "history", "search", "Anna", "--json"))
    kinds = {h["kind"] for h in hits}
    assert "history" in kinds and "message" in kinds
    diary = next(h for h in hits if h["kind"] == "history")
    assert "Anna" in diary["snippet"]


# --- restore-fact / rollback ---------------------------------------------------------------------------


def test_restore_fact_from_the_revision_that_dropped_it(copy: Seeded) -> None:
    h = copy.home
    out = ok(h, "memory", "restore-fact", copy.c1, "User", "lives", "in", "London")
    assert out.startswith("restored as revision ")
    assert "- User lives in London\n" in (h.memory / "MEMORY.md").read_text()
    assert "- User lives in London\n" in git(h, "show", "HEAD:MEMORY.md")
    assert "Reason: restore" in git(h, "log", "-1", "--format=%B")
    # the commit names the fact and where it came from
    subject = git(h, "log", "-1", "--format=%s").strip()
    assert subject.startswith('restore "User lives in London" from '), subject
    rows = json.loads(ok(h, "memory", "dropped", "--json"))
    assert rows[0]["present_now"] is True
    fails(h, "memory", "restore-fact", "HEAD~4", "User lives in London", needle="already in memory")
    fails(h, "memory", "restore-fact", "HEAD", "User owns a submarine", needle="no fact matching")


def test_restore_fact_by_sha_prefix(copy: Seeded) -> None:
    ok(copy.home, "memory", "restore-fact", copy.shas[0][:8], "User lives in London")
    assert "- User lives in London\n" in git(copy.home, "show", "HEAD:MEMORY.md")


def test_rollback_is_a_new_revision(copy: Seeded) -> None:
    h = copy.home
    before = git(h, "rev-list", "main").split()
    out = ok(h, "memory", "rollback", "HEAD~3")
    assert out.startswith("memory rolled back to HEAD~3; new revision ")
    assert (h.memory / "MEMORY.md").read_text() == MEM0 == git(h, "show", "HEAD:MEMORY.md")
    after = git(h, "rev-list", "main").split()
    assert after[1:] == before  # history is never rewritten
    assert "Reason: rollback" in git(h, "log", "-1", "--format=%B")
    target = git(h, "rev-list", "-1", before[3]).strip()  # HEAD~3 of before the rollback
    assert git(h, "log", "-1", "--format=%s").startswith(f"rollback to {target[:8]}: ")
    assert f"Rolled-Back-To: {target}" in git(h, "log", "-1", "--format=%B")
    ok(h, "memory", "rollback", copy.c2)
    assert git(h, "show", "HEAD:MEMORY.md") == copy.memories[3]
    fails(h, "memory", "rollback", "nosuchrev", needle="unknown revision")
    # what the rollback removed reads as such, not "reason: rollback (rollback)"
    text = ok(h, "memory", "dropped")
    assert "removed by a rollback; " in text and "(rollback)" not in text


# --- commands that call the model -----------------------------------------------------------------------


def test_redo_with_another_model(copy: Seeded, llm_server: ScriptedLLMServer) -> None:
    h = copy.home
    fails(h, "memory", "redo", "nosuch", needle="unknown consolidation")
    ok(h, "memory", "rollback", "HEAD~3")

    def respond(req: dict[str, Any]) -> Response:
        assert "User lives in London" in req["messages"][-1]["content"]  # the memory before c1
        return save_memory(MEM0.replace("User lives in London", "User now lives in Lyon") + "- User has a cat named Tom\n",
                           "[2025-06-02 10:00] Redone.", [{"fact": "User lives in London", "reason": "moved"}])

    llm_server.responder = respond
    out = ok(h, "memory", "redo", copy.c1, "--model", "openai/other-model", **llm_env(llm_server))
    assert out.startswith("redo ") and "new revision" in out
    assert llm_server.chat_requests[-1]["model"] == "other-model"
    body = git(h, "log", "-1", "--format=%B")
    assert "Reason: redo" in body and "Model: openai/other-model" in body
    assert "Consolidation: " in body and copy.c1 not in body  # a new consolidation id
    shown = git(h, "show", "HEAD:MEMORY.md")
    assert shown == (h.memory / "MEMORY.md").read_text()
    assert "- User now lives in Lyon\n" in shown and "- User has a cat named Tom\n" in shown
    assert "User lives in London" not in shown
    log = json.loads(ok(h, "memory", "log", "--json"))
    assert [r["reason"] for r in log[:2]] == ["redo", "rollback"]
    assert log[0]["model"] == "openai/other-model" and log[0]["consolidation"] not in (None, copy.c1)


def test_a_refused_or_failed_redo_is_shown_never_left_silently(copy: Seeded, llm_server: ScriptedLLMServer) -> None:
    h = copy.home
    head = git(h, "rev-parse", "HEAD").strip()
    # refused: the reply would erase every fact (the guard refuses it)
    llm_server.responder = lambda req: save_memory("", "[2025-06-02 10:00] Nothing left.")
    out = cli(h, "memory", "redo", copy.c1, **llm_env(llm_server))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"memtray: error: redo of consolidation {copy.c1[:10]} failed: ")
    assert "would erase every fact" in out.stderr and "Memory is unchanged" in out.stderr
    assert "it will be retried" not in out.stderr  # a redo is never retried behind the user's back
    top = ok(h, "memory", "log").splitlines()[0]
    assert top.startswith("FAILED ") and f"redo of {copy.c1[:10]}" in top and "(memory unchanged)" in top
    # failed: no tool call; --json says so
    llm_server.responder = lambda req: reply("I would rather not.")
    out = cli(h, "memory", "redo", copy.c1, "--json", **llm_env(llm_server))
    assert out.returncode == 1, out.stderr
    res = json.loads(out.stdout)
    assert res["status"] == "failed" and res["redo_of"] == copy.c1 and res["revision"] is None
    assert "without calling save_memory" in res["reason"]
    rows = json.loads(ok(h, "memory", "log", "--json"))
    assert [r["kind"] for r in rows[:2]] == ["failed", "failed"]
    assert rows[0]["redo_of"] == copy.c1 and rows[0]["consolidation"] == res["consolidation"]
    assert "without calling save_memory" in rows[0]["reason"] and "erase every fact" in rows[1]["reason"]
    assert git(h, "rev-parse", "HEAD").strip() == head  # memory unchanged
    # and a redo that works says so in --json too
    llm_server.responder = lambda req: save_memory(copy.memories[2], "[2025-06-02 10:00] Redone.")
    res = json.loads(ok(h, "memory", "redo", copy.c1, "--json", **llm_env(llm_server)))
    assert res["status"] == "completed" and res["redo_of"] == copy.c1 and res["revision"]["reason"] == "redo"


def test_consolidate_session_and_all(copy: Seeded, llm_server: ScriptedLLMServer) -> None:
    h = copy.home
    app = App.open(h, config=config(llm_server), start_services=False)
    try:
        for session, text in (("a", "I like chess"), ("b", "I like go"), ("c", "I like bridge")):
            app.store.append_many([
                (Message(role="user", content=text), session, None),
                (Message(role="assistant", content="Nice"), session, None),
            ])
        current = app.store.state.memory
    finally:
        app.close()
    assert ok(h, "consolidate", "--session", "nobody") == "nobody: nothing to consolidate\n"

    def respond(req: dict[str, Any]) -> Response:
        prompt = req["messages"][-1]["content"]
        if "I like go" in prompt:
            return error(500)
        game = next(g for g in ("chess", "bridge") if f"I like {g}" in prompt)
        return save_memory(current + f"- User likes {game}\n", f"[2025-06-02 13:00] Talked about {game}.")

    llm_server.responder = respond
    out = ok(h, "consolidate", "--session", "a", **llm_env(llm_server))
    assert out.startswith("a: consolidation ") and "1 added, 0 removed, 0 changed, 0 kept, 0 flagged" in out
    res = cli(h, "consolidate", "--all", **llm_env(llm_server))
    assert res.returncode == 1
    lines = dict(line.split(": ", 1) for line in res.stdout.splitlines() if not line.startswith("  "))
    assert lines["a"] == "nothing to consolidate"
    assert lines["b"].startswith("FAILED: consolidation failed:") and "provider failed (500)" in lines["b"]
    assert lines["c"].startswith("consolidation ") and "(messages 0..1)" in lines["c"]
    assert lines["quick"] == "nothing to consolidate"
    memory = git(h, "show", "HEAD:MEMORY.md")
    assert "- User likes bridge\n" in memory and "- User likes go\n" not in memory
    rows = json.loads(ok(h, "memory", "log", "--json"))
    assert [(r["kind"], r.get("session")) for r in rows[:3]] == [
        ("revision", None), ("failed", "b"), ("revision", None)]
    assert rows[0]["reason"] == rows[2]["reason"] == "consolidation"
