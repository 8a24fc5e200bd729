"""The guard on receipts (core/memory/proposal.py): what a reply's receipts do to memory."""

from __future__ import annotations

from memtray.core.memory import facts
from memtray.core.memory.proposal import apply_reply, with_seqs
from memtray.core.memory.receipts import read_receipts

OLD = "## Me\n- Works on Beacon with Greta\n- Lives in Graz\n"
MESSAGES = ["I keep bees in the garden.", "You seem to be an early riser.", "Greta left, I work with Mia now."]
ROLES = ["user", "assistant", "user"]


def _apply(inferred: str = "hold", **reply: object):  # type: ignore[no-untyped-def]
    current = facts.attach(facts.Ledger(()), OLD)
    return current, apply_reply(current, OLD, memory_update=reply.get("memory_update"),  # type: ignore[arg-type]
                                edits=reply.get("edits"), removed=[], messages=MESSAGES,  # type: ignore[arg-type]
                                roles=ROLES, receipts=read_receipts(reply.get("receipts")), inferred=inferred)


def test_an_added_fact_with_a_good_receipt_is_written_with_it() -> None:
    _cur, out = _apply(edits=[{"op": "add", "text": "Is a hobby beekeeper",
                               "receipt": {"messages": [1], "quote": "I keep bees in the garden"}}])
    [fid] = [v.id for v in out.verdicts if v.kind == "added"]
    assert "- Is a hobby beekeeper" in out.memory and out.sources[str(fid)] == [1]
    assert out.receipts[str(fid)].kind == "stated" and out.flagged == []


def test_the_assistants_guess_is_held_or_written_marked_by_the_policy() -> None:
    edit = {"op": "add", "text": "Is an early riser", "receipt": {"messages": [2], "quote": "an early riser"}}
    _cur, held = _apply(edits=[edit])
    assert "early riser" not in held.memory
    [item] = held.flagged
    assert (item["kind"], item["reason"], item["quote"], item["messages"]) == (
        "inferred", "only the assistant said this (message #2)", "an early riser", [2])
    _cur, written = _apply("write", edits=[edit])
    [fid] = [v.id for v in written.verdicts if v.kind == "added"]
    assert "- Is an early riser" in written.memory and written.receipts[str(fid)].kind == "inferred"


def test_an_update_by_id_that_changes_a_name_needs_a_receipt() -> None:
    cur, out = _apply(edits=[{"op": "update", "id": "F1", "text": "Works on Beacon with Mia"}])
    assert out.memory == OLD and [v.kind for v in out.verdicts if v.id == "F1"] == ["kept"]
    [item] = out.flagged
    assert item["kind"] == "unsupported" and item["fact_id"] == "F1"
    assert item["reason"] == "no receipt, and the fact says 'Mia', the old wording says 'Greta'"
    _cur, ok = _apply(edits=[{"op": "update", "id": "F1", "text": "Works on Beacon with Mia",
                               "receipt": {"messages": [3], "quote": "I work with Mia now"}}])
    assert "- Works on Beacon with Mia" in ok.memory and ok.sources["F1"] == [3] and cur.ids == ok.ledger.ids


def test_a_rewording_by_id_in_memory_update_is_undone_when_its_receipt_fails() -> None:
    _cur, out = _apply(memory_update="## Me\n- [F1] Beacon project, with Greta\n- [F2] Lives in Graz, Austria\n")
    # a word the old wording does not say needs a receipt like an add, an anchor too
    assert "- Works on Beacon with Greta\n" in out.memory and "project" not in out.memory
    assert "- Lives in Graz\n" in out.memory and "Austria" not in out.memory
    assert [(i["fact_id"], i["reason"]) for i in out.flagged] == [
        ("F1", "no receipt, and the old wording does not say 'project'"),
        ("F2", "no receipt, and the fact says 'Austria', the old wording does not")]
    assert out.ledger.ids == ["F1", "F2"]


def test_a_rewording_by_id_that_says_no_more_than_its_old_wording_needs_no_receipt() -> None:
    _cur, out = _apply(memory_update="## Me\n- [F1] Works with Greta on Beacon\n- [F2] Based in Graz\n")
    assert "- Works with Greta on Beacon\n" in out.memory and "- Based in Graz\n" in out.memory
    assert out.flagged == [] and out.ledger.ids == ["F1", "F2"]


def test_a_rewording_by_id_that_adds_a_claim_is_held_in_every_form_a_model_sends_it() -> None:
    # the hostile model: it rewords by id and slips in what nobody said, as an update edit, as
    # key: value, as a merge of two facts, in Chinese; none carries a receipt
    for edits in ([{"op": "update", "id": "F2", "text": "Lives in Graz with two cats"}],
                  [{"op": "update", "id": "F2", "text": "Home: Graz (owns a flat)"}],
                  [{"op": "update", "id": "F2", "text": "住在格拉茨，有一只狗"}]):
        _cur, out = _apply(edits=edits)
        assert "- Lives in Graz\n" in out.memory, edits
        [item] = out.flagged
        assert item["fact_id"] == "F2" and item["reason"].startswith("no receipt"), item
    _cur, out = _apply(memory_update="## Me\n- [F1,F2] Works on Beacon with Greta and lives in Graz, runs a bakery\n")
    assert "bakery" not in out.memory and "- Works on Beacon with Greta\n" in out.memory and "- Lives in Graz\n" in out.memory


def test_a_new_bullet_finds_its_receipt_by_text_and_a_fake_quote_is_named() -> None:
    update = OLD + "- Keeps bees [#1]\n- Has a cat named Miso [#1]\n"
    _cur, out = _apply(memory_update=update, receipts=[
        {"fact": "Keeps bees", "messages": [1], "quote": "I keep bees"},
        {"fact": "Has a cat named Miso", "messages": [1], "quote": "I have a cat named Miso"}])
    assert "- Keeps bees" in out.memory and "Miso" not in out.memory
    [item] = out.flagged
    assert item["reason"] == "the quote is not in message #1" and item["quote"] == "I have a cat named Miso"


def test_held_items_name_their_messages_by_seq_in_the_log() -> None:
    item = {"id": "x", "kind": "inferred", "messages": [2, 9]}
    assert with_seqs(item, [40, 41, None]) == {"id": "x", "kind": "inferred", "source_seqs": [41]}
    assert with_seqs({"id": "y"}, [40]) == {"id": "y"}


def test_a_held_merge_takes_none_of_the_facts_it_merged_with_it() -> None:
    """'- [F1, F2] Works on Beacon with Mia and lives in Berlin' without a receipt is held: F1
    keeps its words and F2 ("Lives in Graz") stays in memory under its id, not merged away."""
    cur, out = _apply(memory_update="## Me\n- [F1, F2] Works on Beacon with Greta and lives in Berlin\n")
    assert "- Works on Beacon with Greta" in out.memory and "- Lives in Graz" in out.memory
    assert "Berlin" not in out.memory and out.merged == {}
    assert {f.id: f.text for f in out.ledger.facts} == {f.id: f.text for f in cur.facts}
    assert [i["kind"] for i in out.flagged] == ["unsupported"]


def test_a_skipped_entry_with_an_odd_number_is_ignored_not_a_failed_reply() -> None:
    from memtray.core.memory.unsaid import parse_skipped

    skips, notes = parse_skipped([{"message": "²", "quote": "x", "reason": "r"}], ["x"])
    assert skips == [] and "names no consolidated message" in notes[0]


def test_a_hostile_models_reply_that_makes_others_words_the_users_is_held_fact_by_fact() -> None:
    # the conversation: the user speaks of their sister, asks, hedges and tells the past
    msgs = ["My sister lives in Oslo.", "Should I learn Rust?", "Maybe I'll move to Berlin.", "I used to smoke.",
            "I hate cilantro.", "I keep bees in the garden."]
    current = facts.attach(facts.Ledger(()), OLD)
    edits = [  # paraphrase, key: value, a merge, Chinese, a rewording by id with nothing said
        {"op": "add", "text": "Lives in Oslo", "receipt": {"messages": [1], "quote": "lives in Oslo"}},
        {"op": "add", "text": "Programming language: Rust", "receipt": {"messages": [2], "quote": "learn Rust"}},
        {"op": "add", "text": "Moving to Berlin", "receipt": {"messages": [3], "quote": "I'll move to Berlin"}},
        {"op": "add", "text": "Smokes; keeps bees", "receipt": {"messages": [4, 6], "quote": "smoke … I keep bees"}},
        {"op": "add", "text": "喜欢香菜", "receipt": {"messages": [5], "quote": "I hate cilantro"}},
        {"op": "update", "id": "F2", "text": "Lives in Graz, owns a flat"},
        {"op": "add", "text": "Is a hobby beekeeper", "receipt": {"messages": [6], "quote": "I keep bees in the garden"}},
    ]
    out = apply_reply(current, OLD, memory_update=None, edits=edits, removed=[], messages=msgs,
                      roles=["user"] * len(msgs), receipts=[], inferred="hold")
    assert "- Is a hobby beekeeper" in out.memory and "- Lives in Graz\n" in out.memory
    reasons = {i["text"]: i["reason"] for i in out.flagged}
    assert reasons == {
        "Lives in Oslo": "the quote is about 'My sister', the fact is about the user",
        "Programming language: Rust": "the quote says 'Should', the fact says it is so",
        "Moving to Berlin": "the quote says 'Maybe', the fact says it is so",
        "Smokes; keeps bees": "the quote says 'used to', the fact says it is so now",
        "喜欢香菜": "the fact says '喜欢', the quote says 'hate'",  # switched language, and the opposite
        "Lives in Graz, owns a flat": "no receipt, and the old wording does not say 'owns', 'flat'",
    }, reasons
    for held in reasons:
        assert held not in out.memory
