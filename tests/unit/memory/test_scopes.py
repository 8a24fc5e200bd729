"""Scopes as text (core/memory/scopes.py, pure) and the scope golden fixture's replay."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memtray.core.log import promptbase
from memtray.core.log.events import decode_raw
from memtray.core.log.payloads import SCOPE_NAME_RULE
from memtray.core.log.projections import replay
from memtray.core.memory import factdiff, scopes
from memtray.core.memory.facts import Ledger

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "events"
TEXT = ("## General\n- Lives in Lyon\n- Drinks green tea\n\n<!-- scope: family -->\n## Family\n- Ada plays the cello\n"
        "\n<!-- scope: work -->\n## Work\n- Reviews code at Acme\n")


def test_files_split_and_join_back_exactly() -> None:
    files = scopes.files(TEXT)
    assert files == {"MEMORY.md": "## General\n- Lives in Lyon\n- Drinks green tea\n",
                     "scopes/family.md": "## Family\n- Ada plays the cello\n",
                     "scopes/work.md": "## Work\n- Reviews code at Acme\n"}
    assert scopes.from_files(files["MEMORY.md"], {"family": files["scopes/family.md"],
                                                  "work": files["scopes/work.md"]}) == TEXT
    assert scopes.canonical(TEXT) == TEXT
    assert scopes.of_facts(TEXT) == ["global", "global", "family", "work"]


def test_a_conversation_sees_global_and_its_scope_only() -> None:
    work = scopes.view(TEXT, "work")
    assert "Acme" in work and "Lyon" in work and "cello" not in work
    assert "Acme" not in scopes.view(TEXT, None) and "cello" not in scopes.view(TEXT, None)
    assert scopes.view(TEXT, "nowhere") == scopes.view(TEXT, None)


def test_place_moves_by_id_and_keeps_ids() -> None:
    led = Ledger.with_ids(TEXT, ["F1", "F2", "F3", "F4"], 5)
    text, moved = scopes.place(TEXT, led, {"F2": "work", "F3": "global"})
    assert sorted(moved.ids) == ["F1", "F2", "F3", "F4"]
    where = scopes.scope_map(moved, text)
    assert where == {"F1": "global", "F3": "global", "F2": "work", "F4": "work"}
    assert {f.id: f.text for f in moved.facts}["F2"] == "Drinks green tea"
    assert "scope: family" not in text  # a scope with no fact left has no block (and no file)


def test_a_fact_added_without_a_scope_is_global_never_the_last_scopes() -> None:
    new = factdiff.add_fact(TEXT, "Runs on Sundays", "Sport")
    assert scopes.of_facts(scopes.canonical(new))[2] == "global"
    assert "Runs on Sundays" in scopes.files(scopes.canonical(new))["MEMORY.md"]


@pytest.mark.parametrize("bad", ["../etc", "Work Stuff", "a" * 40, "-x", "x/y", "ä", "Café", "\u212a", "\u212aey"])
def test_scope_names_are_file_names(bad: str) -> None:
    """The log door's rule (ASCII only: the Kelvin sign lower-cases to "k"), in its words."""
    with pytest.raises(scopes.ScopeError, match=re.escape(SCOPE_NAME_RULE)):
        scopes.check_name(bad)
    assert scopes.check_name("Work") == "work" and scopes.check_name("") == "global"


@given(st.lists(st.tuples(st.sampled_from(["global", "work", "family", "x-1"]),
                          st.text("abcdefgh ", min_size=1, max_size=12).filter(str.strip)), max_size=8))
def test_join_of_split_is_the_identity_on_canonical_text(facts: list[tuple[str, str]]) -> None:
    parts: dict[str, str] = {}
    for scope, words in facts:
        parts[scope] = parts.get(scope, "## S\n") + f"- {words.strip()}\n"
    text = scopes.join(parts)
    assert scopes.canonical(text) == text
    assert scopes.join(scopes.split(text)) == text
    files = scopes.files(text)
    named = {k[len("scopes/"):-3]: v for k, v in files.items() if k.startswith("scopes/")}
    assert scopes.from_files(files["MEMORY.md"], named) == text


def test_the_scope_golden_fixture_replays() -> None:
    recs = [decode_raw(line) for line in (GOLDEN / "v1-scopes.jsonl").read_bytes().split(b"\n") if line]
    state = replay(recs)
    assert state.sessions["chat-3"].scope == "work"
    assert scopes.names(state.memory) == ["work"]
    # the fact moved into work leaves every other conversation's sight; the added work fact is
    # told to work conversations only
    tags = {str(n[1]).split(" (")[0]: str(n[2]) for n in state.notes if len(n) > 2}
    moved, added = tags["- [Work] Reviews code at Acme on Fridays"], tags["+ [Work] Deploys on Tuesdays"]
    assert promptbase.shown_to(moved, None) and promptbase.shown_to(moved, "family")
    assert not promptbase.shown_to(moved, "work")
    assert promptbase.shown_to(added, "work") and not promptbase.shown_to(added, None)
    assert not promptbase.shown_to(added, "family")


def test_a_sync_merge_keeps_each_new_fact_in_its_scope_on_both_orders() -> None:
    from memtray.core.memory.merge import Side, merge3

    base_text = "## Me\n- Lives in Lyon\n- Likes tea\n\n<!-- scope: work -->\n## Work\n- Reviews code at Acme\n"
    base = Ledger.with_ids(base_text, ["F1", "F2", "F3"], 4)

    def side(device: str, text: str, ids: list[str]) -> Side:
        led = Ledger.with_ids(text, ids, 6)
        return Side(device, text, led, {}, frozenset(led.ids))

    # device A adds a global fact and one more; device B (fewer facts) adds a work fact
    a_text = "## Me\n- Lives in Lyon\n- Likes tea\n- Runs on Sundays\n- Has a bike\n\n<!-- scope: work -->\n" \
             "## Work\n- Reviews code at Acme\n"
    b_text = base_text.rstrip("\n") + "\n- Deploys on Tuesdays\n"
    a = side("d0000000000aa", a_text, ["F1", "F2", "F4", "F5", "F3"])
    b = side("d0000000000bb", b_text, ["F1", "F2", "F3", "F6"])
    one, two = merge3(base, a, b), merge3(base, b, a)
    assert (one.text, one.ledger) == (two.text, two.ledger)  # the same on every device
    where = dict(zip(one.ledger.ids, scopes.of_facts(one.text), strict=True))
    assert where == {"F1": "global", "F2": "global", "F4": "global", "F5": "global", "F3": "work", "F6": "work"}
