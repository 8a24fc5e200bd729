"""Holes found in the receipt check after the corpus passed, each closed against a hostile model.

The model here rephrases, reformats as ``key: value``, merges two messages, splits one, switches
to Chinese and invents; each case is what it sends and what the check must decide.
"""

from __future__ import annotations

import pytest
from memtray.core.memory.receiptcheck import check
from memtray.core.memory.receipts import Receipt


def _check(fact: str, quote: str, *said: str, cite: tuple[int, ...] = (1,), similarity: float | None = None,
           roles: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    msgs = [(roles[i] if i < len(roles) else "user", t) for i, t in enumerate(said)]
    sim = None if similarity is None else (lambda a, b: similarity)
    return check(fact, Receipt(cite, quote), msgs, similarity=sim)


# --- anchors come from the quote, or the quote's own message through a word that stands for them ---

@pytest.mark.parametrize(("fact", "quote", "said", "cite"), [
    # the name is in the message, in another sentence the quote does not refer to
    ("Mia loves drawing", "I love drawing", ("My sister Mia lives in Oslo. I love drawing.",), (1,)),
    ("Daughter: Mia (loves drawing)", "I love drawing", ("My daughter is Mia. I love drawing.",), (1,)),
    # the place is in another message the receipt also cites
    ("Keeps bees in Oslo", "I keep bees", ("My colleague Priya moved to Oslo.", "I keep bees"), (1, 2)),
    ("Keeps bees in Oslo", "I keep bees … in the garden",
     ("My colleague Priya moved to Oslo.", "I keep bees in the garden"), (1, 2)),
    # a number and a date from elsewhere in the message
    ("Loves hiking with 3 kids", "I love hiking", ("I have 3 kids. I love hiking.",), (1,)),
    ("Started running in 2019", "I started running", ("We married in 2019. I started running.",), (1,)),
    # Chinese: the name of the sister is no name of the user's drawing
    ("Lena likes drawing", "我喜欢画画", ("我妹妹叫Lena。我喜欢画画",), (1,)),
])
def test_an_anchor_from_outside_the_quote_holds_the_fact(fact: str, quote: str, said: tuple[str, ...],
                                                        cite: tuple[int, ...]) -> None:
    got = _check(fact, quote, *said, cite=cite)
    assert got.kind == "held" and "the quote does not" in got.reason, got


@pytest.mark.parametrize(("fact", "quote", "said"), [
    ("Mia loves drawing", "She loves drawing", "My daughter Mia started school. She loves drawing."),
    ("Tom is a chef", "He is a chef", "My brother Tom lives in Leeds. He is a chef."),
    ("Has lived in Lyon since 2019", "I have lived there since then", "We moved to Lyon in 2019. I have lived there since then."),
])
def test_a_word_that_stands_for_an_anchor_of_its_message_may_take_it(fact: str, quote: str, said: str) -> None:
    assert _check(fact, quote, said).kind == "stated"
