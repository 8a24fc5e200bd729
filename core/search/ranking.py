"""The ranked keyword search behind ``hybrid``: BM25 over any of the query's words, with context.

Owns the ranking that the default search (hybrid, and its keyword-only form when
there are no vectors) and recall in a turn use. ``--mode keyword`` keeps the
strict rules of :mod:`index` (every word, then substrings).

1. **Terms**: the query's content words (:mod:`query`: stop words and question
   words dropped), each one on its own, OR-ed: a passage that has the rare words
   of a question ranks high without having all of them.
2. **BM25** over every passage that has any of them (SQLite FTS5's ``bm25()``:
   k1 1.2, b 0.75, the porter stems of the index). Each word costs a score per
   passage holding it, so the words are taken rarest first while the passages
   they hold stay within :data:`POSTINGS` (a word in a tenth of 100 000 entries
   is left out once rarer words are there: its idf would add little anyway). When
   even the rarest word is that common, the newest :data:`WINDOW` passages that
   have *every* word are ranked instead.
3. **Context**: a message is read with the ones around it. Of the best
   :data:`SPREAD_FROM` messages, each lends :data:`NEIGHBOUR` of its score to the
   message before and after it in its session and :data:`NEXT_NEIGHBOUR` to the
   ones two away: the answer to "where did Maria go hiking?" is often the turn
   after the one that says "hiking" ("Mount Rainier, last week!"). On the LoCoMo
   conversations this is worth 0.09 of recall@5 (bench/BENCHMARKS.md). A message
   that ends by asking (:func:`asks`) lends :data:`TO_ANSWER` (all) of its score
   to the message after it, and keeps :data:`ASKER` of its own: "What did you
   take away from it?" holds the words of "What did Caroline take away from the
   book?", and the turn after it holds the answer. Worth 0.029 of recall@5 on the
   tuning conversations (on each of them) and 0.024 held out.
4. **Coverage** (document expansion by the window): a passage is read with the
   :data:`COVER_REACH` messages either side of it in its session, and its score
   is multiplied by ``1 + COVER_WEIGHT * c ** 2``, ``c`` the share of the query's
   words (each weighed by its idf) that the window holds. A conversation tells one
   thing over several turns: "How did Melanie feel watching the meteor shower?" is
   answered by a turn with none of those words ("I felt tiny and in awe") between
   turns that hold all of them, while a turn elsewhere that repeats only the
   rarest word matches BM25 better and is not about it. The idf of a word is
   FTS5's own (``log((N - df + 0.5) / (df + 0.5))``), from the postings of the
   words step 2 used (so it reads no more than :data:`POSTINGS` of them; the
   words step 2 left out as too common are left out here too). On LoCoMo this is worth 0.047 of recall@5 on the tuning conversations
   and 0.021 held out (bench/BENCHMARKS.md).
5. **When**: a query that names a month or a year ("When did Melanie go camping
   in June?", "what did I say about the flat in March 2024") multiplies the score
   of the passages dated in that period by :data:`IN_PERIOD` (:attr:`Terms.when`).
   They are not filtered: the words decide which passages are candidates, and a
   plan for June is often told in May. On LoCoMo this is worth 0.02 of recall@5
   (it helped on each tuning conversation and on the held-out ones). A day named
   with its year ("on 7 July, 2023", :attr:`Terms.on`) multiplies the passages
   dated within a day of it by :data:`ON_DAY` again: the month cannot tell apart
   the talks of one month (+0.007 of recall@5 tuning, +0.011 held out). A question
   that asks when (:attr:`Terms.asks_when`) multiplies by :data:`SAYS_WHEN` the
   score of the best :data:`SPREAD_FROM` passages that say when ("last week",
   "in 2022", "yesterday", a weekday or a month): the answer to "when did she go
   camping?" is the turn that says "two weekends ago", not the one that asks
   "what's your best camping memory?".
6. **Who**: a query that names someone (:attr:`Terms.names`: "What did Melanie
   paint?") favours what that person said. Nobody's messages carry their name:
   the other side's do, when it speaks to them ("Thanks, Melanie!", "Hey
   Melanie, how was it?"), so in each session where a name is said that way
   (:func:`addresses`) by one role at least :data:`ADDRESSED` times as often as
   by the other, the messages of the other role are that person's, and their
   score is multiplied by :data:`SPEAKER`. In a session where nobody says the
   name that way, the role the whole history addresses by it is taken (as read
   in the messages holding it around the candidates and in its newest
   :data:`NAMES_READ` ones): a person keeps their side of a conversation from
   one session to the next. A word nobody is addressed by (a place, a brand)
   changes nothing, and a query that names both people of a conversation
   favours neither. A nickname ("Mel") is another word. On LoCoMo, where 657 of
   the 678 questions that name one of the two speakers have evidence said by
   that speaker, this is worth 0.045 of recall@5 on the tuning conversations and
   0.013 held out (bench/BENCHMARKS.md); it costs about 8 ms of CPU per query
   over 100 000 messages.

Scores are comparable within one query only. Equal scores go to the newer passage.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from memtray.core.search.index import SearchIndex, filter_sql
from memtray.core.search.query import Terms, dated_in, terms_of
from memtray.core.search.text import (
    CLOSE,
    ELLIPSIS,
    OPEN,
    Hit,
    excerpt,
    has_cjk,
    tidy,
    words_pattern,
)

#: passages scored per query at most (the sum of the document frequencies of the words used)
POSTINGS = 10_000
#: when the rarest word alone is more common than POSTINGS: the newest passages with every word ranked
WINDOW = 2000
#: the best passages that lend their score to their neighbours
SPREAD_FROM = 100
#: passages taken by their own score before the neighbours' shares are added
KEEP = 300
#: share of a message's score lent to the message before and after it, and to those two away
NEIGHBOUR = 0.5
NEXT_NEIGHBOUR = 0.3
#: share a message that asks lends to the message after it (its answer), and what it keeps of its own
TO_ANSWER = 1.0
ASKER = 0.7
#: a passage's window: the messages this many turns either side of it in its session (step 4)
COVER_REACH = 3
#: how much a window holding all of the query's words multiplies a passage's score (step 4)
COVER_WEIGHT = 2.0
#: factor for a passage dated in a period the query names (step 5 of the module doc)
IN_PERIOD = 2.0
#: factor for a passage dated on a day the query names (or a day either side), on top of IN_PERIOD
ON_DAY = 2.0
#: factor for a passage that says when, for a question that asks when (step 5)
SAYS_WHEN = 1.3
#: factor for a message said by the person a query names (step 6)
SPEAKER = 2.0
#: how many times more often one role must address a name than the other for the other to be it (step 6)
ADDRESSED = 2.0
#: besides those around the candidates, the newest messages holding a name read to tell who it is (step 6)
NAMES_READ = 200
#: what says when in a passage (English; CJK: a date or a time word)
_TIME_WORDS = re.compile(
    r"\b(?:yesterday|tomorrow|tonight|today|ago|last|next|since|recently|earlier|later|weekend|week|month|year"
    r"|morning|afternoon|evening|night|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january"
    r"|february|march|april|may|june|july|august|september|october|november|december|(?:19|20)\d\d)\b"
    r"|昨天|今天|明天|上周|下周|上个月|去年|今年|明年|\d+月|\d+年|\d+日|\d+号", re.IGNORECASE)
_SNIPPET_SQL = (f"SELECT snippet(docs, 0, '{OPEN}', '{CLOSE}', '{ELLIPSIS}', 16) "
                "FROM docs WHERE docs MATCH ? AND rowid = ?")
#: how far (in seqs) a neighbour in the same session is looked for
_REACH = 12


_GREETING = r"(?:hey|hi|hello|hiya|thanks|thank you|thx|bye|dear|congrats|congratulations|yo|oh|wow|sorry)"


def addresses(text: str, name: str) -> bool:
    """Whether ``text`` speaks to ``name``: the name after a greeting or a comma (or at the
    start) and before a comma, a stop or the end ("Thanks, Melanie!", "Hey Mel, how are
    you?"), as opposed to naming someone in passing ("I met Melanie at the park")."""
    return _addressing(name).search(text) is not None


@lru_cache(maxsize=64)
def _addressing(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?:^|[,.!?;:]\s*|\b{_GREETING}\s*,?\s*){re.escape(name)}\s*(?:[,.!?;:)]|$)",
                      re.IGNORECASE)


def asks(text: str) -> bool:
    """Whether a message ends by asking (step 3 of the module doc)."""
    return text.rstrip().endswith(("?", "？"))


@dataclass(frozen=True)
class Scored:
    """A passage's score: its own BM25 (``own``, 0 when only its neighbours matched) plus
    what its neighbours lent it."""

    seq: int
    score: float
    own: float


class Ranker:
    """BM25-with-context ranking over a :class:`SearchIndex` (module doc)."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index

    def scores(self, query: str | Terms, *, kind: str | None = None, session: str | None = None,
               limit: int = 20) -> list[Scored]:
        """The ``limit`` best passages for ``query``, best first (module doc)."""
        return self._rank(terms_of(query) if isinstance(query, str) else query, kind, session, limit)[0]

    def _rank(self, terms: Terms, kind: str | None, session: str | None,
              limit: int) -> tuple[list[Scored], str]:
        if not terms.fts:
            return [], ""
        filters, params = filter_sql(kind, session)
        with self.index.lock:
            try:
                found, match, used = self._bm25(terms, filters, params, max(KEEP, limit))
                postings = self._postings(used)
            except sqlite3.OperationalError:  # a query we failed to make safe: no hits, not a crash
                return [], ""
            own = {seq: f[0] for seq, f in found.items()}
            total = self._with_context(own, found) if kind in (None, "message") else dict(own)
            around = self._cover(total, postings)
            if terms.asks_when:
                best = sorted(total, key=lambda s: (-total[s], -s))[:SPREAD_FROM]
                for seq, doc in self.index.documents(best).items():
                    if _TIME_WORDS.search(doc[4]):
                        total[seq] *= SAYS_WHEN
            if terms.when or terms.on:
                for seq, ts in self._dates(total).items():
                    if dated_in(ts, terms.when):
                        total[seq] *= IN_PERIOD
                    if dated_in(ts, terms.on):
                        total[seq] *= ON_DAY
            if terms.names:
                self._speakers(total, terms, postings, around)
        order = sorted(total, key=lambda s: (-total[s], -s))[:limit]
        return [Scored(s, round(total[s], 6), round(own.get(s, 0.0), 6)) for s in order], match

    def hits(self, query: str, *, kind: str | None = None, session: str | None = None,
             limit: int = 20, exclude: Iterable[int] = (), mode: str = "keyword") -> list[Hit]:
        """:meth:`scores` as hits, their excerpts around the query's words (FTS5's own
        snippet, which marks every form of a word: "Zürich" for "zurich", "running" for "run")."""
        skip = set(exclude)
        terms = terms_of(query)
        ranked, match = self._rank(terms, kind, session, limit + len(skip))
        scored = [s for s in ranked if s.seq not in skip][:limit]
        docs = self.index.documents(s.seq for s in scored)
        pattern = words_pattern(list(terms.words))
        out = []
        for s in scored:
            doc = docs.get(s.seq)
            if doc is None:
                continue
            k, sess, role, ts, text = doc
            snip = self._snippet(match, s.seq) if s.own else None
            if snip is None or (OPEN not in snip and has_cjk(snip)):  # CJK pairs were matched, not words
                snip = excerpt(text, pattern)
            out.append(Hit(k, s.seq, sess, role, ts, tidy(snip), s.score, mode, s.own or None))
        return out

    def _snippet(self, match: str, seq: int) -> str | None:
        with self.index.lock:
            try:
                row = self.index.db.execute(_SNIPPET_SQL, (match, seq)).fetchone()
            except sqlite3.OperationalError:
                return None
        return None if row is None else str(row[0])

    # --- the parts -------------------------------------------------------------------

    def _df(self, term: str, cap: int) -> int:
        (n,) = self.index.db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM docs WHERE docs MATCH ? LIMIT ?)", (term, cap + 1)
        ).fetchone()
        return int(n)

    def _postings(self, used: Iterable[str]) -> dict[str, set[int]]:
        """``term -> the passages holding it`` for the terms the ranking used (together
        within :data:`POSTINGS`, so this reads no more than the ranking did)."""
        return {t: {r for (r,) in self.index.db.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (t,))}
                for t in used}

    def _bm25(self, terms: Terms, filters: str, params: list[Any],
              keep: int) -> tuple[dict[int, tuple[float, str | None, str]], str, list[str]]:
        """``seq -> (BM25, session, kind)`` of the ``keep`` best passages, the FTS5 match and
        the terms it used (all of them when even the rarest is in more than POSTINGS passages)."""
        counted = sorted(((self._df(t, POSTINGS), t) for t in dict.fromkeys(terms.fts)), key=lambda x: x[0])
        used: list[str] = []
        budget = 0
        for df, term in counted:
            if df == 0:
                continue
            if budget + df > POSTINGS and used:
                break
            used.append(term)
            budget += df
        if not used:
            return {}, "", []
        cols = "SELECT d.seq, -bm25(docs) AS score, d.session, d.kind FROM docs JOIN documents AS d ON d.seq = docs.rowid"
        if budget > POSTINGS:  # even the rarest word is everywhere: the newest with every word
            match = " AND ".join(terms.fts)
            sql = (f"SELECT * FROM ({cols} WHERE docs MATCH ?{filters} ORDER BY docs.rowid DESC LIMIT ?) "
                   "ORDER BY score DESC, seq DESC LIMIT ?")
            rows = self.index.db.execute(sql, [match, *params, WINDOW, keep]).fetchall()
        else:
            match = " OR ".join(used)
            sql = f"{cols} WHERE docs MATCH ?{filters} ORDER BY score DESC, d.seq DESC LIMIT ?"
            rows = self.index.db.execute(sql, [match, *params, keep]).fetchall()
        found = {int(seq): (float(score), sess, kind) for seq, score, sess, kind in rows if score > 0}
        return found, match, used if budget <= POSTINGS else []

    def _with_context(self, own: dict[int, float], found: dict[int, tuple[float, str | None, str]],
                      ) -> dict[int, float]:
        total = dict(own)
        best = [seq for seq in sorted(own, key=lambda s: (-own[s], -s))[:SPREAD_FROM] if found[seq][2] == "message"]
        sessions = self._message_sessions({n for seq in best for n in range(seq - _REACH, seq + _REACH + 1)})
        texts = self.index.documents(best)
        for seq in best:
            same = [n for n in range(seq - _REACH, seq + _REACH + 1) if sessions.get(n, "\0") == found[seq][1]]
            at = same.index(seq) if seq in same else -1
            if at < 0:
                continue
            before, after = same[:at][::-1], same[at + 1 :]
            asking = seq in texts and asks(texts[seq][4])
            for lend, near in ((NEIGHBOUR, 0), (NEXT_NEIGHBOUR, 1)):
                for side in (before, after):
                    if len(side) > near:
                        share = TO_ANSWER if asking and side is after and near == 0 else lend
                        total[side[near]] = total.get(side[near], 0.0) + share * own[seq]
            if asking:
                total[seq] -= (1.0 - ASKER) * own[seq]
        return total

    def _cover(self, total: dict[int, float], postings: dict[str, set[int]]) -> dict[int, str | None] | None:
        """Step 4 of the module doc: each passage's score times ``1 + COVER_WEIGHT * c ** 2``,
        ``c`` the share (by idf) of the query's words found in its window. Returns the
        sessions of the messages around the passages it read (None: it read none)."""
        count = self.index.count()
        # the words the ranking left out (step 2: too common) are left out here too
        idf = {t: w for t, p in postings.items()
               if (w := math.log((count - len(p) + 0.5) / (len(p) + 0.5))) > 0}
        whole = sum(idf.values())
        if len(idf) < 2 or not total:  # one word: every window that has it covers all
            return None
        sessions = self._message_sessions(
            {n for seq in total for n in range(seq - _REACH, seq + _REACH + 1)})
        for seq in total:
            window = self._window(seq, sessions)
            covered = sum(w for t, w in idf.items() if not postings[t].isdisjoint(window))
            total[seq] *= 1.0 + COVER_WEIGHT * (covered / whole) ** 2
        return sessions

    def _speakers(self, total: dict[int, float], terms: Terms, postings: dict[str, set[int]],
                  around: dict[int, str | None] | None) -> None:
        """Step 6 of the module doc: the messages of whom the query names, times :data:`SPEAKER`.
        ``around``: the messages near the passages, as step 4 read them (None: read here)."""
        roles = self._message_roles(total)
        near = set(around) if around is not None else {
            n for seq in total for n in range(seq - _REACH, seq + _REACH + 1)}
        named: set[tuple[str | None, str]] = set()  # (session, role); session None: any session
        for term, word in zip(terms.fts, terms.words, strict=True):
            if term not in terms.names:
                continue
            holding = postings.get(term)
            if holding is None:  # too common for the ranking (step 2): its newest passages only
                holding = self._newest(term, NAMES_READ)
            # who is called by it around the candidates, and in the history (its newest mentions)
            read = (holding & near) | set(sorted(holding)[-NAMES_READ:])
            said: dict[str | None, Counter[str]] = defaultdict(Counter)
            for kind, sess, role, _ts, text in self.index.documents(read).values():
                if kind == "message" and role and addresses(text, word):
                    said[sess][role] += 1
                    said[None][role] += 1
            for sess, by in said.items():
                for role, other in (("user", "assistant"), ("assistant", "user")):
                    if by[role] >= ADDRESSED * by[other]:
                        named.add((sess, other))
        if not named:
            return
        told = {sess for sess, _role in named if sess is not None}
        for seq, (sess, role) in roles.items():
            if (sess, role) in named or (sess not in told and (None, role) in named):
                total[seq] *= SPEAKER

    def _newest(self, term: str, limit: int) -> set[int]:
        """The newest ``limit`` passages holding ``term``."""
        return {r for (r,) in self.index.db.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rowid DESC LIMIT ?", (term, limit))}

    def _message_roles(self, seqs: Iterable[int]) -> dict[int, tuple[str | None, str | None]]:
        """``seq -> (session, role)`` of the messages among ``seqs``."""
        wanted = sorted(seqs)
        out: dict[int, tuple[str | None, str | None]] = {}
        for i in range(0, len(wanted), 900):
            chunk = wanted[i : i + 900]
            marks = ",".join("?" * len(chunk))
            for seq, sess, role in self.index.db.execute(
                f"SELECT seq, session, role FROM documents WHERE kind = 'message' AND seq IN ({marks})", chunk
            ):
                out[int(seq)] = (sess, role)
        return out

    @staticmethod
    def _window(seq: int, sessions: dict[int, str | None]) -> list[int]:
        """``seq`` and the :data:`COVER_REACH` messages either side of it in its session
        (``seq`` alone for a diary entry or a memory revision)."""
        if seq not in sessions:
            return [seq]
        same = [n for n in range(seq - _REACH, seq + _REACH + 1) if n in sessions and sessions[n] == sessions[seq]]
        at = same.index(seq)
        return same[max(0, at - COVER_REACH) : at + COVER_REACH + 1]

    def _dates(self, seqs: Iterable[int]) -> dict[int, str]:
        """``seq -> ts`` of the documents among ``seqs``."""
        wanted = sorted(seqs)
        out: dict[int, str] = {}
        for i in range(0, len(wanted), 900):
            chunk = wanted[i : i + 900]
            marks = ",".join("?" * len(chunk))
            for seq, ts in self.index.db.execute(f"SELECT seq, ts FROM documents WHERE seq IN ({marks})", chunk):
                out[int(seq)] = str(ts)
        return out

    def _message_sessions(self, seqs: set[int]) -> dict[int, str | None]:
        """``seq -> session`` of the messages among ``seqs``."""
        wanted = sorted(seqs)
        out: dict[int, str | None] = {}
        for i in range(0, len(wanted), 900):
            chunk = wanted[i : i + 900]
            marks = ",".join("?" * len(chunk))
            for seq, sess in self.index.db.execute(
                f"SELECT seq, session FROM documents WHERE kind = 'message' AND seq IN ({marks})", chunk
            ):
                out[int(seq)] = sess
        return out
