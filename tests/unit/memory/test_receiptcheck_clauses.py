"""The receipt check reads a quote clause by clause (the review of issue 27's last round).

A "not", a question or a past in *another* clause than the one that says the fact does not
hold the fact ("I don't eat meat, but I love fish" -> "Loves fish"); in the clause that says
it, it still does ("Eats meat" from the same words). "I was married" is not "Is married". A
name as the subject is the user when the user goes by it, and someone else when the
conversation says so or the user goes by another name.
"""

from __future__ import annotations

import pytest
from memtray.core.memory.receiptcheck import check
from memtray.core.memory.receipts import Receipt

from tests.unit.memory.receipts_heldout import (
    altered_d,
    altered_e,
    heldout_c,
    heldout_d,
    heldout_e,
    invented_c,
)


def _check(fact: str, quote: str, *said: str):  # type: ignore[no-untyped-def]
    return check(fact, Receipt((len(said),), quote), [("user", t) for t in said])


# --- the past and the present ----------------------------------------------------------

@pytest.mark.parametrize(("fact", "quote", "kind"), [
    ("Is married", "I was married", "held"),
    ("Is married", "I was married for ten years", "held"),
    ("Is married", "I'm married", "stated"),
    ("Is married", "I am married", "stated"),
    ("Married", "I was married", "held"),
    ("Married", "I'm married", "stated"),
    ("Divorced", "I was married, we divorced in 2020", "stated"),
    ("Was married", "I was married", "stated"),
    ("Is divorced", "I'm divorced now", "stated"),
    ("Is retired", "I'm retired", "stated"),
])
def test_an_ed_word_after_is_says_how_it_is_now(fact: str, quote: str, kind: str) -> None:
    got = _check(fact, quote, quote)
    assert got.kind == kind, got
    if kind == "held":
        assert got.reason == "the quote says 'was', the fact says it is so now"


# --- "not" and "?" are read in the clause that says the fact --------------------------------

@pytest.mark.parametrize(("fact", "quote"), [
    ("Loves fish", "I don't eat meat, but I love fish"),
    ("Eats fish", "I don't eat meat, but I eat fish"),
    ("Cycles everywhere", "I don't have a car, I cycle everywhere"),
    ("Cycles everywhere", "I never learned to drive, so I cycle everywhere"),
    ("Likes thrillers", "I can't stand horror films, though I love thrillers"),
    ("Works out every day", "I no longer smoke, and I go to the gym every day"),
    ("Doesn't eat meat", "I don't eat meat, but I love fish"),
    ("Plays the cello", "Can you help? I play the cello"),
    ("Plays the cello", "I play the cello. Can you help?"),
    ("Plays the cello", "I play the cello, can you help?"),
    ("Is learning Italian", "I'm learning Italian, do you know any good apps?"),
    ("Works as a video editor", "Should I buy a new laptop? I work as a video editor"),
    ("Lives in Porto", "Do you think I should move to Lisbon? I live in Porto"),
    ("Is a baker", "I was a teacher, now I'm a baker"),
])
def test_a_not_or_a_question_of_another_clause_does_not_hold_the_fact(fact: str, quote: str) -> None:
    got = _check(fact, quote, quote)
    assert got.kind == "stated", got


@pytest.mark.parametrize(("fact", "quote", "reason"), [
    ("Eats meat", "I don't eat meat, but I love fish", "the quote says 'not', the fact does not"),
    ("Eats meat", "I love fish, but I don't eat meat", "the quote says 'not', the fact does not"),
    ("Avoids fish", "I don't eat meat, but I love fish", "the fact says 'not', the quote does not"),
    ("Is a nurse", "I'm not a nurse, but my wife is", "the quote says 'not', the fact does not"),
    ("Eats fish", "I don't eat meat, fish or eggs", "the quote says 'not', the fact does not"),
    ("Plays the violin", "I play the cello. Should I learn the violin?", "the quote says 'Should', the fact says it is so"),
    ("Lives in Lisbon", "Do you think I should move to Lisbon? I live in Porto",
     "the quote says 'should', the fact says it is so"),
    ("Is a doctor", "I'm a nurse, but should I become a doctor?", "the quote says 'should', the fact says it is so"),
    ("Is learning Rust", "Is it worth learning Rust, for someone like me?", "the quote asks, the fact says it is so"),
    ("Keeps bees", "Is it hard to keep bees? I'm thinking about it", "the quote asks, the fact says it is so"),
    ("Plays the cello", "I play the cello, is the cello hard to learn?", "the quote asks, the fact says it is so"),
    ("Plays the cello", "I used to play the cello, now I play guitar", "the quote says 'used to', the fact says it is so now"),
])
def test_a_not_or_a_question_of_the_clause_that_says_the_fact_still_holds_it(fact: str, quote: str,
                                                                            reason: str) -> None:
    got = _check(fact, quote, quote)
    assert got.kind == "held" and got.reason == reason, got


# --- a name as the subject: the user's own, or someone else's ---------------------------------

@pytest.mark.parametrize(("fact", "quote", "said"), [
    ("Plays the cello", "Sam plays the cello", ("Sam plays the cello.",)),  # issue 27: no "I", no other name
    ("Plays the cello", "Sam plays the cello", ("I'm Sam. Sam plays the cello, for the record.",)),
    ("Plays the cello", "Sam plays the cello", ("My name is Sam.", "Sam plays the cello, by the way.")),
    ("Plays the cello", "I play cello", ("Sam here, I play cello",)),
    ("Works with Mia", "I work with Mia now", ("Greta left, I work with Mia now.",)),
    ("Is a beginner at chess", "I'm a beginner at chess", ("Quick question first: I'm a beginner at chess.",)),
    ("Went hiking", "Lena and I went hiking", ("Lena and I went hiking.",)),
    ("Learns Spanish", "Duolingo helps me learn Spanish", ("Duolingo helps me learn Spanish, I practise daily.",)),
    ("Sam plays the cello", "Sam plays the cello", ("My friend Sam is staying with us. Sam plays the cello.",)),
    ("Uses Python at work", "Python is the language I use at work", ("Python is the language I use at work",)),
])
def test_a_name_the_user_goes_by_or_that_names_nobody_else_is_the_user(fact: str, quote: str,
                                                                     said: tuple[str, ...]) -> None:
    got = _check(fact, quote, *said)
    assert got.kind == "stated", got


@pytest.mark.parametrize(("fact", "quote", "said", "name"), [
    ("Plays the cello", "Ana plays the cello", ("I'm Ola. Ana plays the cello.",), "Ana"),
    ("Plays the cello", "plays the cello", ("I'm Ola. Ana plays the cello.",), "Ana"),
    ("Plays the cello", "Sam plays the cello", ("My friend Sam is staying with us. Sam plays the cello.",), "Sam"),
    ("Plays the cello", "Sam plays the cello", ("Sam is my son.", "Sam plays the cello."), "Sam"),
    ("Plays the cello", "Sam plays the cello", ("Sam plays the cello, he is my neighbour.",), "Sam"),
    ("Runs marathons", "Tom runs marathons", ("Tom runs marathons. I prefer swimming.",), "Tom"),
    ("Is a nurse", "Ana is a nurse", ("Call me Ola.", "Ana is a nurse."), "Ana"),
])
def test_a_name_of_someone_else_as_the_subject_is_not_the_user(fact: str, quote: str, said: tuple[str, ...],
                                                                name: str) -> None:
    got = _check(fact, quote, *said)
    assert got.kind == "held" and got.reason == f"the quote is about '{name}', the fact is about the user", got


@pytest.mark.parametrize(("fact", "quote", "kind"), [
    ("Is allergic to dogs", "I'm allergic to cats, but I love dogs", "held"),
    ("Loves cats", "I'm allergic to dogs, but I love cats", "stated"),
    ("Is allergic to dogs", "I love dogs but I'm allergic to them", "stated"),
    ("Has a cat and a dog", "I have a cat and a dog", "stated"),
])
def test_a_word_of_one_clause_is_not_put_onto_the_opposite_of_another(fact: str, quote: str, kind: str) -> None:
    got = _check(fact, quote, quote)
    assert got.kind == kind, got
    if kind == "held":
        assert got.reason == "the fact says 'dogs', the quote says 'cats' there"


# --- the third held-out batch (tests/unit/memory/receipts_heldout.py) ---------------------------

def _run(case):  # type: ignore[no-untyped-def]
    assert case.receipt is not None
    return check(case.fact, Receipt(case.receipt[0], case.receipt[1]), case.messages)


@pytest.mark.parametrize("case", invented_c(), ids=[c.fact + " <- " + c.receipt[1] for c in invented_c() if c.receipt])
def test_no_fact_of_the_third_batch_that_the_message_does_not_say_is_written(case) -> None:  # type: ignore[no-untyped-def]
    assert _run(case).kind == "held"


def test_false_holds_of_the_third_batch_do_not_grow() -> None:
    # bench/receipt_holds.py prints these; on the check before this batch's changes: 18 of 40
    held = [(c.fact, r.reason) for c in heldout_c() if (r := _run(c)).kind != "stated"]
    assert held == []


@pytest.mark.parametrize(("batch", "most"), [(heldout_d, 9), (heldout_e, 13)], ids=["D", "E"])
def test_false_holds_of_the_plain_batches_do_not_grow(batch, most: int) -> None:  # type: ignore[no-untyped-def]
    # before the light verbs, "twice" and the word groups: D 21 of 40, E 15 of 30
    held = [(c.fact, r.reason) for c in batch() if (r := _run(c)).kind != "stated"]
    assert len(held) <= most, held


@pytest.mark.parametrize("case", altered_d() + altered_e(), ids=[c.fact for c in altered_d() + altered_e()])
def test_no_lookalike_of_the_plain_batches_is_written(case) -> None:  # type: ignore[no-untyped-def]
    assert _run(case).kind != "stated"


def test_the_name_memory_gives_the_user_is_the_user_and_another_is_not() -> None:
    from memtray.core.memory import facts
    from memtray.core.memory.proposal import apply_reply
    from memtray.core.memory.subjects import names_in_memory

    said = ["Sam plays the cello, I practise every day.", "Ana plays the violin, I love listening."]

    def add(memory: str, text: str, n: int, quote: str) -> str:
        current = facts.attach(facts.Ledger(()), memory)
        out = apply_reply(current, memory, memory_update=None, removed=[], messages=said, edits=[
            {"op": "add", "text": text, "receipt": {"messages": [n], "quote": quote}}])
        return "written" if f"- {text}" in out.memory else out.flagged[0]["reason"]

    sam = "## Me\n- Name: Sam\n- Lives in Graz\n"
    assert names_in_memory(sam) == {"sam"} and names_in_memory("- Dog's name: Rex\n- Named the dog Rex") == set()
    # without the name, "I" in the message makes Sam someone else; memory says the user is Sam
    assert add("## Me\n- Lives in Graz\n", "Plays the cello", 1, "Sam plays the cello") == (
        "the quote is about 'Sam', the fact is about the user")
    assert add(sam, "Plays the cello", 1, "Sam plays the cello") == "written"
    assert add(sam, "Plays the violin", 2, "Ana plays the violin") == (
        "the quote is about 'Ana', the fact is about the user")
