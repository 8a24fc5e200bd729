"""Not remembered, end to end through real litellm: a consolidation that keeps one thing the
user said, skips one with a reason (and sends a broken skip), and drops the rest silently
lists the rest for review, says so in its notification and in `memtray consolidate`, records
its skips on consolidation.completed, and each item is one command from memory (with the
message as its receipt) or kept out (recorded)."""

from __future__ import annotations

import json

from memtray.core.base.home import Home
from memtray.core.base.notify import RecordingNotifier
from memtray.core.log.events import ConsolidationCompleted, MemoryReviewed, Message

from tests.fixtures.llm_server import ScriptedLLMServer, tool_call
from tests.integration.test_consolidation import open_app
from tests.support import cli_here

SAID = [
    ("user", "Hi! I have a cat named Miso. What should I feed her?"),
    ("assistant", "Cats do well on a high-protein diet."),
    ("user", "Thanks. I don't like cilantro, by the way. And I write code in Rust."),
    ("assistant", "Noted."),
    ("user", "I sold my red kayak last week. Can you write me a haiku about autumn?"),
    ("assistant", "Leaves fall..."),
    ("user", 'My colleague said "I hate Mondays". What do you think?'),
]


def reply() -> object:
    return tool_call("save_memory", {
        "history_entry": "[2026-12-03 10:00] Talked about cats and asked for a haiku.",
        "memory_update": "## Pets\n- Has a cat called Miso [#1]\n",
        "receipts": [{"fact": "Has a cat called Miso", "messages": [1], "quote": "I have a cat named Miso"}],
        "removed_facts": [{"fact": "Owns a red kayak", "reason": "sold it"}],  # never in memory
        "skipped": [
            {"message": 3, "quote": "I write code in Rust", "reason": "not relevant to preferences"},
            {"message": 42, "quote": "I have a cat", "reason": "a message that does not exist"},
            {"message": 2, "quote": "I don't like cilantro", "reason": "not what message 2 says"},
            "not an object",
        ],
    })


def test_what_nothing_keeps_is_listed_notified_and_one_command_from_memory(
        home: Home, llm_server: ScriptedLLMServer) -> None:
    app = open_app(home, llm_server)
    try:
        sent = RecordingNotifier()
        app.notifier.set(sent)
        app.store.append_many([(Message(role=r, content=t), "cli", None) for r, t in SAID])
        llm_server.script(reply())
        out = app.run(app.consolidation.consolidate("cli", trigger="manual"))
        assert "Has a cat called Miso" in app.store.state.memory
        # cilantro (its skip names the wrong message) and the kayak (removed from a memory that never had it)
        assert out.not_remembered == 2
        assert "2 things you said were not remembered" in sent.sent[-1]["body"]
        assert sent.sent[-1]["body"].endswith("— review")
        assert sum("skipped entry" in n for n in out.notes) == 3
        [done] = [r for r in app.store.log.records() if r.type == ConsolidationCompleted.TYPE]
        c = ConsolidationCompleted.of(done)
        seqs = [r.seq for r in app.store.log.records() if r.type == Message.TYPE]
        assert c.not_remembered == 2 and c.skipped == [
            {"message": 3, "quote": "I write code in Rust", "reason": "not relevant to preferences", "seq": seqs[2]}]
        items = {i["quote"]: i for i in app.memory.pending_review() if i["kind"] == "not-remembered"}
        assert set(items) == {"I don't like cilantro, by the way.", "I sold my red kayak last week."}
        assert items["I don't like cilantro, by the way."]["text"] == "User doesn't like cilantro"
        assert items["I sold my red kayak last week."]["source_seqs"] == [seqs[4]]
    finally:
        app.close()

    listed = cli_here(home.root, "memory", "review", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {i["quote"]: i for i in json.loads(listed.stdout) if i["kind"] == "not-remembered"}
    kayak, cilantro = rows["I sold my red kayak last week."], rows["I don't like cilantro, by the way."]
    shown = cli_here(home.root, "memory", "review")
    assert 'you said: "I sold my red kayak last week."' in shown.stdout
    assert f"add to memory: memtray memory review add {kayak['id']}" in shown.stdout

    added = cli_here(home.root, "memory", "review", "add", kayak["id"])
    assert added.returncode == 0, added.stderr
    kept_out = cli_here(home.root, "memory", "review", "keep-out", cilantro["id"])
    assert kept_out.returncode == 0, kept_out.stderr

    app = open_app(home, llm_server)
    try:
        assert "User sold their red kayak last week" in app.store.state.memory
        assert "cilantro" not in app.store.state.memory
        assert [i for i in app.memory.pending_review() if i["kind"] == "not-remembered"] == []
        why = app.memory.why("User sold their red kayak last week")
        assert [m["content"] for m in why["messages"]] == [SAID[4][1]]  # the message is its receipt
        written = app.memory.ledger().facts[-1]
        prov = [r for r in app.store.log.records() if r.type == "memory.written"][-1]
        assert prov.data["provenance"][written.id] == {
            "source_seqs": [kayak["source_seqs"][0]], "text": written.text,
            "quote": "I sold my red kayak last week.", "stated": True}
        reviewed = [MemoryReviewed.of(r) for r in app.store.log.records() if r.type == MemoryReviewed.TYPE]
        assert [(r.item, r.action) for r in reviewed] == [(kayak["id"], "add"), (cilantro["id"], "keep-out")]
    finally:
        app.close()


def test_a_consolidation_that_keeps_everything_says_nothing_of_it(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = open_app(home, llm_server)
    try:
        sent = RecordingNotifier()
        app.notifier.set(sent)
        app.store.append_many([(Message(role=r, content=t), "cli", None) for r, t in SAID[:4]])
        llm_server.script(tool_call("save_memory", {
            "history_entry": "[2026-12-03 10:00] The user dislikes cilantro.",
            "memory_update": "## Pets\n- Has a cat called Miso [#1]\n",
            "removed_facts": [],
            "skipped": [{"message": 3, "quote": "i write CODE in rust", "reason": "passing remark"}],
        }))
        out = app.run(app.consolidation.consolidate("cli", trigger="manual"))
        assert out.not_remembered == 0 and out.notes == []
        assert "not remembered" not in sent.sent[-1]["body"]
        assert [i for i in app.memory.pending_review() if i["kind"] == "not-remembered"] == []
    finally:
        app.close()
