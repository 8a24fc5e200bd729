"""The receipt check, fact by fact over the corpus (tests/unit/memory/receipts_corpus.py).

Every fact the user said, reworded with a good receipt, must be written (at most 2 % held
overall, counted); no invented or altered fact may be written as stated; a fact only the
assistant's words support is ``inferred`` or held, never ``stated``.
"""

from __future__ import annotations

import pytest
from memtray.core.memory.receiptcheck import Check, check, normalize
from memtray.core.memory.receipts import Receipt, read_receipt

from tests.unit.memory.receipts_corpus import Case, invented, said

SAID = said()
INVENTED = invented()


def _run(case: Case) -> Check:
    receipt = None
    if case.receipt is not None:
        receipt = read_receipt({"messages": list(case.receipt[0]), "quote": case.receipt[1]})
    return check(case.fact, receipt, case.messages, known=[case.old] if case.old else [])


def test_the_corpus_is_as_large_as_issue_27_asks() -> None:
    assert len(SAID) >= 120
    assert len(INVENTED) >= 60
    kinds = {c.kind for c in SAID}
    assert {"paraphrase", "keyvalue", "merge", "codeswitch", "numbers"} <= kinds
    assert {"none", "name", "number", "date", "place", "inferred"} <= {c.kind for c in INVENTED}


@pytest.mark.parametrize("case", INVENTED, ids=[c.id for c in INVENTED])
def test_an_invented_fact_is_never_written_as_stated(case: Case) -> None:
    got = _run(case)
    assert got.kind != "stated", got
    if case.kind != "inferred":
        assert got.kind == "held" and got.reason, got


@pytest.mark.parametrize("case", SAID, ids=[c.id for c in SAID])
def test_a_fact_the_user_said_is_written_or_counted(case: Case) -> None:
    got = _run(case)
    assert got.kind in ("stated", "held")
    if got.kind == "held":
        assert got.reason  # a held one says why; the count is checked below
        pytest.xfail(f"held: {got.reason}")


def test_false_holds_are_at_most_two_percent() -> None:
    held = [(c.fact, r.reason) for c in SAID if (r := _run(c)).kind != "stated"]
    assert len(held) <= len(SAID) * 2 // 100, held
    assert [c for c in INVENTED if _run(c).kind == "stated"] == []


@pytest.mark.parametrize(("fact", "quote", "message"), [
    ("Is a hobby beekeeper", "keeps bees in the garden", "Sam keeps bees in the garden."),
    ("Wants concise replies", "Sam prefers short answers", "Sam prefers short answers, please."),
    ("Is a cellist", "Sam plays the cello", "Sam plays the cello"),
    ("Wake-up time: 5 am", "wakes up at 5 am", "Sam wakes up at 5 am"),
])
def test_the_four_facts_of_issue_27_are_written(fact: str, quote: str, message: str) -> None:
    got = check(fact, Receipt((1,), quote), [("user", message)])
    assert got == Check("stated", "", (1,), quote)


@pytest.mark.parametrize(("fact", "quote", "reason"), [
    ("Daughter Mia starts school", "My daughter Greta starts school", "the fact says 'Mia', the quote says 'Greta'"),
    ("Wake-up time: 6 am", "I wake up at 5 am", "the fact says '6', the quote says '5'"),
    ("Keeps bees", "I keep wasps", "the quote is not in message #1"),
    ("Owns a bakery", "I wake up at 5 am", "the quote does not say 'Owns', 'bakery'"),
])
def test_a_held_fact_says_truly_why(fact: str, quote: str, reason: str) -> None:
    messages = [("user", "My daughter Greta starts school. I wake up at 5 am")]
    assert check(fact, Receipt((1,), quote), messages).reason == reason


def test_no_receipt_and_a_bad_one_are_held_with_their_reason() -> None:
    msgs = [("user", "I keep bees")]
    assert check("Keeps bees", None, msgs) == Check("held", "no receipt")
    bad = read_receipt({"messages": [1]})
    assert check("Keeps bees", bad, msgs).reason == "the receipt has no quote"
    assert check("Keeps bees", Receipt((3,), "I keep bees"), msgs).reason == (
        "the receipt cites message #3, which is not in this conversation (it has 1)")


def test_a_quote_under_the_wrong_number_counts_where_it_is() -> None:
    msgs = [("user", "hi"), ("user", "I keep bees")]
    assert check("Keeps bees", Receipt((1,), "I keep bees"), msgs) == Check("stated", "", (2,), "I keep bees")


def test_the_assistants_words_make_a_fact_inferred() -> None:
    msgs = [("user", "what to plant?"), ("assistant", "As you keep bees, lavender."), ("user", "I keep bees, yes")]
    assert check("Keeps bees", Receipt((2,), "you keep bees"), msgs[:2]).kind == "inferred"
    # the user said it too: stated
    assert check("Keeps bees", Receipt((2, 3), "keep bees"), msgs).kind == "stated"


def test_an_update_that_says_no_more_than_the_old_wording_needs_no_receipt() -> None:
    assert check("Is a hobby beekeeper", None, [], known=["Keeps bees in the garden"]).kind == "stated"
    assert check("Keeps bees in Norway", None, [], known=["Keeps bees in the garden"]).reason == "no receipt"


def test_an_anchor_the_quote_leaves_out_may_come_from_its_message_unless_the_quote_names_another() -> None:
    msgs = [("user", "My daughter Mia started school. She loves drawing.")]
    assert check("Mia loves drawing", Receipt((1,), "She loves drawing"), msgs).kind == "stated"
    assert check("Lena loves drawing", Receipt((1,), "She loves drawing"), msgs).kind == "held"
    msgs = [("user", "My sister is Mia. My daughter Greta loves drawing.")]
    got = check("Mia loves drawing", Receipt((1,), "My daughter Greta loves drawing"), msgs)
    assert got.reason == "the fact says 'Mia', the quote says 'Greta'"


def test_an_embedding_similarity_forgives_one_word_never_an_anchor() -> None:
    msgs = [("user", "I go running every morning")]
    r = Receipt((1,), "I go running every morning")
    assert check("Runs every morning on trails", r, msgs).kind == "held"
    assert check("Runs every morning on trails", r, msgs, similarity=lambda a, b: 0.9).kind == "stated"
    assert check("Runs every morning in Oslo", r, msgs, similarity=lambda a, b: 0.99).kind == "held"
    assert check("Runs every morning on trails", r, msgs, similarity=lambda a, b: 0.5).kind == "held"
    assert check("Runs every morning on trails", r, msgs, similarity=lambda a, b: None).kind == "held"


@pytest.mark.parametrize(("a", "b"), [
    ("5 am", "5:00"), ("five AM", "05:00 a.m."), ("5:30pm", "17:30"), ("２０２４－０３－０５", "2024 march 5"),
    ("3月5日", "march 5日"), ("twenty-five", "25"), ("1,200", "1200"), ("noon", "12:00"), ("3rd", "3"),
])
def test_numbers_times_and_dates_are_one_form(a: str, b: str) -> None:
    assert normalize(a).split() == normalize(b).split()


def test_a_malformed_message_list_never_raises() -> None:
    assert check("Keeps bees", Receipt((1,), "bees"), []).kind == "held"
    assert check("", Receipt((1,), "bees"), [("user", "bees")]).reason == "the fact says nothing the quote could support"


@pytest.mark.parametrize(("said", "quote", "fact"), [
    ("I don't smoke.", "smoke", "Smokes"),
    ("I never drink alcohol.", "drink alcohol", "Drinks alcohol"),
    ("I can't swim.", "swim", "Can swim"),
    ("I have no car.", "car", "Has a car"),
    ("我不喜欢香菜", "喜欢香菜", "喜欢香菜"),
    # the quote slips the "not" it was cut across
    ("I definitely do not really own any sort of yacht whatsoever.",
     "I definitely do really own any sort of yacht whatsoever", "Owns a yacht"),
])
def test_a_quote_that_leaves_out_the_not_before_it_holds_nothing(said: str, quote: str, fact: str) -> None:
    got = check(fact, Receipt((1,), quote, None), [("user", said)])
    assert got.kind == "held" and "not" in got.reason


def test_a_not_in_the_clause_before_does_not_deny_the_quote() -> None:
    got = check("Plays the cello", Receipt((1,), "I play the cello", None),
                [("user", "I'm not sure about Thursday, but I play the cello.")])
    assert got.kind == "stated"
    got = check("Works as a carpenter in Riga", Receipt((1,), "I work as a carpenter in Riga", None),
                [("user", "I'm not a poodle. I work as a carpenter in Riga.")])  # another sentence's "not"
    assert got.kind == "stated"
