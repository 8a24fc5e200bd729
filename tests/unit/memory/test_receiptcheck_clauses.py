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

from tests.unit.memory.receipts_heldout import heldout_c, invented_c


def _check(fact: str, quote: str, *said: str):  # type: ignore[no-untyped-def]
    return check(fact, Receipt((len(said),), quote), [("user", t) for t in said])


# --- the past and the present ----------------------------------------------------------

@pytest.mark.parametrize(("fact", "quote", "kind"), [
    ("Is married", "I was married", "held"),
    ("Is married", "I was married for ten years", "held"),
    ("Is married", "I'm married", "stated"),
    ("Is married", "I am married", "stated"),
    ("Was married", "I was married", "stated"),
    ("Is divorced", "I'm divorced now", "stated"),
    ("Is retired", "I'm retired", "stated"),
])
def test_an_ed_word_after_is_says_how_it_is_now(fact: str, quote: str, kind: str) -> None:
    got = _check(fact, quote, quote)
    assert got.kind == kind, got
    if kind == "held":
        assert got.reason == "the quote says 'was', the fact says it is so now"
