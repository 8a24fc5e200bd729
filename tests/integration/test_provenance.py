"""Provenance coverage: every current fact traces to its events; `memory why` covers them all."""

from __future__ import annotations

import json
from dataclasses import replace

from memtray.core.app import App
from memtray.core.audit import adopt, rebuild
from memtray.core.audit.retention import synthetic_corpus
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.eventlog import EventLog
from memtray.core.memory.provenance import check_provenance, trace

from tests.fixtures.corpus_model import RememberingModel
from tests.fixtures.llm_server import ScriptedLLMServer
from tests.support import cli_here


def _build_history(app: App) -> None:
    """Every kind of memory change: consolidations, remember, hand edit, restore, rollback,
    review, a rewording, and adopting a rebuild."""
    user = [m["content"] for m in synthetic_corpus().messages if m["role"] == "user"]
    cons = app.consolidation
    mem = app.memory

    def talk(texts: list[str], session: str = "cli") -> None:
        for t in texts:
            app.run(app.agent.turn(session, t, stream=False))

    talk(user[0:6])
    app.run(cons.consolidate("cli", trigger="manual"))
    talk(["Please remember that I keep bees on the balcony."])
    (app.home.memory / "MEMORY.md").write_text(app.store.state.memory + "\n## Hand\n\n- Reads maps upside down\n")
    assert mem.check_worktree()
    talk(user[6:22])
    app.run(cons.consolidate("cli", trigger="manual"))  # Paris -> Lyon, with a reason
    paris_rev = mem.resolve("HEAD~1")
    mem.restore_fact(paris_rev, "Lives in Paris")
    reworded = app.store.state.memory.replace("- Drinks coffee black, no sugar", "- Drinks black coffee without sugar")
    mem.write(reworded, reason="user-edit", source="user")
    mem.rollback("HEAD~1")  # undoes the rewording
    app.reconfigure(replace(app.config, model="openai/forgetful", drop_policy="review"))
    talk(user[22:25], "quick")
    app.run(cons.consolidate("quick", trigger="manual"))
    talk(user[25:28], "quick")
    app.run(cons.consolidate("quick", trigger="manual"))
    # two facts the forgetful model dropped silently (what the user said and it kept nowhere is
    # listed too, as not remembered: left pending here)
    first, second = [i for i in mem.pending_review() if i["kind"] == "silent-drop"]
    mem.restore_review(first["id"])
    mem.accept_review(second["id"])  # stays dropped on main; the rebuild below still has it
    app.run(rebuild.run(app, model="openai/careful", name="again"))
    adopt.adopt(app, "again")
    app.reconfigure(replace(app.config, model="openai/careful", drop_policy="keep"))
    talk(user[28:34])
    app.run(cons.consolidate("cli", trigger="manual"))


def test_every_current_fact_has_provenance_and_why_covers_all(home: Home, llm_server: ScriptedLLMServer) -> None:
    llm_server.responder = RememberingModel()
    app = App.open(home, config=Config(model="openai/careful", api_base=llm_server.base_url, llm_retries=0,
                                       memory_window=1000))
    try:
        _build_history(app)
        reasons = [r.data["reason"] for r in app.store.log.records() if r.type == "memory.written"]
        for kind in ("consolidation", "agent", "user-edit", "restore", "rollback", "review", "adopt"):
            assert kind in reasons, (kind, reasons)
        facts = app.memory.ledger().facts  # with their ids
        assert len(facts) >= 20
        memory, origins = trace(app.store.log.records())
        assert memory == app.store.state.memory
        assert set(origins) == {f.id for f in facts}
        assert [o for o in origins.values() if not o.ok] == []
        by_kind = {o.reason for o in origins.values()}
        assert {"consolidation", "agent", "user-edit"} <= by_kind
        assert origins[next(f.id for f in facts if "bees" in f.text)].message_seqs
        adopt = next(r for r in app.store.log.records() if r.type == "memory.written" and r.data["reason"] == "adopt")
        (back,) = adopt.data["diff"]["added"]  # the fact main's review accepted as dropped; the rebuild kept it
        assert adopt.data["provenance"][back["id"]]["source_seqs"] and adopt.data["provenance"][back["id"]]["rebuild"]
        assert origins[back["id"]].via[-1] == adopt.seq and origins[back["id"]].reason == "consolidation"
        paris = origins[next(f.id for f in facts if f.text == "Lives in Paris")]
        assert paris.reason == "consolidation" and paris.via  # restored: its first origin, plus the restore
        # `memory why` for every fact: the messages it came from, or the user edit that wrote it
        mem = app.memory
        for f in facts:
            info = mem.why(f.text)
            assert info["fact"]["id"] == f.id, f.text
            assert info["messages"] or info["source"] == "user", (f.text, info)
        assert mem.why(back["text"])["messages"]  # adopted: the rebuild step's messages
    finally:
        app.close()
    out = cli_here(home.root, "memory", "why", "Is allergic to peanuts", "--json")
    assert out.returncode == 0, out.stderr
    why = json.loads(out.stdout)
    assert any("peanuts" in m["content"] for m in why["messages"])
    doctor = cli_here(home.root, "doctor")
    assert f"[ok  ] provenance: all {len(facts)} facts in MEMORY.md trace to the events they came from" in doctor.stdout


def test_doctor_reports_a_fact_without_provenance(home: Home) -> None:
    app = App.open(home, config=Config(model="openai/m"))
    try:
        mem = app.memory
        mem.write("## A\n\n- Written by hand\n", reason="user-edit", source="user")
        mem.write("## A\n\n- Written by hand\n- Came from nowhere\n", reason="agent", source="model", model="m")
    finally:
        app.close()
    findings = check_provenance(home)
    assert len(findings) == 1 and not findings[0].ok
    assert findings[0].title == "1 of 2 facts in MEMORY.md have no provenance"
    assert "Came from nowhere" in findings[0].detail and "without a source message" in findings[0].detail
    out = cli_here(home.root, "doctor")
    assert "[FAIL] 1 of 2 facts in MEMORY.md have no provenance" in out.stdout
    elog = EventLog.open(home.events, readonly=True)
    try:
        _mem, origins = trace(elog.records())
    finally:
        elog.close()
    assert sorted(o.ok for o in origins.values()) == [False, True]
