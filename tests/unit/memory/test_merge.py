"""The memory merge by fact id (pure): symmetric, deterministic, conflicts kept, ids renumbered."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from memtray.core.memory import factdiff
from memtray.core.memory.facts import Ledger
from memtray.core.memory.merge import (
    CONFLICT,
    Dag,
    Merged,
    Node,
    Side,
    merge3,
    merge_id,
    merge_nodes,
)

A, B, C = "d0000000000aa", "d0000000000bb", "d0000000000cc"


def doc(*facts: str, section: str = "Me") -> str:
    return f"## {section}\n\n" + "".join(f"- {f}\n" for f in facts)


def ledger(text: str, ids: Sequence[str], nxt: int | None = None) -> Ledger:
    nums = [int(i[1:]) for i in ids]
    return Ledger.with_ids(text, list(ids), nxt if nxt is not None else max(nums, default=0) + 1)


def side(device: str, text: str, ids: Sequence[str], dropped: dict[str, str] | None = None,
         nxt: int | None = None) -> Side:
    led = ledger(text, ids, nxt)
    return Side(device, text, led, dropped or {}, frozenset(led.ids))


def facts_of(m: Merged) -> list[tuple[str, str]]:
    return [(f.id, f.text) for f in m.ledger.facts]


def both(base: Ledger, x: Side, y: Side) -> Merged:
    """merge3 both ways round; they must agree to the byte."""
    m1, m2 = merge3(base, x, y), merge3(base, y, x)
    assert (m1.text, m1.ledger, m1.conflicts, m1.dropped, m1.renamed, m1.merged) == (
        m2.text, m2.ledger, m2.conflicts, m2.dropped, m2.renamed, m2.merged)
    # the text and the ids agree: every fact of the text has its id, in order
    assert [f.norm for f in factdiff.parse(m1.text)] == [f.norm for f in m1.ledger.facts]
    return m1


BASE_TEXT = doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme")
BASE = ledger(BASE_TEXT, ["F1", "F2", "F3"])


def test_changes_on_one_side_each_are_all_taken_and_the_merge_is_symmetric() -> None:
    a = side(A, doc("Lives in Lyon, France", "Has a cat named Mimi", "Works at Acme", "Plays the cello"),
             ["F1", "F2", "F3", "F4"])
    b = side(B, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme as a nurse"), ["F1", "F2", "F3"])
    m = both(BASE, a, b)
    assert facts_of(m) == [("F1", "Lives in Lyon, France"), ("F2", "Has a cat named Mimi"),
                           ("F3", "Works at Acme as a nurse"), ("F4", "Plays the cello")]
    assert m.conflicts == [] and m.dropped == {}


def test_a_removal_with_its_reason_on_one_side_is_a_removal_that_keeps_the_reason() -> None:
    a = side(A, BASE_TEXT, ["F1", "F2", "F3"])
    b = side(B, doc("Lives in Lyon", "Works at Acme"), ["F1", "F3"], dropped={"F2": "Mimi died in May"})
    m = both(BASE, a, b)
    assert facts_of(m) == [("F1", "Lives in Lyon"), ("F3", "Works at Acme")]
    assert m.dropped == {"F2": f"removed on {B}: Mimi died in May"}
    assert m.conflicts == []


def test_removed_on_one_side_and_reworded_on_the_other_is_kept_reworded_and_held_for_review() -> None:
    a = side(A, doc("Lives in Lyon", "Has a cat named Mimi, a tabby", "Works at Acme"), ["F1", "F2", "F3"])
    b = side(B, doc("Lives in Lyon", "Works at Acme"), ["F1", "F3"], dropped={"F2": "the cat was given away"})
    m = both(BASE, a, b)
    assert ("F2", "Has a cat named Mimi, a tabby") in facts_of(m)  # never a silent loss
    assert m.dropped == {}
    [item] = m.conflicts
    assert item["kind"] == CONFLICT and item["conflict"] == "removed-reworded" and item["fact_id"] == "F2"
    assert "the cat was given away" in item["reason"]
    assert item["words"] == {A: "Has a cat named Mimi, a tabby", B: None}


def test_reworded_differently_on_both_sides_keeps_one_wording_and_holds_the_other() -> None:
    a = side(A, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme in sales"), ["F1", "F2", "F3"])
    b = side(B, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme as an engineer"), ["F1", "F2", "F3"])
    m = both(BASE, a, b)
    assert ("F3", "Works at Acme in sales") in facts_of(m)  # the lower device's words
    [item] = m.conflicts
    assert item["conflict"] == "reworded" and item["text"] == "Works at Acme as an engineer"
    assert item["words"] == {A: "Works at Acme in sales", B: "Works at Acme as an engineer"}


def test_reworded_on_both_sides_where_one_says_all_the_other_does_keeps_it_without_conflict() -> None:
    a = side(A, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme in sales"), ["F1", "F2", "F3"])
    b = side(B, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme in sales since 2021"), ["F1", "F2", "F3"])
    m = both(BASE, a, b)
    assert ("F3", "Works at Acme in sales since 2021") in facts_of(m)
    assert m.conflicts == []


def test_colliding_new_ids_are_renumbered_after_both_counters_the_same_way_everywhere() -> None:
    a = side(A, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Plays the cello"),
             ["F1", "F2", "F3", "F4"], nxt=5)
    b = side(B, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Speaks Japanese", "Runs marathons"),
             ["F1", "F2", "F3", "F4", "F5"], nxt=7)  # B also handed out F6 and dropped it
    m = both(BASE, a, b)
    # B's F4 is A's too (another fact): renumbered; A never used F5, so B's keeps it
    assert sorted(facts_of(m)) == [("F1", "Lives in Lyon"), ("F2", "Has a cat named Mimi"), ("F3", "Works at Acme"),
                                   ("F4", "Plays the cello"), ("F5", "Runs marathons"), ("F7", "Speaks Japanese")]
    assert m.renamed == {B: {"F4": "F7"}}
    assert m.ledger.next == 8
    assert len(set(m.ledger.ids)) == len(m.ledger.ids)


def test_the_same_new_fact_with_the_same_id_and_words_is_one_fact() -> None:
    a = side(A, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Plays the cello"), ["F1", "F2", "F3", "F4"])
    b = side(B, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Plays the cello"), ["F1", "F2", "F3", "F4"])
    m = both(BASE, a, b)
    assert facts_of(m)[3:] == [("F4", "Plays the cello")] and m.renamed == {}


def test_the_same_fact_added_on_both_sides_in_different_words_is_merged_not_doubled() -> None:
    a = side(A, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Enjoys hiking in the Alps"),
             ["F1", "F2", "F3", "F4"])
    b = side(B, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Likes hiking in the Alps"),
             ["F1", "F2", "F3", "F4"], nxt=6)
    m = both(BASE, a, b)
    hiking = [t for _i, t in facts_of(m) if "hiking" in t]
    assert hiking == ["Enjoys hiking in the Alps"]
    assert len(m.ledger.facts) == 4
    # B's F4 was renumbered (F6), then found to be A's F4 restated
    assert m.merged == {"F4": ["F6"]}


def test_an_added_fact_restating_one_the_other_side_has_is_not_doubled() -> None:
    # B removed "Works at Acme" and wrote it again in other words under a new id
    a = side(A, BASE_TEXT, ["F1", "F2", "F3"])
    b = side(B, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme as a nurse"), ["F1", "F2", "F4"],
             dropped={"F3": "reworded"})
    m = both(BASE, a, b)
    assert facts_of(m) == [("F1", "Lives in Lyon"), ("F2", "Has a cat named Mimi"), ("F3", "Works at Acme as a nurse")]


def test_a_language_switch_on_one_side_merges_with_additions_on_the_other() -> None:
    fr = doc("Habite à Lyon", "A un chat nommé Mimi", "Travaille chez Acme", "Aime le café de Kyoto")
    a = side(A, fr, ["F1", "F2", "F3", "F4"])  # the same facts in French, ids kept, and one new
    b = side(B, doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Likes coffee from Kyoto",
                    "Speaks Japanese"), ["F1", "F2", "F3", "F4", "F5"])
    m = both(BASE, a, b)
    texts = sorted(t for _i, t in facts_of(m))
    # the translation is taken (B did not touch those facts); the same new fact in two
    # languages is one fact
    assert texts == sorted(["Habite à Lyon", "A un chat nommé Mimi", "Travaille chez Acme", "Aime le café de Kyoto",
                            "Speaks Japanese"])
    assert m.conflicts == []


def test_no_common_ancestor_merges_two_memories_from_scratch() -> None:
    a = side(A, doc("Lives in Lyon", "Plays the cello"), ["F1", "F2"])
    b = side(B, doc("Lives in Lyon", "Speaks Japanese"), ["F1", "F2"])
    m = both(Ledger(()), a, b)
    assert facts_of(m) == [("F1", "Lives in Lyon"), ("F2", "Plays the cello"), ("F3", "Speaks Japanese")]


# --- merging nodes of the DAG -----------------------------------------------------------

def node(ident: str, device: str, parents: Sequence[str], text: str, ids: Sequence[str], nxt: int | None = None,
         ts: str = "2026-12-02T10:00:00.000Z", dropped: dict[str, str] | None = None) -> Node:
    led = ledger(text, ids, nxt)
    data = {"memory": text, "reason": "consolidation", "facts": led.to_json(),
            "diff": {"added": [], "changed": [], "unchanged": 0,
                     "dropped": [{"id": k, "section": "", "text": k, "reason": v} for k, v in (dropped or {}).items()]}}
    return Node(ident, device, tuple(parents), ts, data)


def test_merge_nodes_finds_the_base_and_a_merge_of_merges_loses_nothing() -> None:
    root = node("r", A, [], BASE_TEXT, ["F1", "F2", "F3"])
    a1 = node("a1", A, ["r"], doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Plays the cello"),
              ["F1", "F2", "F3", "F4"])
    b1 = node("b1", B, ["r"], doc("Lives in Lyon", "Works at Acme", "Speaks Japanese"), ["F1", "F3", "F4"],
              dropped={"F2": "Mimi died"})
    dag = Dag([root, a1, b1])
    m1 = merge_nodes(dag, ["b1", "a1"])
    assert merge_nodes(dag, ["a1", "b1"]).text == m1.text
    assert [t for _i, t in facts_of(m1)] == ["Lives in Lyon", "Works at Acme", "Plays the cello", "Speaks Japanese"]
    # A writes the merge and goes on; B went on from b1 without it
    mid = merge_id(["a1", "b1"], m1)
    dag.add(Node(mid, A, ("a1", "b1"), "2026-12-02T11:00:00.000Z", {"memory": m1.text, "reason": "merge", "facts": m1.ledger.to_json()}))
    a2_text = m1.text + "- Owns a red bike\n"
    dag.add(node("a2", A, [mid], a2_text, [*m1.ledger.ids, f"F{m1.ledger.next}"], m1.ledger.next + 1))
    b2_text = doc("Lives in Lyon", "Works at Acme in Paris", "Speaks Japanese")
    dag.add(node("b2", B, ["b1"], b2_text, ["F1", "F3", "F4"], 5))
    assert dag.common_bases(dag.ancestors("a2"), dag.ancestors("b2")) == ["b1"]
    m2 = merge_nodes(dag, ["a2", "b2"])
    assert [t for _i, t in facts_of(m2)] == ["Lives in Lyon", "Works at Acme in Paris", "Plays the cello",
                                             "Speaks Japanese", "Owns a red bike"]
    assert m2.conflicts == [] and len(set(m2.ledger.ids)) == 5


def test_criss_cross_merges_use_a_merged_base() -> None:
    root = node("r", A, [], BASE_TEXT, ["F1", "F2", "F3"])
    a1 = node("a1", A, ["r"], BASE_TEXT + "- Plays the cello\n", ["F1", "F2", "F3", "F4"])
    b1 = node("b1", B, ["r"], BASE_TEXT + "- Speaks Japanese\n", ["F1", "F2", "F3", "F4"])
    b2 = node("b2", B, ["b1"], BASE_TEXT + "- Speaks Japanese\n- Owns a red bike\n", ["F1", "F2", "F3", "F4", "F5"])
    dag = Dag([root, a1, b1, b2])
    x = merge_nodes(dag, ["a1", "b1"])
    y = merge_nodes(dag, ["a1", "b2"])
    dag.add(Node("x", A, ("a1", "b1"), "2026-12-02T11:00:00.000Z", {"memory": x.text, "reason": "merge", "facts": x.ledger.to_json()}))
    dag.add(Node("y", B, ("a1", "b2"), "2026-12-02T11:00:00.000Z", {"memory": y.text, "reason": "merge", "facts": y.ledger.to_json()}))
    assert dag.common_bases(dag.ancestors("x"), dag.ancestors("y")) == ["a1", "b1"]
    m = merge_nodes(dag, ["x", "y"])
    assert sorted(t for _i, t in facts_of(m)) == sorted(
        ["Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Plays the cello", "Speaks Japanese",
         "Owns a red bike"])
    assert m.conflicts == []
    # y already held every fact: nothing new, but y's renumbering of b1's F4 (F6 there, F5 in the
    # merged base x) is the lower device's, so y's own new F5 takes the next number
    assert sorted(t for _i, t in facts_of(m)) == sorted(t for _i, t in facts_of(y))
    assert dict((t, i) for i, t in facts_of(m))["Speaks Japanese"] == "F5"
    assert m.renamed == {B: {"F5": "F7", "F6": "F5"}}


def test_three_devices_merge_to_the_same_facts_whatever_the_order() -> None:
    root = node("r", A, [], BASE_TEXT, ["F1", "F2", "F3"])
    a1 = node("a1", A, ["r"], doc("Lives in Lyon", "Has a cat named Mimi", "Works at Acme", "Plays the cello"),
              ["F1", "F2", "F3", "F4"])
    b1 = node("b1", B, ["r"], doc("Lives in Lyon", "Works at Acme", "Speaks Japanese"), ["F1", "F3", "F4"],
              dropped={"F2": "Mimi died"})
    c1 = node("c1", C, ["r"], doc("Lives in Grenoble", "Has a cat named Mimi", "Works at Acme", "Runs marathons"),
              ["F1", "F2", "F3", "F4"])
    dag = Dag([root, a1, b1, c1])
    want = ["Lives in Grenoble", "Works at Acme", "Plays the cello", "Speaks Japanese", "Runs marathons"]
    results = set()
    for order in itertools.permutations(["a1", "b1", "c1"]):
        m = merge_nodes(dag, list(order))
        results.add((m.text, tuple(m.ledger.ids)))
        assert sorted(t for _i, t in facts_of(m)) == sorted(want)
    assert len(results) == 1
    # pairwise on different devices, then together: the same facts
    ab = merge_nodes(dag, ["a1", "b1"])
    dag.add(Node("ab", A, ("a1", "b1"), "2026-12-02T11:00:00.000Z", {"memory": ab.text, "reason": "merge", "facts": ab.ledger.to_json()}))
    bc = merge_nodes(dag, ["b1", "c1"])
    dag.add(Node("bc", C, ("b1", "c1"), "2026-12-02T11:00:00.000Z", {"memory": bc.text, "reason": "merge", "facts": bc.ledger.to_json()}))
    abc = merge_nodes(dag, ["ab", "c1"])
    bca = merge_nodes(dag, ["bc", "a1"])
    assert sorted(t for _i, t in facts_of(abc)) == sorted(want) == sorted(t for _i, t in facts_of(bca))
    final = merge_nodes(dag, ["ab", "bc"])
    assert sorted(t for _i, t in facts_of(final)) == sorted(want)
    assert len(set(final.ledger.ids)) == len(final.ledger.ids)


def test_merge_id_derives_from_the_parents_and_the_result() -> None:
    a = side(A, doc("Lives in Lyon"), ["F1"])
    b = side(B, doc("Plays the cello"), ["F1"])
    m = both(Ledger(()), a, b)
    assert merge_id(["x", "y"], m) == merge_id(["y", "x"], m)
    other = both(Ledger(()), a, side(B, doc("Plays the piano"), ["F1"]))
    assert merge_id(["x", "y"], m) != merge_id(["x", "y"], other)


def _written(dag: Dag, ident: str, device: str, heads: Sequence[str]) -> Merged:
    """Merge ``heads`` and add the result to ``dag`` as the merge revision ``ident`` of ``device``."""
    m = merge_nodes(dag, list(heads))
    facts = {**m.ledger.to_json(), **({"renamed": m.renamed} if m.renamed else {}),
             **({"merged": m.merged} if m.merged else {})}  # as the service records them
    dag.add(Node(ident, device, tuple(heads), "2026-12-02T11:00:00.000Z", {"memory": m.text, "reason": "merge", "facts": facts}))
    return m


def _three_way_renumbered(highs_fact: str) -> tuple[Dag, Merged, Merged]:
    """Three devices (low, mid, high) from one root; the high device's new F2 (``highs_fact``)
    reaches the other two separately and each renumbers it differently (F3 on mid, F5 on low)."""
    low, mid, high = A, B, C
    root = node("r", mid, [], doc("Lives in Lyon"), ["F1"])
    s1 = node("s1", high, ["r"], doc("Lives in Lyon", highs_fact), ["F1", "F2"])
    b1 = node("b1", mid, ["r"], doc("Lives in Lyon", "Bakes bread on Fridays"), ["F1", "F2"])
    c1 = node("c1", low, ["r"], doc("Lives in Lyon", "Owns a red bike", "Speaks Italian", "Likes jazz"),
              ["F1", "F2", "F3", "F4"])
    dag = Dag([root, s1, b1, c1])
    mb = _written(dag, "mb", mid, ["b1", "s1"])
    mc = _written(dag, "mc", low, ["c1", "s1"])
    assert mb.renamed == {high: {"F2": "F3"}} and mc.renamed == {high: {"F2": "F5"}}
    return dag, mb, mc


def test_a_new_fact_sharing_an_id_with_another_after_a_renumbering_is_no_rewording() -> None:
    # three devices (low, mid, high) from one root; the high device's new F2 reaches the other two
    # separately, and each renumbers it differently (F3 on mid, F5 on low); then mid and low
    # merge their merges: the base is the high device's revision, whose F2 is neither side's F2
    dag, _mb, _mc = _three_way_renumbered("Said this on S")
    assert dag.common_bases(dag.ancestors("mb"), dag.ancestors("mc")) == ["s1"]
    want = sorted(["Lives in Lyon", "Said this on S", "Bakes bread on Fridays", "Owns a red bike",
                   "Speaks Italian", "Likes jazz"])
    results = set()
    for heads in (["mb", "mc"], ["mc", "mb"]):
        m = merge_nodes(dag, heads)
        assert sorted(t for _i, t in facts_of(m)) == want  # nobody reworded anything: no fact held back
        assert m.conflicts == []
        assert len(set(m.ledger.ids)) == len(want)
        results.add((m.text, tuple(m.ledger.ids), repr(m.renamed), repr(m.merged)))
    assert len(results) == 1


def test_a_base_fact_renumbered_on_one_side_and_reworded_on_the_other_is_still_a_rewording() -> None:
    # the base's F2 is F5 on the lower side (renumbered by a merge there), reworded on the higher
    base = ledger(doc("Lives in Lyon", "Has a cat named Mimi"), ["F1", "F2"])
    a = side(A, doc("Lives in Lyon", "Owns a red bike", "Has a cat named Mimi"), ["F1", "F2", "F5"])
    b = side(B, doc("Lives in Lyon", "Has a cat named Mimi, a tabby"), ["F1", "F2"])
    m = both(base, a, b)
    assert sorted(t for _i, t in facts_of(m)) == ["Has a cat named Mimi, a tabby", "Lives in Lyon", "Owns a red bike"]
    assert m.conflicts == []
    # two different rewordings of the renumbered fact are still a conflict, nothing lost
    b2 = side(B, doc("Lives in Lyon", "Has a dog named Rex"), ["F1", "F2"])
    a2 = side(A, doc("Lives in Lyon", "Owns a red bike", "Has a cat named Mimi, who is grey"), ["F1", "F2", "F5"])
    m2 = both(base, a2, b2)
    assert "Owns a red bike" in [t for _i, t in facts_of(m2)]
    assert [c["conflict"] for c in m2.conflicts] == ["reworded"]


def test_a_fact_renumbered_by_a_merge_then_reworded_is_still_that_fact() -> None:
    # as above, but the low device rewords the high device's fact after its merge renumbered it
    # (F2 -> F5): the words no longer find it, the merges' renumbering does
    low, mid = A, B
    dag, _mb, mc = _three_way_renumbered("Has a cat named Mimi")
    c2_text = mc.text.replace("Has a cat named Mimi", "Has a grey cat called Mimi")
    dag.add(node("c2", low, ["mc"], c2_text, mc.ledger.ids, mc.ledger.next))
    # and the middle device removes it (its F3)
    dag.add(node("b2", mid, ["mb"], doc("Lives in Lyon", "Bakes bread on Fridays"), ["F1", "F2"], 4,
                 dropped={"F3": "Mimi was given away"}))
    results = set()
    for heads in (["b2", "c2"], ["c2", "b2"]):
        m = merge_nodes(dag, heads)
        assert sorted(t for _i, t in facts_of(m)) == sorted(
            ["Lives in Lyon", "Has a grey cat called Mimi", "Bakes bread on Fridays", "Owns a red bike",
             "Speaks Italian", "Likes jazz"])
        # removed on one side, reworded on the other: kept and held for review; the bike is no rewording
        assert [(c["conflict"], c["text"]) for c in m.conflicts] == [("removed-reworded", "Has a grey cat called Mimi")]
        results.add((m.text, tuple(m.ledger.ids)))
    assert len(results) == 1
