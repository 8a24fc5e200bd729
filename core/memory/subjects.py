"""Whose a name is: the user's own, or someone else's (pure).

A sentence whose subject is a bare name ("Sam plays the cello") is about the user only when the
user goes by that name. The receipt check (:mod:`memtray.core.memory.receiptcheck`) reads the
conversation for it (:func:`people`):

* names the user gives themself: "I'm Sam", "my name is Sam", "call me Sam", "Sam here",
  "this is Sam", 我叫Sam;
* names the conversation gives someone else: a name next to a party word ("my friend Sam",
  "a cat named Miso", "Sam is my son", "Sam, my neighbour");
* and the names memory says the user goes by ("- Name: Sam": :func:`names_in_memory`).

A name the user goes by is the user. Another name is someone else when the conversation says
so, when the user goes by another name, or when the message speaks of the user as "I" (a user
who writes "I" elsewhere in the message does not call themself "Tom" in the next sentence).
A name the conversation says nothing of, in a message with no "I", is the user: "Sam keeps
bees in the garden." from a user who speaks of themself by name (issue 27). What this cannot
see is in docs/ARCHITECTURE.md ("Receipts").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memtray.core.memory import stance
from memtray.core.memory.reading import MONTH_OF, Tok, message_tokens, stem_of, word_table

__all__ = ["FIRST_PERSON", "People", "lead_name", "names_in_memory", "people"]

#: the user's own words: a sentence with one of them is the user's
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "我", "我们", "我的", "咱们"})
#: capitalised words that start a sentence and name nobody
_NO_NAME = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "yesterday",
                      "tomorrow", "tonight", "today", "hi", "hey", "hello", "thanks", "sorry", "anyway", "btw",
                      "sure", "no", "yes", "nope", "yeah", "lately", "recently", "sometimes", "usually"})
_AS = frozenset({"named", "called", "name", "is", "was"})


@dataclass(frozen=True)
class People:
    """Names (casefolded) the user goes by, names the conversation gives someone else, and
    whether the message a quote is in speaks of the user as "I"."""

    user: frozenset[str] = frozenset()
    others: frozenset[str] = frozenset()
    first_person: bool = False

    def other(self, name: str) -> bool:
        """Whether a sentence whose subject is ``name`` is about someone else than the user."""
        n = name.casefold()
        if n in self.user:
            return False
        return n in self.others or bool(self.user) or self.first_person


def _namelike(t: Tok) -> bool:
    """A capitalised word that is no common word ("Sam", not "Python"-like words of the table)."""
    table = word_table()
    w = stance.words()
    return (t.raw[:1].isupper() and t.raw.isalpha() and t.raw.isascii() and len(t.raw) > 1
            and t.word not in table.stop and t.word not in table.words and stem_of(t.word) not in table.words
            and t.word not in w.user and t.word not in w.third and t.word not in w.possessive
            and t.word not in w.modal and t.word not in w.report and t.word not in FIRST_PERSON
            and t.word not in _NO_NAME and t.word not in MONTH_OF)


def people(user_texts: Sequence[str], quoted: Sequence[str], known: frozenset[str] = frozenset()) -> People:
    """Who the names of a conversation are (``user_texts``: the user's messages; ``known``: the
    names memory says the user goes by) and whether the messages a quote is in (``quoted``)
    speak of the user as "I"."""
    mine: set[str] = set(known)
    theirs: set[str] = set()
    for text in user_texts:
        m, t = _names(text)
        mine |= m
        theirs |= t
    first = any(t.word in FIRST_PERSON for text in quoted for t in message_tokens(text))
    return People(frozenset(mine), frozenset(theirs - mine), first)


@functools.lru_cache(maxsize=1024)
def _names(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The names one message gives the user, and those it gives someone else."""
    mine: set[str] = set()
    theirs: set[str] = set()
    party = stance.words().party
    toks = message_tokens(text)
    words = [t.word for t in toks]
    for k, t in enumerate(toks):
        if not _namelike(t):
            continue
        before, after = words[max(0, k - 3):k], words[k + 1:k + 4]
        if (before[-2:] in (["i", "am"], ["call", "me"], ["this", "is"], ["my", "name"], ["我", "叫"], ["我", "是"])
                or before[-3:] == ["my", "name", "is"] or after[:1] == ["here"]):
            mine.add(t.word)
        elif (before[-1:] and before[-1] in party) or (
                before[-1:] and before[-1] in _AS and any(x in party for x in before[-2:-1])) or (
                any(x in party for x in after) and any(x in ("my", "our", "his", "her", "their") for x in after)):
            theirs.add(t.word)
    return frozenset(mine), frozenset(theirs)


_MEMORY_NAME_RE = re.compile(r"^\s*(?:[-*]\s*)?(?:\[[^\]]*\]\s*)?(?:(?:user'?s?|my|the user'?s)\s+)?"
                             r"(?:(?:first |preferred |full )?name\s*(?::|\s+is\b)|goes by|called)\s*([^\W\d_][\w'-]*)",
                             re.IGNORECASE | re.MULTILINE)


def names_in_memory(memory: str) -> frozenset[str]:
    """The names a memory file says the user goes by ("- Name: Sam", "- [F3] Preferred name is
    Sam"), casefolded: a conversation that never says "I'm Sam" is still Sam's."""
    return frozenset(m.group(1).casefold() for m in _MEMORY_NAME_RE.finditer(memory))


def lead_name(clause: Sequence[Tok]) -> str:
    """The name a clause starts with, as written ("Sam plays the cello"), else "": also when
    the clause speaks of the user too ("Lena and I went hiking", "Duolingo helps me learn
    Spanish")."""
    if not clause or not _namelike(clause[0]) or any(t.word in FIRST_PERSON for t in clause):
        return ""
    return clause[0].raw
