"""What a search query asks for: its content words, with the words of the asking left out.

Owns the query side of the ranked search (:mod:`ranking`): a question such as
"When did Caroline go to the LGBTQ support group?" is searched for *caroline,
lgbtq, support, group*, each word on its own (OR, ranked by BM25), never all of
them AND-ed. Dropped are English stop words (NLTK's list), the words a question
is made of ("when", "did", "would", "kind of"), and the words that ask about a
conversation rather than its subject ("say", "mention", "talk"): they are in
almost every message or in none, and either way say nothing about which one is
meant. A possessive "'s" is cut ("Caroline's" -> "caroline"). Chinese runs lose
the question words and particles (什么, 怎么, 吗, 的 ...) and are then split into
their overlapping character pairs like the index (:func:`text.cjk_split`), each
pair a term. A query made only of such words ("who is it?") is searched by all of
them rather than by none.

A query that names a month ("in June", "on October 13, 2023", "May 2023") or a
year asks about what was said then: :attr:`Terms.when` holds those periods as
prefixes of the index's UTC timestamps (``"2023-06"``, or ``"-06-"`` for a month
of any year, ``"2023-"`` for a year) and the ranking favours the passages dated
in them (:mod:`ranking`). "May" counts as the month only when written with a
capital inside the sentence or next to a number ("May I ask" does not). A
question that asks when ("When did…", "How long…", "What year…", "什么时候…")
sets :attr:`Terms.asks_when`: the ranking then favours the passages that say
when (a date, "yesterday", "two weeks ago"). A day named with its year ("on 7
July, 2023", "May 3, 2023") is :attr:`Terms.on`, the day before and after
included (timestamps are UTC): what was said that day is favoured again.

A word written with a capital inside a sentence ("What did Melanie paint?") may
be a person's name: :attr:`Terms.names` holds those of the content words, and
the ranking favours the messages of whoever is called by that name in their
conversation (:mod:`ranking`, step 6). The first word of a sentence is not
taken for a name (every sentence starts with a capital), nor a month or a weekday.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from memtray.core.search.text import cjk_split, has_cjk

# NLTK's English stop words (nltk.corpus.stopwords), apostrophes as typed or not
_STOP = """
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him
his himself she she's her hers herself it it's its itself they them their theirs themselves what which who
whom this that that'll these those am is are was were be been being have has had having do does did doing
a an the and but if or because as until while of at by for with about against between into through during
before after above below to from up down in out on off over under again further then once here there when
where why how all any both each few more most other some such no nor not only own same so than too very s
t can will just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't
doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't
shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
"""
# how questions are asked, and how a conversation is referred to
_ASKING = """
whose would could might may must shall ever also kind kinds sort type types likely lot lots something
anything thing things many much often one ones get got
say says said saying tell tells told mention mentions mentioned talk talks talked discuss discussed
share shares shared ask asks asked
"""
#: NLTK's list as it is (the BM25 baseline of bench/locomo_recall.py uses it)
NLTK_STOP_WORDS = frozenset(_STOP.split())
STOP_WORDS = NLTK_STOP_WORDS | frozenset(_ASKING.split()) | frozenset(
    w.replace("'", "") for w in _STOP.split() if "'" in w
)

#: Chinese question words and particles, removed from a query before it is split into pairs
_CJK_ASKING = re.compile("什么时候|为什么|什么|怎么样|怎么|怎样|哪里|哪儿|哪个|哪些|多少|是不是|有没有|谁|吗|呢|吧|的")

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*\*?")


@dataclass(frozen=True)
class Terms:
    """The searchable terms of a query: ``words`` as typed (lower case, for marking the
    excerpts) and ``fts`` (each one a quoted FTS5 string, a CJK pair or a ``word*`` prefix)."""

    words: tuple[str, ...]
    fts: tuple[str, ...]
    #: the periods the query names, as prefixes of ISO timestamps (module doc)
    when: tuple[str, ...] = ()
    #: the query asks when something happened (module doc)
    asks_when: bool = False
    #: the days the query names with their year, a day either side (time zones), as ISO prefixes
    on: tuple[str, ...] = ()
    #: the terms of ``fts`` the query writes like a name (a capital inside a sentence; module doc)
    names: tuple[str, ...] = ()


def content_words(query: str, *, fallback: bool = True) -> list[str]:
    """The query's content words, lower case, in order, each once (module doc). With
    ``fallback`` a query of stop words only is all its words, else it is none."""
    text = query.replace("\x00", " ")
    if has_cjk(text):
        text = cjk_split(_CJK_ASKING.sub(" ", text))
    found: list[str] = []
    every: list[str] = []
    for piece in text.split():
        if has_cjk(piece):  # a character pair (or a lone character, which no pair matches)
            if len(piece) > 1:
                found.append(piece)
            every.append(piece)
            continue
        for m in _WORD.finditer(piece.lower()):
            word = m.group().replace("\u2019", "'")
            prefix = "*" if word.endswith("*") else ""
            stem = word.rstrip("*")
            if stem.endswith("'s"):
                stem = stem[:-2]
            if not stem:
                continue
            every.append(stem + prefix)
            if stem not in STOP_WORDS and stem.replace("'", "") not in STOP_WORDS:
                found.append(stem + prefix)
    return list(dict.fromkeys(found or (every if fallback else [])))


def terms_of(query: str) -> Terms:
    """:func:`content_words` as FTS5 strings: each quoted, a trailing ``*`` kept outside."""
    words = content_words(query)
    fts = []
    for w in words:
        core = w.rstrip("*")
        quoted = '"' + core.replace('"', '""') + '"'
        fts.append(quoted + "*" if core != w else quoted)
    capital = set(capitalised(query))
    named = tuple(f for w, f in zip(words, fts, strict=True) if w in capital and w not in _CALENDAR)
    return Terms(tuple(w.rstrip("*") for w in words), tuple(fts), periods(query), asks_when(query), days(query),
                 named)


#: capitalised words that are not anyone's name
_CALENDAR = frozenset(("january", "february", "march", "april", "may", "june", "july", "august", "september",
                       "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
                       "saturday", "sunday"))
_NAME = re.compile(r"(?<![\w'’])[A-Z][a-z]+(?:['’]s)?\b")


def capitalised(query: str) -> list[str]:
    """The words of ``query`` written with a capital and then lower case (a possessive
    "'s" cut), lower-cased, except the first word of each sentence (module doc)."""
    out = []
    for m in _NAME.finditer(query):
        before = query[: m.start()].rstrip()
        if not before or before[-1] in ".!?:;\"“(":
            continue
        word = m.group().lower().replace("\u2019", "'")
        out.append(word[:-2] if word.endswith("'s") else word)
    return out


_ASKS_WHEN = re.compile(
    r"^\W*(?:when\b|since when\b|how long\b|what (?:time|date|day|month|year)\b|which (?:day|month|year)\b)"
    r"|什么时候|几时|哪天|哪年|多久", re.IGNORECASE)


def asks_when(query: str) -> bool:
    """Whether ``query`` asks when something happened (module doc)."""
    return _ASKS_WHEN.search(query.strip()) is not None


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<![\d.:/-])(19\d\d|20\d\d)(?![\d.:/-])")
#: "May" the month rather than the verb: next to a number ("May 2023", "3 May") or capital inside a sentence
_MAY_NUMBER = re.compile(r"\d\s*(?:st|nd|rd|th)?\s*(?:of\s+)?may\b|\bmay\s+\d", re.IGNORECASE)


def periods(query: str) -> tuple[str, ...]:
    """The months and years a query names, as timestamp prefixes (module doc)."""
    years = list(dict.fromkeys(_YEAR.findall(query)))
    months: list[int] = []
    for m in _MONTH.finditer(query):
        name = m.group(1)
        if name.lower() == "may":
            before = query[: m.start()].rstrip()
            if not (_MAY_NUMBER.search(query) or (name == "May" and before and before[-1] not in ".!?")):
                continue
        months.append(_MONTHS.index(name.lower()) + 1)
    months = list(dict.fromkeys(months))
    if months:
        if years:
            return tuple(f"{y}-{m:02d}" for y in years for m in months)
        return tuple(f"-{m:02d}-" for m in months)
    return tuple(f"{y}-" for y in years)


_DAY = re.compile(
    r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(" + "|".join(_MONTHS) + r"),?\s+((?:19|20)\d\d)\b"
    r"|\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+((?:19|20)\d\d)\b", re.IGNORECASE)


def days(query: str) -> tuple[str, ...]:
    """The days a query names with their year ("on 7 July, 2023", "May 3, 2023"), each with
    the day before and after (a message's timestamp is UTC), as ISO date prefixes."""
    out: list[str] = []
    for m in _DAY.finditer(query):
        day, month, year = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(5), m.group(4), m.group(6))
        try:
            named = date(int(year), _MONTHS.index(month.lower()) + 1, int(day))
        except ValueError:  # "31 February"
            continue
        out.extend((named + timedelta(days=k)).isoformat() for k in (-1, 0, 1))
    return tuple(dict.fromkeys(out))


def dated_in(ts: str, when: tuple[str, ...]) -> bool:
    """Whether the ISO timestamp ``ts`` falls in one of the periods of :func:`periods`."""
    return any(ts[4:8] == p if p.startswith("-") else ts.startswith(p) for p in when)
