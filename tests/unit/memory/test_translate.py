"""A consolidation reply put on the ids of now after syncs renumbered them (undo.translate + carry)."""

from __future__ import annotations

from memtray.core.memory import facts
from memtray.core.memory.undo import carry, translate

# what the model was shown: F1 Lyon, F2 Rex, F3 Beacon, F4 flat
BASE_TEXT = "- Lives in Lyon\n- Has a cat named Rex\n- Works on Beacon\n- Rents a flat with a balcony\n"
BASE = facts.Ledger.with_ids(BASE_TEXT, ["F1", "F2", "F3", "F4"], 5)
# its reply: Rex reworded, Beacon removed, flat merged into Lyon, a new fact under the next id (F5)
REPLY_TEXT = "- Home: a flat with a balcony in Lyon\n- Pet: a cat named Rex\n- Second cat: Mimi\n"
REPLY = facts.Ledger.with_ids(REPLY_TEXT, ["F1", "F2", "F5"], 6)
# meanwhile two merges: the first renumbered F2..F4 to F5..F7 (another device used them), a
# second renumbered F5 again; the other device's facts came in as F2..F4, then F8 and F9
NOW_TEXT = ("- Lives in Lyon\n- Plays chess on Sundays\n- Drinks green tea\n- Speaks Portuguese\n"
            "- Has a cat named Rex\n- Works on Beacon\n- Rents a flat with a balcony\n- Has a sister named Ada\n")
NOW = facts.Ledger.with_ids(NOW_TEXT, ["F1", "F2", "F3", "F4", "F10", "F6", "F7", "F8"], 11)
MAPS = [{"F2": "F5", "F3": "F6", "F4": "F7"}, {"F5": "F10"}]


def test_translate_follows_every_merge_and_renumbers_the_replys_new_ids_after_now() -> None:
    t = translate(BASE, REPLY_TEXT, REPLY, MAPS, NOW)
    assert t.ids == {"F2": "F10", "F3": "F6", "F4": "F7", "F5": "F11"}  # the reply's F5 is not the relabeled F5
    assert [(f.id, f.text) for f in t.base.facts] == [
        ("F1", "Lives in Lyon"), ("F10", "Has a cat named Rex"), ("F6", "Works on Beacon"),
        ("F7", "Rents a flat with a balcony")]
    assert t.proposed.ids == ["F1", "F10", "F11"] and t.proposed.next == 12
    assert t.unmapped == [] and t.lost == set() and t.text == REPLY_TEXT


def test_carry_after_translate_keeps_the_models_words_removals_and_merges_and_the_other_devices_facts() -> None:
    t = translate(BASE, REPLY_TEXT, REPLY, MAPS, NOW)
    text, out, renames = carry(t.base, NOW, t.text, t.proposed)
    assert renames == {}
    by_id = {f.id: f.text for f in out.facts}
    assert by_id == {"F1": "Home: a flat with a balcony in Lyon", "F10": "Pet: a cat named Rex",
                     "F11": "Second cat: Mimi", "F2": "Plays chess on Sundays", "F3": "Drinks green tea",
                     "F4": "Speaks Portuguese", "F8": "Has a sister named Ada"}
    assert "Beacon" not in text and "Has a cat named Rex" not in text and "Rents a flat" not in text
    assert out.next == 12


def test_without_translate_the_rebase_loses_the_rewording_and_the_removal() -> None:
    """What the rebase did before: the model's ids taken for the ids of now."""
    _text, out, _ = carry(BASE, NOW, REPLY_TEXT, REPLY)
    texts = [f.text for f in out.facts]
    assert "Has a cat named Rex" in texts and "Works on Beacon" in texts  # the defect translate fixes


def test_ids_two_facts_would_share_are_followed_by_their_words() -> None:
    t = translate(BASE, REPLY_TEXT, REPLY, [{"F2": "F6", "F3": "F6"}], NOW)  # a broken map
    assert t.lost == set() and t.ids["F2"] == "F10" and t.ids["F3"] == "F6"


def test_ids_two_facts_would_share_are_not_followed_and_now_keeps_its_version() -> None:
    # a broken map sends F2 and F3 to the same id, and both facts have other words now
    now_text = NOW_TEXT.replace("a cat named Rex", "a tabby cat named Rex").replace("on Beacon", "on Beacon at Acme")
    now = facts.Ledger.with_ids(now_text, NOW.ids, NOW.next)
    t = translate(BASE, REPLY_TEXT, REPLY, [{"F2": "F6", "F3": "F6"}], now)
    assert t.lost == {"F2", "F3"}
    assert [f.text for f in t.unmapped] == ["Pet: a cat named Rex"]
    assert "Pet: a cat named Rex" not in t.text and len(facts.Ledger.of(t.text).facts) == len(t.proposed.facts)
    text, _, _ = carry(t.base, now, t.text, t.proposed)
    assert "Pet: a cat named Rex" not in text  # held for review by the caller, not written
    assert "Has a tabby cat named Rex" in text and "Works on Beacon at Acme" in text  # as they are now


def test_a_new_fact_that_restates_one_added_meanwhile_is_kept_once_under_the_id_of_now() -> None:
    base = facts.Ledger.with_ids("- Lives in Lyon\n", ["F1"], 2)
    now_text = "- Lives in Lyon\n- Plays chess on Sundays\n"
    now = facts.Ledger.with_ids(now_text, ["F1", "F2"], 3)
    reply_text = "- Lives in Lyon\n- Plays chess every Sunday\n"
    reply = facts.Ledger.with_ids(reply_text, ["F1", "F2"], 3)
    t = translate(base, reply_text, reply, [], now)
    text, out, _ = carry(t.base, now, t.text, t.proposed)
    assert [(f.id, f.text) for f in out.facts] == [("F1", "Lives in Lyon"), ("F2", "Plays chess on Sundays")]
    assert text.count("chess") == 1
