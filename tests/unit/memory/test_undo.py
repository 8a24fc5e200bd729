"""Undo of one revision by fact id, and carrying changes onto a reply (core/memory/undo.py)."""

from __future__ import annotations

from memtray.core.memory import factdiff, facts
from memtray.core.memory.undo import carry, changes, undo

V1 = "## Home\n- Lives in Paris\n- Likes tea\n- Has a cat named Pixel\n"


def led(text: str, prev: facts.Ledger | None = None) -> facts.Ledger:
    return facts.attach(prev or facts.Ledger(()), text)


def test_undo_reverts_exactly_one_revisions_changes_and_keeps_later_ones() -> None:
    v1 = led(V1)  # F1 Paris, F2 tea, F3 cat
    # the bad consolidation: rewords F1, removes F2, adds F4
    v2_text = "## Home\n- Home city: Paris\n- Has a cat named Pixel\n- Owns a kayak\n"
    v2 = facts.Ledger.with_ids(v2_text, ["F1", "F3", "F4"], 5)
    # a later revision adds F5 and rewords F3
    v3_text = "## Home\n- Home city: Paris\n- Cat: Pixel\n- Owns a kayak\n- Plays chess\n"
    v3 = facts.Ledger.with_ids(v3_text, ["F1", "F3", "F4", "F5"], 6)
    out = undo(v1, v2, v3_text, v3)
    assert [(f.id, f.text) for f in out.ledger.facts] == [
        ("F1", "Lives in Paris"), ("F3", "Cat: Pixel"), ("F5", "Plays chess"), ("F2", "Likes tea")]
    assert sorted(d["action"] for d in out.done) == ["removed", "restored", "reverted"]
    assert out.not_done == []


def test_undo_says_what_it_cannot_undo() -> None:
    v1 = led(V1)
    v2_text = "## Home\n- Home city: Paris\n- Has a cat named Pixel\n- Owns a kayak\n"
    v2 = facts.Ledger.with_ids(v2_text, ["F1", "F3", "F4"], 5)
    # later: F1 reworded again, F4 removed, F2 brought back by hand
    v3_text = "## Home\n- Lives in Paris, France\n- Has a cat named Pixel\n- Likes tea\n"
    v3 = facts.Ledger.with_ids(v3_text, ["F1", "F3", "F2"], 5)
    out = undo(v1, v2, v3_text, v3)
    assert out.memory == v3_text
    assert {d["id"]: d["why"] for d in out.not_done} == {
        "F1": "changed again by a later revision", "F2": "already back in memory", "F4": "already gone"}


def test_changes_and_carry() -> None:
    base = led(V1)
    now_text = "## Home\n- Lives in Paris\n- Has a cat named Pixel\n- Plays chess\n"  # forget tea, remember chess
    now = facts.Ledger.with_ids(now_text, ["F1", "F3", "F4"], 5)
    assert {c.id: c.kind for c in changes(base, now)} == {"F2": "removed", "F4": "added"}
    proposed_text = "## Home\n- Home city: Paris\n- Likes tea\n- Has a cat named Pixel\n- Owns a kayak\n"
    proposed = facts.Ledger.with_ids(proposed_text, ["F1", "F2", "F3", "F4"], 5)
    text, out, renames = carry(base, now, proposed_text, proposed)
    assert "Likes tea" not in text
    assert renames == {"F4": "F5"}
    assert [(f.id, f.text) for f in out.facts] == [
        ("F1", "Home city: Paris"), ("F3", "Has a cat named Pixel"), ("F5", "Owns a kayak"), ("F4", "Plays chess")]
    assert out.next == 6


def test_replay_carries_one_revision_of_main_onto_a_rebuild_branch_by_id() -> None:
    from memtray.core.memory.undo import replay

    before = led(V1)  # main: F1 Paris, F2 tea, F3 cat
    # a hand edit on main: F2 reworded in place, F3 removed, F4 added
    after_text = "## Home\n- Lives in Paris\n- Enjoys green tea\n- Plays chess\n"
    after = facts.Ledger.with_ids(after_text, ["F1", "F2", "F4"], 5)
    # the branch wrote the same facts in its own words, under the same ids; F9 is its own
    branch_text = "## Home\n- Home city: Paris\n- Likes black tea\n- Cat: Pixel\n- Owns a kayak\n"
    branch = facts.Ledger.with_ids(branch_text, ["F1", "F2", "F3", "F9"], 10)
    text, out, removed = replay(before, after, branch_text, branch)
    assert [(f.id, f.text) for f in out.facts] == [
        ("F1", "Home city: Paris"), ("F2", "Enjoys green tea"), ("F9", "Owns a kayak"), ("F4", "Plays chess")]
    assert removed == ["F3"] and out.next >= 10
    assert [f.text for f in factdiff.parse(text)] == [f.text for f in out.facts]
    # the branch lacks an id (it wrote the fact under another one): found by the precise matcher
    branch2 = facts.Ledger.with_ids("## Home\n- Has a cat named Pixel\n- Owns a kayak\n", ["F7", "F4"], 10)
    _text2, out2, removed2 = replay(before, after, "## Home\n- Has a cat named Pixel\n- Owns a kayak\n", branch2)
    assert removed2 == ["F7"]
    # the rewording of a fact the branch lacks comes in as main wrote it, under main's id; F4 is
    # the branch's kayak, so main's F4 (chess) comes in under a new id and the kayak keeps its own
    assert [(f.id, f.text) for f in out2.facts] == [
        ("F4", "Owns a kayak"), ("F2", "Enjoys green tea"), ("F10", "Plays chess")]
    assert out2.next == 11
