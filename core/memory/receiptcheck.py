"""The receipt check: is a fact's quote in the messages it cites, and does the fact follow from it (pure).

A consolidating model rewords ("Sam keeps bees in the garden" -> "Is a hobby beekeeper"), so
the fact's words are not the message's words. The model therefore sends a receipt
(:mod:`memtray.core.memory.receipts`): message numbers and a verbatim quote. :func:`check`

1. finds the quote in a cited message, after normalising both (NFKC, so full-width letters and
   digits are plain ones; case; punctuation; white space; contractions; numbers and times
   restated: "five am", "5am", "5:00 a.m." and "05:00" are all ``5``; ISO dates and Chinese
   dates become month names). "…" or "..." in a quote marks an elision: each piece is found
   on its own. A small slip (one word in eight) is forgiven; what counts from then on is the
   *message's* words that matched, never the model's;
2. reads the fact as claims: names, numbers, dates and places (*anchors*), and content words
   (snowball stems; phrases of resources/corpus/paraphrases.txt become their group, so
   "beekeeper" is "keep bees" and "concise" is "short"; Chinese text is matched by its
   paraphrase entries and by character bigrams);
3. decides. Every anchor of the fact must be in the quote, or in the message the quote is
   in when the quote names no other anchor of its own and has a word that stands for it
   ("she", "there": "the fact says 'Mia', the quote says 'Greta'" is held). Every content
   word must be in the quote or its group must be, and none may be the opposite of what the
   quote says ("opposite:" lines); with an embedding model (``similarity``) one uncovered
   content word is forgiven when fact and quote are close. The fact and the quote must
   agree on negation ("avoids" says "not"), and on how it is said
   (:mod:`memtray.core.memory.stance`: about the user, not "my sister" nor "Ana" when the
   user is Ola (:mod:`memtray.core.memory.subjects`); so, not asked or maybe; now, not "used
   to"): the quote's sentence around it is read for that, never as evidence. "Not", a
   question, a maybe, the past and a hating are read only in the clauses that say the fact
   (:mod:`memtray.core.memory.clauses`): "I don't eat meat, but I love fish" says "Loves fish".

A quote found only in the assistant's messages makes the fact ``inferred``: the user never said it.
What the check cannot see is in docs/ARCHITECTURE.md ("Receipts").
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memtray.core.memory import clauses, stance, subjects
from memtray.core.memory.reading import (
    FRAMING,
    MONTH_OF,
    NEGATORS,
    TOKEN_RE,
    Claims,
    Table,
    Tok,
    Unit,
    claims,
    claims_of,
    covered,
    join,
    message_tokens,
    normalize,
    stem_of,
    tokens,
    word_table,
)
from memtray.core.memory.receipts import Receipt

__all__ = ["Check", "Claims", "check", "claims", "normalize", "says_otherwise"]

#: a quote of this many words or more may differ from its message in one word of ``SLIP``
SLIP = 8
#: similarity (0..1) from an embedding model above which one uncovered content word is forgiven
SIMILAR = 0.82


@dataclass(frozen=True)
class Check:
    """What the receipt check decided for one fact.

    ``kind``: ``stated`` (the quote is in a user message and the fact follows from it),
    ``inferred`` (it follows, but only the assistant's words say it), ``held`` (no receipt,
    the quote is not in the cited messages, or it says something else: ``reason`` says which).
    ``messages``: where the quote was found (1-based, as the prompt numbers them)."""

    kind: str
    reason: str = ""
    messages: tuple[int, ...] = ()
    quote: str = ""

    @property
    def written(self) -> bool:
        return self.kind != "held"


# --- finding the quote -----------------------------------------------------------------

_ELISION_RE = re.compile(r"\s*(?:…|\.{3,}|\[\s*(?:…|\.{2,})?\s*\]|\(\s*(?:…|\.{2,})\s*\))\s*")


def _locate(piece: list[str], message: Sequence[Tok]) -> list[Tok] | None:
    """The message's words that ``piece`` quotes, or None when it does not quote them."""
    n = len(piece)
    words = [t.word for t in message]
    if not n:
        return []
    for k in range(len(words) - n + 1):
        if words[k:k + n] == piece:
            return _framed(message, k, k + n)
    if n < 4:
        return None
    sm = difflib.SequenceMatcher(None, words, piece, autojunk=False)
    blocks = [b for b in sm.get_matching_blocks() if b.size]
    if not blocks:
        return None
    matched = sum(b.size for b in blocks)
    start, end = blocks[0].a, blocks[-1].a + blocks[-1].size
    if n - matched > n // SLIP or end - start > n + n // SLIP + 1:
        return None
    # the message's words from the first match to the last: a word the quote slipped ("not")
    # is still what the message says
    return _framed(message, start, end)


#: how many words before a quote are read for a "not" the quote left out ("I don't | smoke")
NEGATION_REACH = 3


#: words that stand for someone or something the message names elsewhere: only a quote with
#: one of them may take a name, number or place from the rest of its message
_REFERRING = frozenset({"he", "she", "they", "him", "her", "his", "hers", "it", "its", "them", "their", "theirs",
                        "there", "then", "that", "this", "这", "那", "他", "她", "它"})

#: words that start another clause: a "not" before them denies something else ("not sure, but I …")
_CLAUSE = frozenset({"but", "and", "so", "because", "though", "although", "while", "yet", "or", "但是", "但", "可是"})


#: how far back (in words) a quote's sentence is read for who and how it says it
FRAME_REACH = 40


def _framed(message: Sequence[Tok], start: int, end: int) -> list[Tok]:
    """The message's words ``start:end`` as evidence: with the "not"s just before them (as
    evidence), and the rest of their sentence as *frame* (read only for its stance: "my sister"
    before "lives in Oslo", "should I" before "learn Rust", the "?" after it)."""
    denied = _denied(message, start)
    s0 = start
    while s0 > 0 and s0 > start - FRAME_REACH and not message[s0].initial:
        s0 -= 1
    before = [replace(t, frame=True) for t in message[s0:start] if not any(t is d for d in denied)]
    e1 = end
    while e1 < len(message) and e1 < end + FRAME_REACH and not message[e1].initial and not (
            message[e1].word in _CLAUSE or message[e1].word in stance.words().user):
        e1 += 1  # up to the sentence's end ("learn Rust | today?"), not into another clause ("…, should I move?")
    after = [replace(t, frame=True) for t in message[end:e1]]
    return before + denied + list(message[start:end]) + after


def _denied(message: Sequence[Tok], start: int) -> list[Tok]:
    """The negators just before a quoted span, in its clause (``I don't`` + ``smoke``): the
    quote's words are evidence only with the "not" the message puts before them."""
    out: list[Tok] = []
    if start < len(message) and message[start].initial:
        return out  # the quote starts its sentence: a "not" before it is another sentence's
    for t in reversed(message[max(0, start - NEGATION_REACH):start]):
        if t.word in _CLAUSE:
            break
        if t.word in NEGATORS:
            out.append(t)
        if t.initial:
            break
    return out[::-1]


def _find(quote: str, cited: Sequence[int], texts: Sequence[str]) -> tuple[list[int], list[Tok]] | None:
    """Where each elided piece of ``quote`` is (message numbers, among ``cited``) and the
    message words it matched; None when some piece is in none of them."""
    whole = _find_pieces(_ELISION_RE.split(quote), cited, texts)
    if whole is None and _SENTENCE_RE.search(quote):  # two sentences of two messages, quoted as one
        whole = _find_pieces(_SENTENCE_RE.split(_ELISION_RE.sub(". ", quote)), cited, texts)
    return whole


_SENTENCE_RE = re.compile(r"(?<=[.!?;。！？；])\s*")


def _find_pieces(pieces: Sequence[str], cited: Sequence[int],
                 texts: Sequence[str]) -> tuple[list[int], list[Tok]] | None:
    found: list[int] = []
    words: list[Tok] = []
    for piece in (p for p in pieces if TOKEN_RE.search(p)):
        pw = [t.word for t in tokens(piece, names=False)]
        hit = next(((n, got) for n in cited if (got := _locate(pw, message_tokens(texts[n - 1]))) is not None), None)
        if hit is None:
            return None
        if hit[0] not in found:
            found.append(hit[0])
        words = join(words, hit[1])
    return found, words


# --- the decision ----------------------------------------------------------------------

def follows(fact: str, evidence: str | Sequence[Tok], *, context: Sequence[Tok] = (),
            similarity: Callable[[str, str], float | None] | None = None,
            people: subjects.People | None = None) -> str:
    """Why ``fact`` does not follow from ``evidence`` (the words a quote matched, and the
    old wording of a fact it rewords), or "" when it does. ``context``: the rest of the cited
    messages, which may supply an anchor the quote leaves out when the quote names none.
    ``people``: whose the names of the conversation are (a sentence about "Sam" is the user's
    only when the user goes by Sam)."""
    framed = tokens(evidence) if isinstance(evidence, str) else list(evidence)
    ev_toks = [t for t in framed if not t.frame]
    fact_toks = tokens(fact)
    f, ev = claims_of(fact_toks), claims_of(ev_toks)
    ctx = claims_of(context) if context else None
    # a capitalised word that starts the fact is a name when the messages write it as one ("Mia ...")
    names = {**(ctx.anchors if ctx else {}), **ev.anchors}
    promoted = [u for u in f.units if len(u.stems) == 1 and not u.groups and next(iter(u.stems)) in names]
    if promoted:
        f = replace(f, anchors={**f.anchors, **{next(iter(u.stems)): u.shown for u in promoted}},
                    units=[u for u in f.units if u not in promoted])
    for key, shown in f.anchors.items():
        if key in ev.anchors or key in ev.stems:
            continue
        own = {k: v for k, v in ev.anchors.items() if k not in f.anchors and k not in f.stems
               and k.isdigit() == key.isdigit()}
        if own:
            return f"the fact says '{shown}', the quote says " + ", ".join(f"'{v}'" for v in list(own.values())[:3])
        if key == "1" and any(t.word in ("a", "an", "single") for t in ev_toks):
            continue  # "two cats and a dog" says "one dog"
        if ctx is not None and (key in ctx.anchors or key in ctx.stems) and any(
                t.word in _REFERRING for t in ev_toks):
            continue  # "She loves drawing" in "My daughter Mia ... She loves drawing": "she" is Mia
        return f"the fact says '{shown}', the quote does not"
    # a "not" inside a paraphrase both sides share ("can not stand" = "dislikes") is no negation
    # "not" is read in the clauses that say the fact: "I don't eat meat, but I love fish" says "Loves fish"
    near = claims_of(clauses.saying(f, ev_toks))
    why = _negation(f, near)
    if why:
        return why
    how = _stance(fact_toks, f, framed, ev, people)
    if how.why:
        return how.why
    table = word_table()
    # a word that says "not" on its own ("Avoids") is said by the quote's "not" (they agree: above)
    said_not = frozenset(table.negative) if ev.negations or ev.neg_groups else frozenset()
    why = _light(f, near, table)
    if why:
        return why
    content = [u for u in f.units if not (u.stems and u.stems <= table.framing | table.light)]
    # a light verb ("Goes jogging") is said by the thing it does, when that is said
    light = table.light if any(covered(u, ev) for u in content) else frozenset()
    missing = [u.shown for u in f.units if not covered(u, ev) and not (u.stems and u.stems <= table.framing | light)
               and not (u.stems and u.stems <= how.forgiven | said_not)]
    cjk = [b for b in f.bigrams if len(b) == 2]
    if cjk:
        rest = [b for b in cjk if b not in ev.bigrams]
        cjk_groups = frozenset().union(*(u.groups for u in f.units if not u.stems))
        if len(rest) * 3 > len(cjk) and not (cjk_groups and cjk_groups <= ev.groups):
            missing.append("".join(rest[:3]))
    for u in f.units:  # the opposite of what the quote says, never forgiven by a similarity
        against = frozenset().union(*(table.opposites.get(g, frozenset()) for g in u.groups)) & ev.groups
        if against and not covered(u, ev):
            said = next((x.shown for x in ev.units if x.groups & against), "")
            return f"the fact says '{u.shown}', the quote says '{said}'" if said else (
                f"the fact says '{u.shown}', the quote says the opposite")
    why = clauses.crossed(f, ev_toks, table.opposites)
    if why:
        return why
    # a fact of framing words alone ("Is tall", "Has a family") claims them: the quote must say one
    claimed = [u for u in f.units if covered(u, ev) or not (u.stems and u.stems <= table.framing | light)]
    if not missing:
        return "" if claimed or f.anchors or cjk else "the fact says nothing the quote could support"
    if len(missing) == 1 and similarity is not None:
        score = similarity(fact, " ".join(t.raw for t in ev_toks))
        if score is not None and score >= SIMILAR:
            return ""
    return "the quote does not say " + ", ".join(f"'{w}'" for w in missing[:3])


def _light(f: Claims, ev: Claims, table: Table) -> str:
    """Why a fact's light verb ("Plays tennis") does not follow from a quote that says it likes or
    hates the thing ("I hate tennis"), or "": the feeling is said, the doing is not; so of a
    doer the quote does not name ("Is a musician" from "I like music"). A hating
    is never left out ("I hate running" is no "Runs"), unless the fact says "not" its own way."""
    verbs = [u for u in f.units if u.stems and u.stems <= table.light and not covered(u, ev)]
    if f.groups & table.feeling:
        return ""  # a fact that says a feeling is read against the quote's by the opposites
    feeling = ev.groups & table.feeling
    said = next((x.shown for x in ev.units if x.groups & feeling), "")
    # a doer ("Is a musician") is the doing, which a feeling for the thing ("I like music") does not say
    doers = [u for u in f.units if u.stems and u.stems <= table.doers and not u.stems <= ev.stems]
    if (verbs or doers) and feeling:
        return f"the quote says '{said}', the fact says '{(verbs or doers)[0].shown}'"
    if feeling & table.dislike and not (f.negations or f.neg_groups or f.stems & table.negative):
        return f"the quote says '{said}', the fact does not"
    return ""


def _negation(f: Claims, ev: Claims) -> str:
    """Why the fact and the quote disagree on "not", or ""."""
    table = word_table()
    shared = f.groups & ev.groups  # a "not" inside a paraphrase both share ("can not stand") is none
    # nor one inside a narrower word of it: "can not stand" (hating) says "Dislikes"
    shared |= {g for g in f.neg_groups | ev.neg_groups if table.broader.get(g, frozenset()) & shared}
    neg = table.negative  # "avoids" says "not" unless the other side says "avoid" too
    f_not = bool(f.neg_groups - shared) or any(n & ev.stems for n in f.negations) or bool(neg & f.stems - ev.stems)
    ev_not = bool(ev.neg_groups - shared) or any(n & f.stems for n in ev.negations) or bool(neg & ev.stems - f.stems)
    if f_not != ev_not:
        return "the fact says 'not', the quote does not" if f_not else "the quote says 'not', the fact does not"
    return ""


def says_otherwise(text: str, statement: str) -> str:
    """Why ``text`` (a fact, a diary sentence) does not keep ``statement`` (what the user said)
    *as the user said it*, or "": they disagree on "not"; the statement is about someone else
    and the text about the user, or the other way round; the statement asks, hedges or tells
    the past and the text says it is so now. Words are not compared here. Pure."""
    t_toks, s_toks = tokens(text), tokens(statement)
    f, ev = claims_of(t_toks), claims_of(s_toks)
    why = _negation(f, ev) or _stance(t_toks, f, s_toks, ev).why
    if why:
        return why.replace("the quote", "the statement").replace("the fact", "the text")
    theirs = stance.of(t_toks, word_table().stop)
    if theirs.party and not stance.of(s_toks, word_table().stop).party and not stance.mentions_party(s_toks):
        return f"the text is about '{theirs.party}', the statement is about the user"
    return ""


@dataclass(frozen=True)
class _How:
    why: str  # why the fact does not say it as the quote does, or ""
    forgiven: frozenset[str] = frozenset()  # words the fact may add ("Might", "Former") as the quote's stance


def _same_party(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two sets of party words name the same party, in any language ("daughter", 女儿)."""
    if a & b:
        return True
    if not a or not b:
        return False
    groups = claims_of(tokens(" ".join(sorted(a)))).groups
    return bool(groups & claims_of(tokens(" ".join(sorted(b)))).groups)


def _owned(party: str) -> bool:
    """Whether a party is the user's ("my dog", 我妹妹): a fact that names it ("Has a dog") may say
    the user has it; "her dog" is someone else's, and "Has a dog" from it is invented."""
    words = party.split()
    # one word: a fact's (or a note's) own subject, "Daughter: Mia", "Sister lives in Oslo"
    return (len(words) == 1 and party.isascii()) or (bool(words) and words[0].casefold() in (
        "my", "our", "user", "users", "user's")) or party.startswith("我")


def _sentences(toks: Sequence[Tok]) -> list[tuple[list[Tok], int]]:
    """Evidence cut into its sentences, each with where its quoted words start (after the frame)."""
    out: list[list[Tok]] = []
    for t in toks:
        if t.word == "." and not t.raw.isalnum() and t.stem == ".":
            out.append([])
            continue
        if not out or (t.initial and out[-1] and not t.frame and any(not x.frame for x in out[-1])):
            out.append([])
        out[-1].append(t)
    return [(s, next((i for i, t in enumerate(s) if not t.frame), 0)) for s in out if s]


def _stance(fact_toks: Sequence[Tok], f: Claims, framed: Sequence[Tok], ev: Claims,
            people: subjects.People | None = None) -> _How:
    """Whether the fact says what its quote says *as* the quote says it: about the user (not
    "my sister"), as so (not asked, hoped or maybe), now (not "used to", not "lived")."""
    stop = word_table().stop
    # a "?" of a clause that asks nothing the fact says is no question of it ("I play the cello, can you help?")
    # and its time is read from the clause that says the fact ("I was a teacher, now I'm a baker")
    sents = [(clauses.unasked(s, f), clauses.focus(f, s, at)) for s, at in _sentences(framed)]
    says = [stance.of(s, stop, focus) for s, focus in sents]
    each = [claims_of([t for t in s if not t.frame]) for s, _f in sents]
    others = [s for s in says if s.party]
    names = {k for k in f.anchors if not k.isdigit() and k not in MONTH_OF.values()}
    # the fact is about the other person when that person is its subject ("Sister lives in Oslo")
    # or it names the same party ("Has a sister, Lena"); a party word elsewhere in it is not
    # enough: "My sister has a cat" is no licence for "Has a cat"
    fact_parties = stance.party_words(fact_toks)
    # "I have a cat. Her name is Miso": a pronoun may stand for a party the user's own sentence names
    users = frozenset().union(*(stance.party_words(s) for (s, _f), st in zip(sents, says, strict=True)
                                if st.subject and not st.party))
    # "Partner is Sam, a teacher" -> "Sam is a teacher": the fact's subject is a name the party's sentence gives
    lead = fact_toks[0].word if fact_toks else ""
    theirs = [{t.word for t in s if t.name} for (s, _f), st in zip(sents, says, strict=True) if st.party]
    about = others and (bool(stance.of(fact_toks, stop).party) or any(lead in w for w in theirs) or any(
        names & s.party_words or (_same_party(fact_parties, s.party_words) and _owned(s.party))
        or (not s.party_words and (names - set(ev.anchors) or fact_parties & users))
        for s in others))
    if others and not about:
        if not any(s.subject and not s.party for s in says):
            return _How(f"the quote is about '{others[0].party}', the fact is about the user")
        # a merge of the user's words and someone else's: what only the other's sentence says
        table = word_table()
        claimed: list[tuple[str, Unit | str]] = [
            (u.shown, u) for u in f.units if not (u.stems and u.stems <= table.framing) and FRAMING not in u.groups]
        claimed += [(v, k) for k, v in f.anchors.items()]
        for shown, what in claimed:
            by = [i for i, c in enumerate(each) if (covered(what, c) if isinstance(what, Unit)
                                                    else what in c.anchors or what in c.stems)]
            if by and all(says[i].party for i in by):
                return _How(f"the quote says '{shown}' of '{says[by[0]].party}', the fact says it of the user")
    w = stance.words()
    # asked, hoped or past is read in the sentences that say the fact ("Can you help? I play the cello")
    reading = clauses.which(f, each)
    saying = [says[i] for i in reading]
    if people is not None:  # "Sam plays the cello" is the user's only when the user goes by Sam
        mentioned = {t.word for t in fact_toks}
        for i in reading:
            sent, at = sents[i]  # the subject of the clause that says the fact ("Greta left, I work with Mia")
            name = "" if says[i].party else subjects.lead_name(clauses.clause_at(sent, min(at, len(sent) - 1)))
            if name and name.casefold() not in mentioned and people.other(name):
                return _How(f"the quote is about '{name}', the fact is about the user")
    modal = next((s.modal for s in saying if s.modal), "")
    if modal and not stance.fact_modal(fact_toks):
        return _How("the quote asks, the fact says it is so" if modal == "?" else
                    f"the quote says '{modal}', the fact says it is so")
    past = next((s.past for s in saying if s.past), "")
    # "Married" is how it is now: "I was married" does not give it
    is_past = stance.fact_past([t for t in fact_toks if not (past in ("was", "were") and t.word in w.state)])
    if past and not is_past:
        return _How(f"the quote says '{past}', the fact says it is so now")
    for s in saying:
        if s.verb and not is_past and any(t.stem == s.verb_stem for t in fact_toks):
            return _How(f"the quote says '{s.verb}', the fact says it is so now")
    forgiven = (w.modal_fact if modal else frozenset()) | (w.past_fact if past else frozenset())
    return _How("", forgiven | {stem_of(x) for x in forgiven})


def _shifted(fact: str, known: Sequence[str]) -> str:
    """Why ``fact`` does not say what its old wording says *as* it says it, or "": the old wording
    is past or ended ("Was vegetarian", "Quit smoking", "Former nurse") and the fact is not; it
    asks, hedges or plans and the fact does not; it is about someone else ("Neighbour has a
    dog") and the fact is not. A fact's own words are read here, never a sentence's frame:
    rewording by id is no licence to move a fact into the present or onto the user."""
    stop = word_table().stop
    new = tokens(fact)
    olds = [tokens(k) for k in known]
    # "-ed" after "is" is how it is now ("Is married"): no past that keeps "was married"
    if any(_past(o, new) for o in olds) and not stance.fact_past(new):
        return "the old wording says it is past, the fact says it is so now"
    if any(stance.fact_modal(_hedges(o)) for o in olds) and not stance.fact_modal(new):
        return "the old wording says it may be, the fact says it is so"
    theirs = [(p, o) for o in olds if (p := stance.of(o, stop).party)]
    if theirs and not stance.of(new, stop).party and not any(
            stance.party_words(new) & stance.party_words(o) for _p, o in theirs):
        return f"the old wording is about '{theirs[0][0]}', the fact is about the user"
    return ""


def _past(old: Sequence[Tok], new: Sequence[Tok]) -> bool:
    """Whether an old wording says it is past: a past word ("Was", "Had", "Former", 以前), or an
    "-ed" verb the new wording puts in the present ("Lived in Oslo" -> "Lives in Oslo"); another
    "-ed" word is how it is now ("Based in Graz" -> "Lives in Graz", "Married")."""
    w = stance.words()
    stems = {t.stem for t in new if not t.word.endswith("ed")}
    text = "".join(t.word for t in old if not t.word.isascii())
    return any(t.word in w.past_fact or (t.word.endswith("ed") and t.word != t.stem and t.word not in w.lasting
                                         and t.stem in stems) for t in old) or any(
        x in text for x in w.past_fact if not x.isascii())


def _hedges(fact: Sequence[Tok]) -> list[Tok]:
    """A fact's words without a "wants" of a preference ("Wants concise replies" is a taste, not a
    plan; "Wants to move to Berlin" is one)."""
    return [t for i, t in enumerate(fact) if not (
        t.word in _WANT and (i + 1 >= len(fact) or fact[i + 1].word != "to"))]


_WANT = frozenset({"want", "wants", "wish", "wishes"})


def check(fact: str, receipt: Receipt | None, messages: Sequence[tuple[str, str]], *,
          known: Sequence[str] = (), reworded: bool = False,
          similarity: Callable[[str, str], float | None] | None = None, names: frozenset[str] = frozenset()) -> Check:
    """Decide one fact on its receipt. ``messages``: (role, text) of the consolidated messages,
    numbered from 1 as the prompt shows them. ``known``: what memory already says of it (the old
    wording of the fact an update rewords, the facts a merge joins): a fact that says no more
    than that needs no receipt (``kind`` ``stated``, no ``messages``). ``reworded``: the fact
    is ``known`` reworded by its id; one that says more than its old wording needs a receipt
    like an add (the reason then names what the old wording does not say). ``names``: the names
    memory says the user goes by (casefolded; :func:`subjects.names_in_memory`). Pure."""
    old = join(*(tokens(k) for k in known))
    why = (follows(fact, old) or _shifted(fact, known)) if known else ""
    if known and not why:
        return Check("stated")
    if receipt is None:
        if reworded and known:
            # a rewording by id that says more than the old wording needs a receipt like an add:
            # the id says which fact it is, never that the new words were said
            return Check("held", f"no receipt, and {why.replace('the quote', 'the old wording')}")
        return Check("held", "no receipt")
    if receipt.problem:
        return Check("held", receipt.problem, receipt.messages, receipt.quote)
    bad = [n for n in receipt.messages if not 1 <= n <= len(messages)]
    if bad:
        return Check("held", f"the receipt cites message #{bad[0]}, which is not in this conversation "
                             f"(it has {len(messages)})", receipt.messages, receipt.quote)
    texts = [t for _r, t in messages]

    def users_first(nums: Sequence[int]) -> list[int]:  # the user's words before the assistant's
        return sorted(nums, key=lambda n: messages[n - 1][0] != "user")

    where = _find(receipt.quote, users_first(receipt.messages), texts)
    if where is None:
        elsewhere = _find(receipt.quote, users_first(range(1, len(messages) + 1)), texts)
        if elsewhere is None:
            cited = ", ".join(f"#{n}" for n in receipt.messages)
            return Check("held", f"the quote is not in message {cited}", receipt.messages, receipt.quote)
        where = elsewhere  # the quote is there, under another number: what counts is where it is
    found, words = where
    evidence = join(words, *(tokens(k) for k in known))
    # an anchor the quote leaves out may come only from the message the quote is in, never
    # from another message the receipt cites (a receipt citing 12 messages is no licence)
    context = join(*(message_tokens(texts[n - 1]) for n in found))
    people = subjects.people([t for r, t in messages if r == "user"], [texts[n - 1] for n in found], names)
    why = follows(fact, evidence, context=context, similarity=similarity, people=people)
    if not why and known and follows(fact, words, context=context, similarity=similarity, people=people):
        # the fact needs the old wording's words ("ok thanks" as the quote, "Was vegetarian" for
        # "Is vegetarian"): then it keeps how the old wording says them
        why = _shifted(fact, known)
    if why:
        return Check("held", why, tuple(found), receipt.quote)
    stated = any(messages[n - 1][0] == "user" for n in found)
    return Check("stated" if stated else "inferred", "", tuple(found), receipt.quote)
