"""Word rules of the receipt check added for the held-out paraphrases (issue 27): light verbs,
"twice", words that say "not" on their own; each with the lookalike it must still hold."""

from __future__ import annotations

import pytest
from memtray.core.memory.receiptcheck import check
from memtray.core.memory.receipts import Receipt


def _check(fact: str, quote: str):  # type: ignore[no-untyped-def]
    return check(fact, Receipt((1,), quote), [("user", quote)])


@pytest.mark.parametrize(("fact", "quote", "reason"), [
    # a light verb is said by the thing it does...
    ("Goes jogging each morning", "I jog every morning", ""),
    ("Attends church every Sunday", "I go to church on Sundays", ""),
    ("Plays the cello", "I love playing the cello", ""),
    # ...but never by a liking or a hating of it, nor on its own
    ("Plays tennis", "I hate tennis", "the quote says 'hate', the fact says 'Plays'"),
    ("Uses Linux", "I hate Linux", "the quote says 'hate', the fact says 'Uses'"),
    ("Goes swimming", "I hate swimming", "the quote says 'hate', the fact says 'Goes'"),
    ("Goes jogging", "I love jogging", "the quote says 'love', the fact says 'Goes'"),
    ("Goes to Paris", "I live in Paris", "the quote does not say 'Goes'"),
    # "twice" is two times
    ("Walks the dog two times daily", "I walk my dog twice a day", ""),
    ("Walks the dog 3 times daily", "I walk my dog twice a day", "the fact says '3', the quote says '2'"),
    # "unable" says "not", as "can't" does
    ("Unable to swim", "I can't swim", ""),
    ("Unable to swim", "I can swim", "the fact says 'not', the quote does not"),
])
def test_a_word_rule_and_its_lookalike(fact: str, quote: str, reason: str) -> None:
    got = _check(fact, quote)
    assert (got.kind, got.reason) == (("held", reason) if reason else ("stated", "")), got


@pytest.mark.parametrize(("fact", "quote", "reason"), [
    # a hating is never left out of the fact...
    ("Runs", "I hate running", "the quote says 'hate', the fact does not"),
    ("Is vegetarian", "I hate meat", "the quote says 'hate', the fact does not"),
    # ...while a fact that says it, or says "not" its own way, or a liking, is read as before
    ("Dislikes running", "I hate running", ""),
    ("Avoids dairy products", "I avoid dairy", ""),
    ("Hikes in the Alps", "I love hiking in the Alps", ""),
    ("Likes thrillers", "I can't stand horror films, though I love thrillers", ""),
    ("Likes running", "I hate running", "the fact says 'Likes', the quote says 'hate'"),
])
def test_a_hating_the_fact_leaves_out_holds_it(fact: str, quote: str, reason: str) -> None:
    got = _check(fact, quote)
    assert (got.kind, got.reason) == (("held", reason) if reason else ("stated", "")), got


@pytest.mark.parametrize(("fact", "quote", "kind"), [
    # words of one meaning (resources/corpus/paraphrases.txt), each with a lookalike
    ("Wears spectacles", "I wear glasses", "stated"),
    ("Wears contact lenses", "I wear glasses", "held"),
    ("Plays soccer on Sundays", "I play football on Sundays", "stated"),
    ("Plays rugby on Sundays", "I play football on Sundays", "held"),
    ("Fears spiders", "I'm afraid of spiders", "stated"),
    ("Fears dogs", "I'm afraid of spiders", "held"),
    ("Fears spiders", "I'm not afraid of spiders", "held"),
    ("Struggles with maths", "I'm terrible at maths", "stated"),
    ("Is good at maths", "I'm terrible at maths", "held"),
    ("Is bad at maths", "I'm not bad at maths", "held"),
    ("Has no siblings", "I'm an only child", "stated"),
    ("Has siblings", "I'm an only child", "held"),
    ("Is an early riser", "I'm a morning person", "stated"),
    ("Is an early riser", "I'm a night owl", "held"),
    ("Holds a doctorate in physics", "I have a PhD in physics", "stated"),
    ("Has a master's degree in physics", "I have a PhD in physics", "held"),
    ("Lives by the coast", "I live near the sea", "stated"),
    ("Lives in the mountains", "I live near the sea", "held"),
    ("Eats oatmeal for breakfast", "I usually have oatmeal for breakfast", "stated"),
    ("Eats breakfast", "I never eat breakfast", "held"),
    ("Wants replies in Spanish", "I need my answers in Spanish", "stated"),
    ("Wants replies in French", "I need my answers in Spanish", "held"),
])
def test_words_of_one_meaning_and_their_lookalikes(fact: str, quote: str, kind: str) -> None:
    assert _check(fact, quote).kind == kind
