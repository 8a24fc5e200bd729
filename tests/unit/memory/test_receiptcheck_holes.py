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


# --- about the user, as so, now: who the quote is about and how it says it ---

@pytest.mark.parametrize(("fact", "quote", "said"), [
    # someone else's fact made the user's: paraphrase, key: value, a quote cut after the subject,
    # a subject said before "I think", a merge, Chinese, a pet
    ("Lives in Oslo", "my sister lives in Oslo", "my sister lives in Oslo"),
    ("Location: Oslo", "lives in Oslo", "I think my sister lives in Oslo."),
    ("Owns a yacht", "My friend Ada owns a yacht", "My friend Ada owns a yacht."),
    ("Works as a nurse", "works at the hospital as a nurse", "My mum works at the hospital as a nurse."),
    ("Loves drawing", "She loves drawing", "My daughter Mia started school. She loves drawing."),
    ("Lives in Shanghai", "我妹妹住在上海", "我妹妹住在上海"),
    ("住在上海", "住在上海", "我妹妹住在上海"),
    ("Loves the beach", "loves the beach", "Our dog loves the beach!"),
    # a question, a maybe, a wish or a plan made a plain fact
    ("Learns Rust", "learn Rust", "should I learn Rust?"),
    ("Is learning Rust", "should I learn Rust", "should I learn Rust"),
    ("Programming language: Rust", "learn Rust", "Do you think I should learn Rust?"),
    ("Moving to Berlin", "maybe I'll move to Berlin", "maybe I'll move to Berlin"),
    ("Location: Berlin", "move to Berlin", "Maybe I'll move to Berlin next year."),
    ("Moves to Berlin", "I'll move to Berlin", "If I get the job, I'll move to Berlin."),
    ("Learns Rust", "learn Rust", "I want to learn Rust"),
    ("Learns Rust", "我想学Rust", "我想学Rust"),
    ("Owns a dog", "get a dog", "We might get a dog."),
    ("Starts a new job", "I may start a new job", "I may start a new job."),
    # the past made the present
    ("Smokes", "I used to smoke", "I used to smoke"),
    ("Smoker", "smoke", "I used to smoke, ten a day."),
    ("Lives in Paris", "I lived in Paris", "I lived in Paris for years."),
    ("Is a smoker", "I was a smoker", "I was a smoker"),
    ("抽烟", "我以前抽烟", "我以前抽烟"),
])
def test_a_fact_that_says_it_otherwise_than_the_quote_is_held(fact: str, quote: str, said: str) -> None:
    got = _check(fact, quote, said)
    assert got.kind == "held", got
    assert any(w in got.reason for w in ("is about", "asks", "says it is so")), got


@pytest.mark.parametrize(("fact", "quote", "said"), [
    ("Sister lives in Oslo", "my sister lives in Oslo", "my sister lives in Oslo"),
    ("Has a sister in Oslo", "my sister lives in Oslo", "my sister lives in Oslo"),
    ("Lives in Oslo", "My sister and I live in Oslo", "My sister and I live in Oslo."),
    ("Lives in Oslo", "I live in Oslo", "My sister lives in Bergen, but I live in Oslo."),
    ("Lives in Oslo", "I live in Oslo", "I live in Oslo, should I move?"),
    ("Lives in Oslo", "I live in Oslo now", "Maybe next year, but I live in Oslo now."),
    ("Might move to Berlin", "maybe I'll move to Berlin", "maybe I'll move to Berlin"),
    ("Wants to learn Rust", "I want to learn Rust", "I want to learn Rust"),
    ("Used to smoke", "I used to smoke", "I used to smoke"),
    ("Former smoker", "I used to smoke", "I used to smoke"),
    ("Lived in Paris", "I lived in Paris", "I lived in Paris"),
    ("Born in Cork", "I was born in Cork", "I was born in Cork"),
    ("Has lived in Tokyo for 5 years", "I've lived in Tokyo for five years", "I've lived in Tokyo for five years"),
    ("Reply style: bullet points", "I'd like replies in bullet points", "I'd like replies in bullet points"),
    ("Wants answers in English", "I'd rather you answer in English", "I'd rather you answer in English"),
    ("Has a cat named Miso", "our kitten Miso", "our kitten Miso just knocked over my coffee"),
    ("Partner Alex is a nurse", "my partner Alex is a nurse", "my partner Alex is a nurse"),
    ("Daughter: Mia", "我女儿叫 Mia", "我女儿叫 Mia"),
    ("Starts a new job in May", "In May I start a new job", "In May I start a new job."),  # the month
    ("Lives in Tokyo", "I've lived in Tokyo for five years", "I've lived in Tokyo for five years"),
    ("Lives in Lyon", "I moved to Lyon", "I moved to Lyon last month."),
    ("Trip: Ghent, August", "I'm planning a trip to Ghent in August", "I'm planning a trip to Ghent in August."),
])
def test_a_fact_that_says_it_as_the_quote_does_is_written(fact: str, quote: str, said: str) -> None:
    assert _check(fact, quote, said).kind == "stated"


@pytest.mark.parametrize(("fact", "quote", "said", "cite"), [
    # merged: the user's sentence and the sister's, the fact takes the sister's part as the user's
    ("Lives in Oslo and works at a bank", "I live in Oslo … my sister works at a bank",
     ("I live in Oslo.", "my sister works at a bank"), (1, 2)),
    ("Lives in Oslo", "I live in Bergen … my sister lives in Oslo",
     ("I live in Bergen.", "my sister lives in Oslo"), (1, 2)),
    # split: one message, two sentences; the model keeps the second as the user's
    ("Is a chef", "He is a chef", ("I live in Leeds. My brother Tom is too. He is a chef.",), (1,)),
])
def test_a_merge_takes_nothing_someone_else_said_for_the_users(fact: str, quote: str, said: tuple[str, ...],
                                                              cite: tuple[int, ...]) -> None:
    got = _check(fact, quote, *said, cite=cite)
    assert got.kind == "held" and ("of the user" in got.reason or "is about" in got.reason), got


def test_a_merge_that_names_the_other_person_is_written() -> None:
    got = _check("Lives in Oslo; sister works at a bank", "I live in Oslo … my sister works at a bank",
                 "I live in Oslo.", "my sister works at a bank", cite=(1, 2))
    assert got.kind == "stated", got


# --- opposites: an embedding model puts "likes" next to "hates"; the word list does not ---

@pytest.mark.parametrize(("fact", "quote", "said"), [
    ("Likes cilantro", "I hate cilantro", "I hate cilantro, it tastes like soap"),
    ("Cilantro: loves it", "I hate cilantro", "I hate cilantro"),  # key: value
    ("Is vegetarian", "I eat meat", "I eat meat most days"),
    ("喜欢香菜", "我讨厌香菜", "我讨厌香菜"),  # Chinese
    ("Prefers long answers", "please keep answers short", "please keep answers short"),
    ("Runs every evening", "I run every morning", "I run every morning"),
    ("Has a dog", "I have a cat", "I have a cat"),
    ("Drinks tea every day", "I drink coffee every day", "I drink coffee every day"),
    ("Is outgoing", "I'm an introvert", "I'm an introvert"),
    ("Is an early riser", "I'm a night owl", "I'm a night owl"),
    # a merge: the opposite is in one of the two messages quoted
    ("Keeps bees and likes cilantro", "I keep bees … I hate cilantro", "I keep bees. I hate cilantro."),
])
def test_the_opposite_of_the_quote_is_held_however_close_the_embedding(fact: str, quote: str, said: str) -> None:
    got = _check(fact, quote, said, similarity=0.97)
    assert got.kind == "held" and "the quote says" in got.reason, got


@pytest.mark.parametrize(("fact", "quote", "said"), [
    ("Likes cilantro", "I love cilantro", "I love cilantro"),
    ("Is vegetarian", "I don't eat meat", "I don't eat meat"),
    ("Doesn't eat meat", "I'm vegetarian", "I'm vegetarian"),
    ("Dislikes cilantro", "I can't stand cilantro", "I can't stand cilantro"),
])
def test_a_paraphrase_is_no_opposite(fact: str, quote: str, said: str) -> None:
    assert _check(fact, quote, said, similarity=0.97).kind == "stated"


# --- plain paraphrases: fewer false holds, by rules for kinds of wording, not case by case ---

@pytest.mark.parametrize(("fact", "quote", "kind"), [
    # a doer is the doing ("worker" / "work"), never a shorter word that only looks alike
    ("Remote worker for a Berlin company", "I work remotely for a company in Berlin", "stated"),
    ("Horse rider", "I ride horses", "stated"),
    ("Writes letters", "let me write", "held"),
    # a word that says "not" without one agrees with a quote's "not", and only with one
    ("Avoids coffee after 3 pm", "I don't drink coffee after 3 pm", "stated"),
    ("Avoids coffee", "I drink coffee", "held"),
    ("Is gluten intolerant", "I can't eat gluten", "stated"),
    ("Is gluten intolerant", "I eat gluten", "held"),
    ("Skips breakfast", "I never eat breakfast", "stated"),
    # "a" is one, and midnight is 12 am
    ("Owns two cats and one dog", "I've got two cats and a dog", "stated"),
    ("Owns one dog", "I have two dogs", "held"),
    ("Bedtime: 12 am", "I go to bed at midnight", "stated"),
    ("Bedtime: 1 am", "I go to bed at midnight", "held"),
    # a light verb or a hedge on a number frames what the quote says
    ("Follows a vegan diet", "I'm a vegan", "stated"),
    ("Sleeps around 6 hours per night", "I sleep six hours a night", "stated"),
    ("Sleeps around 8 hours per night", "I sleep six hours a night", "held"),
])
def test_a_kind_of_rewording_is_read_and_its_lookalike_is_not(fact: str, quote: str, kind: str) -> None:
    assert _check(fact, quote, quote).kind == kind


def test_false_holds_on_the_held_out_paraphrases_do_not_grow() -> None:
    from memtray.core.memory.receipts import read_receipt

    from tests.unit.memory.receipts_heldout import heldout, heldout_b

    def held(cases):  # type: ignore[no-untyped-def]
        return [c.fact for c in cases if check(c.fact, read_receipt({"messages": list(c.receipt[0]),
                                                                     "quote": c.receipt[1]}), c.messages).kind != "stated"]
    # bench/receipt_holds.py prints these; before the rules above: 24 of 50 and 14 of 30; before
    # the light verbs, "twice" and the word groups of issue 27's review round: 16 and 12
    assert len(held(heldout())) <= 2, held(heldout())
    assert len(held(heldout_b())) <= 4, held(heldout_b())


def test_every_statement_of_the_unsaid_corpus_as_its_fact_follows_from_itself() -> None:
    # the stance rules must not hold what users plainly say of themselves: each self-statement
    # of the labelled corpus, written as "Add to memory" writes it (English "User ...", Chinese
    # "用户..."), with the sentence as its quote
    from memtray.core.memory import unsaid

    from tests.unit.memory.unsaid_corpus import ALL

    held = []
    for message, _labels in ALL:
        for s in unsaid.statements(message):
            got = check(unsaid.as_fact(s), Receipt((1,), s), [("user", message)])
            if got.kind != "stated":
                held.append((unsaid.as_fact(s), got.reason))
    assert held == []


# --- a party word in the fact is no licence: only the fact's subject, or the same party ---

@pytest.mark.parametrize(("fact", "said"), [
    ("Has a dog", "My colleague has a dog"),
    ("Has a cat", "My sister has a cat"),
    ("Has two kids", "My brother has two kids"),
    ("Is married to a doctor", "My sister is married to a doctor"),
    ("Lives with parents", "My friend lives with her parents"),
    ("Has a friend in Oslo", "My boss has a friend in Oslo"),
    ("Has a dog", "She has a dog"),
])
def test_a_fact_that_names_some_other_party_is_still_about_the_user(fact: str, said: str) -> None:
    got = _check(fact, said, said)
    assert got.kind == "held" and "the fact is about the user" in got.reason, got


@pytest.mark.parametrize(("fact", "quote", "said"), [
    ("Sister has a cat", "My sister has a cat", "My sister has a cat"),
    ("Has a sister, Lena, who has a cat", "My sister Lena has a cat", "My sister Lena has a cat"),
    ("Has a cat named Miso", "I have a cat. Her name is Miso", "I have a cat. Her name is Miso"),
    ("Has 2 kids", "我有两个孩子", "我有两个孩子"),
    ("Has a dog", "I have a dog", "I have a dog"),
])
def test_a_fact_about_the_party_the_quote_names_is_stated(fact: str, quote: str, said: str) -> None:
    assert _check(fact, quote, said).kind == "stated"


# --- a rewording by id keeps how the old wording says it: past, maybe, someone else's ---

@pytest.mark.parametrize(("new", "old"), [
    ("Is vegetarian", "Was vegetarian"),
    ("Has a dog", "Had a dog"),
    ("Smokes", "Quit smoking"),
    ("Works as a nurse", "Former nurse"),
    ("Has a dog", "Neighbour has a dog"),
    ("Lives in Oslo", "Lived in Oslo until 2020"),
    ("Smoker", "Ex-smoker"),
    ("Is married", "Divorced; was married"),
    ("Works at Google", "Worked at Google"),
])
def test_a_rewording_by_id_cannot_move_the_old_wording_into_the_present_or_onto_the_user(new: str, old: str) -> None:
    got = check(new, None, [("user", "ok thanks")], known=[old], reworded=True)
    assert got.kind == "held" and got.reason.startswith("no receipt, and the old wording"), got


@pytest.mark.parametrize(("new", "old"), [
    ("Is vegetarian", "Vegetarian"),
    ("Has a daughter, Mia", "Daughter: Mia"),
    ("Does not eat meat", "Vegetarian"),
    ("Prefers short answers", "Wants concise replies"),
    ("Used to smoke", "Quit smoking"),
    ("Former nurse", "Used to work as a nurse"),
    ("Neighbour owns a dog", "Neighbour has a dog"),
    # an "-ed" word that is no past verb of the new wording says how it is now
    ("Lives in Graz", "Based in Graz"),
    ("Is married", "Married"),
    ("Is retired", "Retired"),
])
def test_a_rewording_that_keeps_how_it_is_said_needs_no_receipt(new: str, old: str) -> None:
    assert check(new, None, [("user", "ok thanks")], known=[old], reworded=True).kind == "stated"


# --- irregular pasts and ended things in the user's sentence ---

@pytest.mark.parametrize(("fact", "said"), [
    ("Has a dog", "I had a dog"),
    ("Has a dog", "We had a dog"),
    ("Smokes", "I quit smoking"),
    ("Works as a nurse", "I'm a former nurse"),
    ("Smokes", "I gave up smoking"),
])
def test_an_irregular_past_in_the_quote_is_no_present_fact(fact: str, said: str) -> None:
    got = _check(fact, said, said)
    assert got.kind == "held" and "the fact says it is so now" in got.reason, got


@pytest.mark.parametrize(("fact", "quote", "said"), [
    ("Had a dog", "I had a dog", "I had a dog"),
    ("Quit smoking", "I quit smoking", "I quit smoking"),
    ("Gave up smoking", "I gave up smoking", "I gave up smoking"),
    ("Lives in Oslo", "I live in Oslo now", "I gave up my flat in Bergen, I live in Oslo now"),
    ("Former nurse", "I'm a former nurse", "I'm a former nurse"),
    ("Has a dog", "I have had a dog for years", "I have had a dog for years"),
    ("Lives in Oslo", "I had to move to Oslo", "I had to move to Oslo"),
    # the ended thing is another clause's, before the quote
    ("Works at Corvid Labs", "I now work at Corvid Labs", "I quit the hospital, I now work at Corvid Labs"),
    ("Is vegetarian", "I'm a vegetarian", "I'm a vegetarian"),
    ("Lives in Oslo", "My name is Sam and I live in Oslo", "My name is Sam and I live in Oslo"),
    ("Lives in Lyon", "We moved to Lyon last year", "We moved to Lyon last year"),
])
def test_a_past_said_as_past_or_a_plain_present_is_stated(fact: str, quote: str, said: str) -> None:
    assert _check(fact, quote, said).kind == "stated"


@pytest.mark.parametrize(("new", "old"), [
    ("Is vegetarian", "Was vegetarian"),
    ("Has a dog", "Had a dog"),
    ("Lives in Oslo", "Lived in Oslo until 2020"),
])
def test_a_quote_that_says_nothing_cannot_lend_a_rewording_the_old_words_in_the_present(new: str, old: str) -> None:
    got = check(new, Receipt((1,), "ok thanks"), [("user", "ok thanks")], known=[old], reworded=True)
    assert got.kind == "held" and "the old wording" in got.reason, got


@pytest.mark.parametrize(("new", "old", "said"), [
    ("Is vegetarian", "Was vegetarian", "I'm vegetarian again"),
    ("Has a dog", "Had a dog", "I have a dog now"),
    ("Lives in Oslo", "Lived in Oslo until 2020", "I live in Oslo again"),
])
def test_a_quote_that_says_it_is_so_now_may_move_the_old_wording_into_the_present(new: str, old: str, said: str) -> None:
    assert check(new, Receipt((1,), said), [("user", said)], known=[old], reworded=True).kind == "stated"


@pytest.mark.parametrize(("fact", "said", "kind"), [
    # the party is someone else's ("her dog"): naming it is no licence to say the user has it
    ("Has a dog", "Her dog is cute", "held"),
    ("Has a dog", "My sister and her dog live in Oslo", "held"),
    # the user's own ("my dog", 我女儿), in any language, is the user's
    ("Has a dog", "My dog is cute", "stated"),
    ("Has a daughter", "我女儿五岁了", "stated"),
    ("Has a dog", "我的狗很可爱", "stated"),
    ("Ana lives in Oslo", "Her sister Ana lives in Oslo", "stated"),
])
def test_naming_the_party_says_the_user_has_it_only_when_it_is_the_users(fact: str, said: str, kind: str) -> None:
    assert _check(fact, said, said).kind == kind


# --- a word group holds synonyms only: a narrower or stronger word, a co-member, an opposite is held ---

def _lookalikes():  # type: ignore[no-untyped-def]
    from tests.unit.memory.receipts_heldout import altered_f, altered_g
    return altered_f() + altered_g()


@pytest.mark.parametrize("case", _lookalikes(), ids=[f"{c.fact} <- {c.receipt[1]}" for c in _lookalikes() if c.receipt])
def test_no_lookalike_of_batches_f_and_g_is_written(case) -> None:  # type: ignore[no-untyped-def]
    from memtray.core.memory.receipts import read_receipt
    assert case.receipt is not None
    got = check(case.fact, read_receipt({"messages": list(case.receipt[0]), "quote": case.receipt[1]}), case.messages)
    assert got.kind == "held" and got.reason, got


@pytest.mark.parametrize(("fact", "quote", "said"), [
    # an opposite is held as one, with the word the quote says
    ("Works the late shift", "I work the early shift", "early"),
    ("Is tall", "I am short", "short"),
    ("Lives in the city", "I live in the country", "country"),
    ("Always drinks coffee", "I sometimes drink coffee", "sometimes"),
    # what is opposite a word is opposite every narrower word of it
    ("Loves jazz", "I hate jazz", "hate"),
    ("Hates jazz", "I love jazz", "love"),
    ("Has a puppy", "I have a cat", "cat"),
])
def test_an_opposite_and_its_narrower_words_are_held_as_opposites(fact: str, quote: str, said: str) -> None:
    got = _check(fact, quote, quote, similarity=0.97)
    assert got.kind == "held" and f"the quote says '{said}'" in got.reason, got


@pytest.mark.parametrize(("fact", "quote"), [
    # a fact may say less than its quote: the general word, the weaker stance
    ("Has a dog", "I have a puppy"),
    ("Likes jazz", "I love jazz"),
    ("Enjoys jazz", "I adore jazz"),
    ("Dislikes jazz", "I hate jazz"),
    ("Dislikes cilantro", "I can't stand cilantro"),
    ("Is married", "I have a wife"),
    ("Has a partner", "I have a boyfriend"),
    ("Has a sister", "我有一个妹妹"),
    ("Speaks French", "I'm fluent in French"),
    ("Lives in Berlin", "I moved to Berlin"),
    ("Commutes by car", "I drive to work"),
    ("Drinks coffee", "I drink espresso"),
    ("Is tall", "I'm tall"),
    ("Is 180 cm tall", "I'm 180 cm"),
])
def test_a_fact_that_says_less_than_its_quote_is_written(fact: str, quote: str) -> None:
    got = _check(fact, quote, quote)
    assert got.kind == "stated", got


def test_no_word_is_both_narrower_than_a_word_and_its_opposite() -> None:
    from memtray.core.memory.reading import word_table
    table = word_table()
    assert table.broader  # the "narrower:" lines are read
    assert all(not up & table.opposites.get(g, frozenset()) for g, up in table.broader.items())


@pytest.mark.parametrize(("fact", "quote", "kind"), [
    # a doer is the doing: a feeling for the thing does not say it, the doing does
    ("Is a musician", "I like music", "held"),
    ("Is a cellist", "I love the cello", "held"),
    ("Is a runner", "I hate running", "held"),
    ("Is a musician", "I play music", "stated"),
    ("Is a cellist", "I play the cello", "stated"),
    ("Teacher", "I love my job as a teacher", "stated"),
])
def test_a_doer_needs_the_doing_not_a_feeling_for_the_thing(fact: str, quote: str, kind: str) -> None:
    assert _check(fact, quote, quote).kind == kind
