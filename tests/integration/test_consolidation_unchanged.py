"""A consolidation with nothing to change in memory (real litellm against the scripted server):
save_memory with no edits and no memory_update is the memory as it is, the diary entry
written, a completed consolidation: never a failure, never a count toward stopping."""

from __future__ import annotations

import json
from typing import Any

import pytest
from memtray.core.base.clock import FakeClock
from memtray.core.base.home import Home

from tests.fixtures.llm_server import ScriptedLLMServer, tool_call
from tests.integration.test_consolidation import MEM0, add_messages, cons, events_of, mem, open_app
from tests.support import run_cli

ENTRY = "[2026-11-30 09:00] Small talk about the weather; nothing to remember."



@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


REPLIES: dict[str, dict[str, Any]] = {
    "removed_facts only": {"history_entry": ENTRY, "removed_facts": []},
    "empty edits": {"history_entry": ENTRY, "edits": [], "removed_facts": []},
    "entry alone": {"history_entry": ENTRY},
    "empty edits and an empty memory_update": {"history_entry": ENTRY, "edits": [], "memory_update": ""},
}


@pytest.mark.parametrize("case", sorted(REPLIES))
def test_a_reply_with_nothing_to_change_completes_and_writes_the_diary(
        home: Home, llm_server: ScriptedLLMServer, clock: FakeClock, case: str) -> None:
    a = open_app(home, llm_server, clock)
    try:
        mem(a).write(MEM0, reason="user-edit", source="user")
        add_messages(a, "quick", 4)
        llm_server.script(tool_call("save_memory", REPLIES[case]))
        out = a.run(cons(a).consolidate("quick", trigger="manual"))
        assert (out.added, out.removed, out.changed) == (0, 0, 0)
        assert a.store.state.memory == MEM0 and (home.memory / "MEMORY.md").read_text() == MEM0
        assert a.store.state.sessions["quick"].last_consolidated == 4
        assert events_of(a, "consolidation.failed") == []
        [done] = events_of(a, "consolidation.completed")
        assert a.store.state.consolidations[done.data["consolidation"]].status == "completed"
        assert ENTRY in (home.memory / "HISTORY.md").read_text()
        assert cons(a).trigger("quick") is None  # nothing left, no backoff either
    finally:
        a.close()
    rows = json.loads(run_cli(home.root, "memory", "log", "--json").stdout)
    assert [r for r in rows if r["kind"] == "failed"] == []
    assert "FAILED" not in run_cli(home.root, "memory", "log").stdout


def test_an_empty_memory_update_without_edits_still_fails() -> None:
    """The whole-memory form with nothing in it would erase every fact: still refused (the
    empty-reply door is the edits form, or no memory_update at all)."""
    from memtray.core.memory.facts import Ledger
    from memtray.core.memory.guard import parse_reply
    from memtray.core.memory.proposal import apply_reply

    reply = parse_reply(json.dumps({"history_entry": ENTRY, "memory_update": ""}))
    with pytest.raises(ValueError, match="erase every fact"):
        apply_reply(Ledger.of(MEM0), MEM0, memory_update=reply.memory_update, edits=reply.edits,
                    removed=reply.removed, messages=[])


def test_a_removal_without_edits_or_memory_still_applies_with_its_reason() -> None:
    from memtray.core.memory.facts import Ledger
    from memtray.core.memory.guard import parse_reply
    from memtray.core.memory.proposal import apply_reply

    reply = parse_reply(json.dumps({"history_entry": ENTRY, "removed_facts": [
        {"fact": "User likes green tea", "reason": "switched to coffee"}]}))
    a = apply_reply(Ledger.of(MEM0), MEM0, memory_update=reply.memory_update, edits=reply.edits,
                    removed=reply.removed, messages=[])
    assert "green tea" not in a.memory and set(a.memory.splitlines()) == set(MEM0.splitlines()) - {
        "- User likes green tea"}
    assert list(a.reasons.values()) == ["switched to coffee"]
