"""Who a sentence is about, and whether it says something is so (pure).

The receipt check (:mod:`memtray.core.memory.receiptcheck`) compares what a fact and its quote
*say*; this module reads how they say it, so that a model cannot turn

* a statement about someone else into one about the user ("my sister lives in Oslo" ->
  "Lives in Oslo"): :attr:`Stance.party`;
* a question, a wish, a plan or a maybe into a plain fact ("should I learn Rust?" ->
  "Learns Rust"; "maybe I'll move to Berlin" -> "Moves to Berlin"): :attr:`Stance.modal`;
* the past into the present ("I used to smoke" -> "Smokes"; "I lived in Paris" ->
  "Lives in Paris"): :attr:`Stance.past`, :attr:`Stance.verb`.

A sentence is read up to its first *predicate word* (the first word that is none of: a stop
word, a stance word, a name, a party, a verb of saying or thinking): what comes before it is
its subject and its frame. Rules, not a parser: the words are in
resources/corpus/stance.txt, and what they cannot see is in docs/ARCHITECTURE.md ("Receipts").
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memtray import resources

__all__ = ["Stance", "Word", "fact_modal", "fact_past", "mentions_party", "of", "party_words"]


class Word(Protocol):
    """A token as the receipt check reads it."""

    @property
    def raw(self) -> str: ...
    @property
    def word(self) -> str: ...
    @property
    def stem(self) -> str: ...
    @property
    def name(self) -> bool: ...
    @property
    def asks(self) -> bool: ...
    @property
    def pause(self) -> bool: ...


@dataclass(frozen=True)
class Words:
    user: frozenset[str]
    third: frozenset[str]
    possessive: frozenset[str]
    party: frozenset[str]
    modal: frozenset[str]
    modal_fact: frozenset[str]
    past: frozenset[str]
    past_fact: frozenset[str]
    lasting: frozenset[str]
    report: frozenset[str]
    state: frozenset[str]
    cjk: tuple[tuple[str, str], ...]  # (Chinese word, its kind), longest first


@functools.cache
def words() -> Words:
    """The word lists of resources/corpus/stance.txt."""
    lists: dict[str, set[str]] = {}
    for line in resources.text("corpus/stance.txt").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        kind, _, rest = line.partition(":")
        lists.setdefault(kind.strip(), set()).update(w.casefold() for w in rest.split())
    cjk = sorted(((w, k) for k in ("user", "third", "possessive", "party", "modal", "past")
                  for w in lists.get(k, ()) if not w.isascii()), key=lambda p: -len(p[0]))
    f = {k: frozenset(v) for k, v in lists.items()}
    return Words(f["user"], f["third"], f["possessive"], f["party"], f["modal"], f["modal-fact"], f["past"],
                 f["past-fact"], f["lasting"], f["report"], f["state"], tuple(cjk))


@dataclass(frozen=True)
class Stance:
    """How one sentence says what it says.

    ``party``: the other person (or animal) it is about, as written ("my sister", "she"), ""
    when it is about the user or names no subject; ``party_words``: that party's words and the
    names given with it ("sister", "Lena"). ``modal``: the word that makes it a question, a
    wish, a plan or a maybe ("should", "maybe", "?"), or "". ``past``: the word that puts it in
    the past ("used to", "was", 以前), or "". ``verb``: its first predicate word when that is a
    past form right after its subject ("lived" in "I lived in Paris"), or ""."""

    party: str = ""
    party_words: frozenset[str] = frozenset()
    modal: str = ""
    past: str = ""
    verb: str = ""
    verb_stem: str = ""
    subject: bool = False  # it names its subject (the user or another)


def _cjk_run(toks: Sequence[Word], i: int) -> tuple[int, str] | None:
    """The longest stance word of the Chinese list starting at ``toks[i]``: its length and kind."""
    if toks[i].word.isascii():
        return None
    for w, kind in words().cjk:
        n = len(w)
        if "".join(t.word for t in toks[i:i + n]) == w:
            return n, kind
    return None


def _party_at(toks: Sequence[Word], i: int) -> int:
    """How many tokens a party word at ``toks[i]`` takes (0: none); Chinese words span characters."""
    if toks[i].word in words().party or toks[i].stem in words().party:
        return 1
    hit = _cjk_run(toks, i)
    return hit[0] if hit is not None and hit[1] == "party" else 0


def mentions_party(toks: Sequence[Word]) -> bool:
    """Whether a text names a party anywhere ("Sister lives in Oslo", "伴侣是 Sam")."""
    return any(_party_at(toks, i) for i in range(len(toks)))


def party_words(toks: Sequence[Word]) -> frozenset[str]:
    """The party words a text names anywhere, as written and as stems ("sister", 妹妹)."""
    out: set[str] = set()
    for i in range(len(toks)):
        size = _party_at(toks, i)
        if size == 1 and toks[i].word.isascii():
            out |= {toks[i].word, toks[i].stem}
        elif size:
            out.add("".join(t.word for t in toks[i:i + size]))
    return frozenset(out)


_CLAUSE = frozenset({"but", "and", "so", "because", "though", "although", "while", "yet", "or", "但是", "但", "可是"})
_ENDED = frozenset({"quit", "stopped"})
_HAVE = frozenset({"有", "养", "养了"})
_NOT = frozenset({"not", "no", "never", "neither", "nor"})
_WHEN = frozenset({"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                   "november", "december"})


def of(sentence: Sequence[Word], stop: frozenset[str], focus: int = 0) -> Stance:
    """The stance of one sentence (its tokens) at its first predicate word from ``focus`` on
    (where a quote starts in its sentence); ``stop`` are the words that state nothing."""
    w = words()
    party, party_words, modal, past, verb, verb_stem = "", set[str](), "", "", "", ""
    subject = False
    owned = False  # the user was said to have something (有, 养): a party after it is an object
    prev = ""  # the kind of the last marker: "subject" when a subject was just named
    i, n = 0, len(sentence)
    while i < n:
        t = sentence[i]
        cjk = _cjk_run(sentence, i)
        if cjk is not None:
            size, kind = cjk
            run = "".join(x.word for x in sentence[i:i + size])
            if kind in ("user", "possessive") and run.startswith("我"):
                after = _party_at(sentence, i + size) if i + size < n else 0
                if after:
                    party = "".join(x.word for x in sentence[i:i + size + after])
                    party_words = {"".join(x.word for x in sentence[i + size:i + size + after])}
                    i += size + after
                    prev, subject = "subject", True
                    continue
                party, party_words, prev, subject = "", set(), "subject", True
            elif kind in ("third", "possessive"):
                party, party_words, prev, subject = run, set(), "subject", True
            elif kind == "party":
                if owned:
                    break  # "我有两个孩子" (I have two children): what the user has, not who it is about
                party, party_words, prev, subject = run, {run}, "subject", True
            elif kind == "modal":
                modal = modal or run
            elif kind == "past":
                past = past or run
            i += size
            continue
        low = t.word
        if t.pause and i and (low in w.user or low in w.third or low == "now"):
            # "I was a teacher, now I'm a baker": a clause with its own subject tells its own time
            # (not its own maybe: "If I get the job, I'll move")
            past = ""
        if low in _HAVE and subject and not party:
            owned = True
        nxt = sentence[i + 1].word if i + 1 < n else ""
        if low in w.user:
            party, party_words, prev, subject = "", set(), "subject", True
        elif low in w.third:
            party, party_words, prev, subject = t.raw, set(), "subject", True
        elif low in w.possessive:
            j = next((k for k in range(i + 1, min(n, i + 4)) if _party_at(sentence, k)), None)
            if j is not None:
                size = _party_at(sentence, j)
                party = " ".join(x.raw for x in sentence[i:j + size])
                party_words = {x.word for x in sentence[j:j + size]} | {x.stem for x in sentence[j:j + size]}
                k = j + size
                while k < n and sentence[k].name:  # "my sister Lena"
                    party_words.add(sentence[k].word)
                    k += 1
                i, prev, subject = k, "subject", True
                continue
            if low not in ("my", "our", "user", "users", "我的", "我们的"):
                party, party_words = t.raw, set()
            else:
                party, party_words = "", set()
            prev, subject = "subject", True
        elif i == 0 and _party_at(sentence, 0) == 1:  # "Sister lives in Oslo": a fact's (or a note's) own subject
            party, party_words, prev, subject = t.raw, {t.word, t.stem}, "subject", True
        elif (low == "used" and nxt == "to") or (low == "gave" and nxt == "up" and i >= focus):
            past = past or f"{low} {nxt}"  # "I gave up smoking" ended it, like "I quit smoking"
            i += 2
            continue
        elif low in ("was", "were", "had") and prev == "subject" and not (
                low == "had" and (nxt == "to" or i < focus)):
            # "I had a dog": an irregular past ("I had to move to Oslo" says the move, not the past)
            past = past or low
        elif low in ("want", "wants", "hope", "hopes", "need", "needs") and nxt == "to":  # a plan is said
            modal = modal or f"{low} to"
            i += 2
            continue
        elif low == "would":
            then = sentence[i + 2].word if i + 2 < n else ""
            if nxt not in ("rather", "prefer", "like", "love", "appreciate") or then == "to":
                modal = modal or "would"
        elif low in w.modal and not (low == "may" and t.raw != "may"):  # "In May I start" is the month
            modal = modal or t.raw
        elif low in w.past and not (low in _ENDED and i < focus):
            # a verb that ends something ("quit", "stopped") is a predicate: before the quote it is
            # another clause's ("I quit the hospital, | I now work at Corvid Labs")
            past = past or t.raw
        elif low in _CLAUSE:
            modal, past = "", ""  # "Maybe next year, but I live in Oslo": a new clause says anew
        elif (low in stop or t.name or low in w.report or low in _NOT or (low.endswith("ly") and len(low) > 4)
              or low.isdigit() or low in _WHEN):  # "[2026-12-03 10:00] User's sister ..." (a diary's stamp)
            pass
        elif i < focus:
            pass  # a predicate before the quote: the quote's own clause decides
        else:  # the first predicate word: what the sentence says starts here
            if prev == "subject" and low.endswith("ed") and low != t.stem and low not in w.lasting:
                verb, verb_stem = t.raw, t.stem
            if past in ("was", "were") and low in w.lasting:
                past = ""  # "I was born in Cork" still holds
            break
        if low not in w.user and low not in w.third and low not in w.possessive and not (
                prev == "subject" and (low.endswith("ly") or low in ("was", "were"))):
            prev = ""
        i += 1
    if any(t.asks for t in sentence) or (sentence and sentence[-1].word in ("吗", "呢")):
        modal = modal or "?"
    return Stance(party, frozenset(party_words), modal, past, verb, verb_stem, subject)


def fact_modal(fact: Sequence[Word]) -> bool:
    """Whether a fact says it asks, hedges, wishes or plans ("Might move to Berlin")."""
    w = words()
    text = "".join(t.word for t in fact if not t.word.isascii())
    return any(t.word in w.modal_fact or t.stem in w.modal_fact or t.asks for t in fact) or any(
        x in text for x in w.modal_fact if not x.isascii())


def fact_past(fact: Sequence[Word]) -> bool:
    """Whether a fact says it is past ("Used to smoke", "Former smoker", "Lived in Paris"); an
    "-ed" word after "is" says how it is now ("Is married", "Is retired")."""
    w = words()
    text = "".join(t.word for t in fact if not t.word.isascii())
    return any(t.word in w.past_fact or (t.word.endswith("ed") and t.word != t.stem and t.word not in w.lasting
                                         and not (i and fact[i - 1].word in _IS))
               for i, t in enumerate(fact)) or any(x in text for x in w.past_fact if not x.isascii())


_IS = frozenset({"is", "are", "am"})
