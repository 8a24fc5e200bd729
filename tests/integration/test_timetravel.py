"""`memtray prompt at`: every past request rebuilt exactly, checked against its recorded hash."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
from memtray.core.agent.loop import request_hash
from memtray.core.agent.timetravel import NotATurn, find_turn, reconstruct
from memtray.core.app import App
from memtray.core.audit.retention import synthetic_corpus
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.llm.client import DeltaCallback, LLMClient, LLMResult, Request

from tests.fixtures.corpus_model import RememberingModel
from tests.fixtures.llm_server import ScriptedLLMServer
from tests.support import cli_here


def _turns(app: App, session: str, texts: list[str]) -> None:
    for text in texts:
        app.run(app.agent.turn(session, text, stream=False))


def _settle(app: App) -> None:
    """Wait for the background consolidations the turns started."""
    cons = app.consolidation

    async def wait() -> None:
        await asyncio.sleep(0.01)
        for _ in range(1500):
            if not cons.in_flight:
                return
            await asyncio.sleep(0.02)

    app.run(wait())


def test_every_turn_is_rebuilt_exactly_across_consolidations_rollbacks_and_new(
    home: Home, llm_server: ScriptedLLMServer
) -> None:
    llm_server.responder = RememberingModel()
    cfg = Config(model="openai/test-model", api_base=llm_server.base_url, llm_retries=0, memory_window=6)
    user = [m["content"] for m in synthetic_corpus().messages if m["role"] == "user"]
    app = App.open(home, config=cfg)
    try:
        _turns(app, "cli", user[0:4])  # background consolidations start (window 6)
        (home.root / "AGENTS.md").write_text("Answer in one sentence.\n")
        _turns(app, "cli", [user[4], "Please remember that I water the plants on Sundays."])
        _turns(app, "quick", user[5:7])
        _settle(app)
        app.memory.rollback("HEAD~1")
        _turns(app, "cli", user[7:10])
        _settle(app)
        app.run(app.consolidation.archive("cli"))  # /new
        app.agent.new_session("cli")
        app.reconfigure(replace(cfg, model="openai/other-model"))
        (home.root / "skills").mkdir()
        (home.root / "skills" / "plants.md").write_text("# Plants\nWater them on Sundays.\n")
        _turns(app, "cli", user[10:13])
        _turns(app, "quick", user[13:14])
        _settle(app)
        records = list(app.store.log.records())
    finally:
        app.close()
    types = [r.type for r in records]
    assert types.count("consolidation.completed") >= 3 and "memory.rolled_back" in types
    assert "session.reset" in types and types.count("context.changed") == 3  # start, AGENTS.md, model + skill
    turns = [r for r in records if r.type == "message" and r.data.get("request_hash")]
    assert len(turns) == 16  # 15 answers + 1 tool round
    rebuilt = reconstruct(records)
    assert sorted(rebuilt) == [r.seq for r in turns]
    bad = {seq: r.notes for seq, r in rebuilt.items() if not r.match}
    assert not bad, bad
    # what the provider really received, request by request (litellm rewrites tool-call
    # messages on the wire, so requests that carry a tool round are left out here)
    sent = {request_hash(("openai/" + q["model"]), q["messages"], q.get("tools"))
            for q in llm_server.requests if not any(t["function"]["name"] == "save_memory" for t in q.get("tools") or [])}
    plain = {r.rebuilt_hash for r in rebuilt.values() if not any(m["role"] == "tool" for m in r.messages)}
    assert len(plain) >= 10 and plain <= sent
    # a memory revision is in the prompt of a later turn, and the rollback took it out again
    systems = [rebuilt[r.seq].messages[0]["content"] for r in turns]
    assert any("water the plants on Sundays" in s for s in systems)
    assert "Answer in one sentence." in systems[-1] and "**Plants**" in systems[-1]
    assert rebuilt[turns[-1].seq].model == "openai/other-model"

    # the CLI: exact match by seq and by time, clear errors otherwise
    seq = turns[6].seq
    out = cli_here(home.root, "prompt", "at", str(seq), "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["match"] and got["seq"] == seq and got["messages"] == rebuilt[seq].messages
    out = cli_here(home.root, "prompt", "at", str(seq))
    assert out.returncode == 0 and "exact: the rebuilt request hashes to the recorded one" in out.stdout
    assert "── system" in out.stdout and "[Runtime context:" in out.stdout
    last_quick = [r for r in turns if r.session == "quick"][-1]
    out = cli_here(home.root, "prompt", "at", last_quick.ts, "--session", "quick", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["seq"] == last_quick.seq
    user_seq = next(r.seq for r in records if r.type == "message" and r.data.get("role") == "user")
    out = cli_here(home.root, "prompt", "at", str(user_seq))
    assert out.returncode == 1
    assert f"event {user_seq} is a user message, not an assistant turn; the assistant turn after it is" in out.stderr
    cons_seq = types.index("consolidation.started") + 1
    out = cli_here(home.root, "prompt", "at", str(cons_seq))
    assert out.returncode == 1 and "is a consolidation.started event, not an assistant turn" in out.stderr
    out = cli_here(home.root, "prompt", "at", "99999")
    assert out.returncode == 1 and "there is no event 99999" in out.stderr
    out = cli_here(home.root, "prompt", "at", "2001-01-01T00:00Z")
    assert out.returncode == 1 and "no assistant turn at or before" in out.stderr


class _MemoryChangesMidRequest(LLMClient):
    """A model call during which memory changes (as when a background consolidation finishes)."""

    app: App | None = None

    async def complete(self, req: Request, on_delta: DeltaCallback | None = None) -> LLMResult:
        if self.app is not None:
            mem = self.app.memory
            mem.write(self.app.store.state.memory + "- Changed while the model answered\n", reason="user-edit",
                      source="user")
        return LLMResult("ok", model="m")


def test_memory_written_while_the_model_answers_is_not_in_the_rebuilt_prompt(home: Home) -> None:
    cfg = Config(model="openai/m", memory_window=1000)
    llm = _MemoryChangesMidRequest(cfg)
    app = App.open(home, config=cfg, llm=llm)
    try:
        llm.app = app
        app.run(app.agent.turn("cli", "hello", stream=False))
        app.run(app.agent.turn("cli", "and now?", stream=False))
        records = list(app.store.log.records())
    finally:
        app.close()
    turn, later = [r for r in records if r.type == "message" and r.data.get("role") == "assistant"]
    written = next(r for r in records if r.type == "memory.written")
    assert turn.data["basis_seq"] < written.seq < turn.seq
    rebuilt = reconstruct(records)
    assert rebuilt[turn.seq].match and all("Changed while" not in str(m["content"]) for m in rebuilt[turn.seq].messages)
    # layout 3: the change is told in a note before the next user message, and the snapshot in the
    # system prompt stays, so the second request repeats the first one whole
    second = rebuilt[later.seq]
    assert second.match and "Changed while" not in second.messages[0]["content"]
    note = second.messages[-1]["content"]
    assert note.startswith("[Memory changed") and "> + [" in note and "Changed while the model answered" in note
    first = json.dumps(rebuilt[turn.seq].messages[:-1])[:-1]
    assert json.dumps(second.messages).startswith(first)
    # the note is rebuilt from the log: without the revision it tells of, the request differs
    # (and a change made while the model answers is, in layout 3, never in the request it answers)
    without = [r for r in records if r.seq != written.seq]
    assert not reconstruct(without)[later.seq].match


def test_a_secret_in_a_bootstrap_file_is_redacted_and_said_so(home: Home, llm_server: ScriptedLLMServer) -> None:
    key = "sk-proj-" + "Z9y8X7w6V5u4T3s2R1q0" * 2
    home.create()
    (home.root / "USER.md").write_text(f"My OpenAI key is {key}\n")
    app = App.open(home, config=Config(model="openai/test-model", api_base=llm_server.base_url, llm_retries=0))
    try:
        app.run(app.agent.turn("cli", "hi", stream=False))
        records = list(app.store.log.records())
    finally:
        app.close()
    raw = b"".join(p.read_bytes() for p in home.events.glob("*.jsonl"))
    assert key.encode() not in raw
    turn = next(r for r in records if r.type == "message" and r.data.get("request_hash"))
    rebuilt = reconstruct(records)[turn.seq]
    assert not rebuilt.match and any("redacted" in n for n in rebuilt.notes)


def test_find_turn_errors() -> None:
    from memtray.core.log.events import Record

    recs = [
        Record(1, "a", "2026-01-01T00:00:00.000Z", "message", 1, "cli", {"role": "user", "content": "x"}),
        Record(2, "b", "2026-01-01T00:00:01.000Z", "message", 1, "cli",
               {"role": "assistant", "content": "part", "stop": "cancelled"}),
        Record(3, "c", "2026-01-01T00:00:02.000Z", "message", 1, "cli",
               {"role": "assistant", "content": "y", "request_hash": "h"}),
    ]
    assert find_turn(recs, seq=3) == 3
    with pytest.raises(NotATurn, match="ended early"):
        find_turn(recs, seq=2)
    with pytest.raises(NotATurn, match="belongs to session 'cli', not 'quick'"):
        find_turn(recs, seq=3, session="quick")
    assert reconstruct(recs)[3].notes[0].startswith("the turn predates basis recording")
