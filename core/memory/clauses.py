"""Which clauses of a quote say a fact (pure).

A quote a model copies is often longer than what a fact takes from it: "I don't eat meat, but I
love fish" for "Loves fish", "Can you help? I play the cello" for "Plays the cello". The "not"
and the "?" there belong to another clause than the one that says the fact; read for the whole
quote they would hold a fact the user plainly said. The receipt check
(:mod:`memtray.core.memory.receiptcheck`) therefore reads "not", questions, maybes and the past
only in the clauses that say something the fact says (:func:`saying`, :func:`unasked`): "Eats
meat" from the same words is still held, because the clause that says "eat meat" says "not".

A clause starts at a sentence's start, at a word that always starts one ("but", "though"), and
at a comma or an "and", "so", "because" when a subject follows ("…, so I cycle", "…, I cycle").
Rules, not a parser: what they cannot see is in docs/ARCHITECTURE.md ("Receipts").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from memtray.core.memory import stance
from memtray.core.memory.reading import FRAMING, Claims, Tok, claims_of, covered, join, word_table

__all__ = ["clause_at", "clauses", "crossed", "focus", "saying", "start_of", "supports", "unasked", "which"]

#: words that always start another clause
BREAK = frozenset({"but", "though", "although", "yet", "while", "whereas", "however", "但是", "但", "可是", "不过"})
#: words that start another clause when a subject follows them ("…, so I cycle")
_SOFT = frozenset({"and", "so", "because", "or", "then", "since", "所以", "因为"})
#: words a question may be about instead of the user ("…, can you help?", "…, is it hard?")
_ASKED = frozenset({"you", "it", "that", "this", "there", "你", "您"})


def _subject_near(toks: Sequence[Tok], k: int) -> bool:
    """Whether a subject (a person, "now") is at ``toks[k]`` or just after it."""
    w = stance.words()
    return any(t.word in w.user or t.word in w.third or t.word in w.possessive or t.word == "now"
               for t in toks[k:k + 2])


def _starts(toks: Sequence[Tok], k: int) -> bool:
    t = toks[k]
    return (k == 0 or t.initial or t.word == "." or t.word in BREAK
            or ((t.pause or t.word in _SOFT) and _subject_near(toks, k)))


def clauses(toks: Sequence[Tok]) -> list[list[Tok]]:
    """``toks`` cut into clauses (the full stop :func:`join` puts between texts dropped)."""
    out: list[list[Tok]] = []
    for k, t in enumerate(toks):
        if not out or _starts(toks, k):
            out.append([])
        if t.word != "." or t.raw.isalnum():
            out[-1].append(t)
    return [c for c in out if c]


def supports(f: Claims, c: Claims, *, every: bool = False) -> bool:
    """Whether a clause (its claims) says something the fact says (``every``: all it says): its
    content words, framing aside, and its names, numbers and places."""
    framing = word_table().framing
    said = [covered(u, c) for u in f.units if FRAMING not in u.groups and not (u.stems and u.stems <= framing)]
    said += [k in c.anchors or k in c.stems for k in f.anchors]
    return all(said) if every else any(said)


def which(f: Claims, parts: Sequence[Claims]) -> list[int]:
    """Which of ``parts`` (clauses or sentences) to read for how the fact is said: those that say
    all of it when some do ("What's a good gift for a runner? I run marathons" -> the second),
    else those that say some of it, else all."""
    every = [i for i, c in enumerate(parts) if supports(f, c, every=True)]
    return every or [i for i, c in enumerate(parts) if supports(f, c)] or list(range(len(parts)))


def focus(f: Claims, sentence: Sequence[Tok], at: int) -> int:
    """Where a sentence is read for its time from: the start of its first clause that says the
    fact (:func:`which`), or ``at`` (where the quote starts) when that is later: "I was a
    teacher, now I'm a baker" is read from "now" for "Is a baker"."""
    starts = [k for k in range(len(sentence)) if _starts(sentence, k)] or [0]
    bounds = list(zip(starts, [*starts[1:], len(sentence)], strict=True))
    parts = [claims_of([t for t in sentence[a:b] if not t.frame]) for a, b in bounds]
    return max(at, bounds[which(f, parts)[0]][0]) if len(parts) > 1 else at


def start_of(sentence: Sequence[Tok], k: int) -> int:
    """Where the clause of ``sentence[k]`` starts."""
    while k > 0 and not _starts(sentence, k):
        k -= 1
    return k


def clause_at(sentence: Sequence[Tok], k: int) -> list[Tok]:
    """The clause of ``sentence[k]``."""
    start = end = start_of(sentence, k)
    end += 1
    while end < len(sentence) and not _starts(sentence, end):
        end += 1
    return list(sentence[start:end])


def crossed(f: Claims, toks: Sequence[Tok], opposites: Mapping[int, frozenset[int]]) -> str:
    """Why the fact takes a word from one clause onto what another clause says of its opposite,
    or "": "I'm allergic to cats, but I love dogs" is no "Is allergic to dogs" (the clause that
    says "allergic" says "cats")."""
    parts = [claims_of(p) for p in clauses(toks)]
    if len(parts) < 2:
        return ""
    framing = word_table().framing
    said = [u for u in f.units if FRAMING not in u.groups and not (u.stems and u.stems <= framing)]
    for u in said:
        against = frozenset().union(*(opposites.get(g, frozenset()) for g in u.groups))
        for c in parts:
            if against & c.groups and not covered(u, c) and any(covered(x, c) for x in said if x is not u):
                other = next((x.shown for x in c.units if x.groups & against), "")
                return f"the fact says '{u.shown}', the quote says '{other}' there"
    return ""


def saying(f: Claims, toks: Sequence[Tok]) -> list[Tok]:
    """The clauses of ``toks`` that say the fact ``f`` (:func:`which`), joined; all of ``toks``
    when it is one clause."""
    parts = clauses(toks)
    if len(parts) < 2:
        return list(toks)
    return join(*(parts[i] for i in which(f, [claims_of(p) for p in parts])))


def unasked(sentence: Sequence[Tok], f: Claims) -> list[Tok]:
    """``sentence`` without the "?" of a question clause that asks nothing the fact says ("I play
    the cello, can you help?" asks about help, not the cello). A question clause runs back from
    its "?" to a clause start; one with no subject of its own ("…, for someone like me?") asks
    with the clause before it, up to the sentence's start."""
    out = list(sentence)
    users = stance.words().user | stance.words().third | _ASKED
    for q, t in enumerate(sentence):
        if not t.asks:
            continue
        start = q
        while True:
            while start > 0 and not (sentence[start].pause or sentence[start].initial
                                     or sentence[start].word in BREAK):
                start -= 1
            if start == 0 or any(x.word in users for x in sentence[start:q + 1]):
                break
            start -= 1
        if start > 0 and not supports(f, claims_of(sentence[start:q + 1])):
            out[q] = replace(t, asks=False)
    return out
