"""Stable fact identity: every fact of MEMORY.md has an id from its first write (pure).

Where the ids live: in the event log, never in MEMORY.md. Each ``memory.written``
event carries ``facts = {"ids": [...], "next": N}``: the id of every fact of its
``memory`` text in document order (as :func:`factdiff.parse` reads it) and the next
number to hand out. MEMORY.md and its git history stay plain markdown. A
:class:`Ledger` is one revision's facts with their ids.

* New ids are ``F1``, ``F2``, ... (short: the prompt shows one per fact). Events
  written before ids existed have none; their facts get the old content ids
  (:attr:`factdiff.Fact.id`, 8 hex digits) on replay, which is deterministic and
  what those events' fact diffs already name. The two forms never collide.
* Text written outside the consolidation protocol (a hand edit, ``remember``,
  ``forget``, a restore) gets its ids from the previous revision by :func:`attach`:
  same text, then (for a hand edit) the fact edited in place -- any words, but the
  same names, numbers, dates and places (:func:`compatible`) --, then :func:`pair`,
  the precise matcher; what is left is new and gets a new id.
* :func:`pair` is the fallback for a model reply that lost its ids. Two facts that
  differ in a name, a number, a date or a place (:func:`anchors`) are never one
  fact reworded; a negation flip never is either.
* :func:`render` shows a ledger to the model with ids (``- [F12] Lives in Lyon``);
  :func:`read_markers` takes the ids (and ``[#3, #5]`` source message numbers) back
  out of its reply, forgiving the usual mangling (``[f12]``, ``[id: F12]``,
  ``(F12)``, several ids on one merged bullet).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memtray import resources
from memtray.core.log.payloads_memory import FactLedger
from memtray.core.memory import factdiff, timing
from memtray.core.memory.factdiff import Fact

__all__ = [
    "Ledger",
    "Marked",
    "anchors",
    "attach",
    "compatible",
    "content",
    "covers",
    "has_word",
    "id_key",
    "is_id",
    "new_id",
    "pair",
    "read_markers",
    "render",
]

_NEW_ID_RE = re.compile(r"F([1-9]\d{0,8})")
_LEGACY_ID_RE = re.compile(r"[0-9a-f]{8}(?:-\d+)?")


def new_id(n: int) -> str:
    return f"F{n}"


def is_id(token: str) -> bool:
    """Whether ``token`` has the form of a fact id (new or legacy)."""
    return bool(_NEW_ID_RE.fullmatch(token) or _LEGACY_ID_RE.fullmatch(token))


def id_key(token: str) -> str | None:
    """A fact id from what a model or a user typed (``f12``, ``F-12``, ``id:F12``, ``#F12``),
    or None when it does not look like one."""
    t = token.strip().strip("[](){}<>#*`'\"").strip()
    t = re.sub(r"^(?:fact[\s_:=-]*)?(?:id\s*[:=]?\s*)?", "", t, flags=re.IGNORECASE)
    m = re.fullmatch(r"[Ff][\s_-]?0*([1-9]\d{0,8})", t) or re.fullmatch(
        r"(?:fact|id)[\s_:=#-]*0*([1-9]\d{0,8})", token.strip().strip("[](){}<>#*`'\"").strip(), re.IGNORECASE)
    if m:
        return new_id(int(m.group(1)))
    if _LEGACY_ID_RE.fullmatch(t.lower()):
        return t.lower()
    return None


@dataclass(frozen=True)
class Ledger:
    """The facts of one revision, each with its stable id (``Fact.id``), in document order."""

    facts: tuple[Fact, ...]
    next: int = 1

    @classmethod
    def of(cls, text: str, info: FactLedger | Mapping[str, Any] | None = None) -> Ledger:
        """The ledger of a ``memory.written`` event's text and its ``facts`` member (absent in
        events written before ids existed: their content ids are used). ``info`` may be a
        peer's member as it came, so its shape is checked here."""
        facts = factdiff.parse(text)
        if isinstance(info, Mapping):
            ids = info.get("ids")
            nxt = info.get("next")
            if isinstance(ids, list) and len(ids) == len(facts) and len(set(ids)) == len(ids):
                return cls(tuple(replace(f, id=str(i)) for f, i in zip(facts, ids, strict=True)),
                           int(nxt) if isinstance(nxt, int) else _next_after(ids))
        return cls(tuple(facts), 1)

    @classmethod
    def with_ids(cls, text: str, ids: Sequence[str], next_id: int) -> Ledger:
        facts = factdiff.parse(text)
        if len(ids) != len(facts):
            raise ValueError(f"{len(ids)} ids for {len(facts)} facts")
        return cls(tuple(replace(f, id=i) for f, i in zip(facts, ids, strict=True)), next_id)

    @property
    def ids(self) -> list[str]:
        return [f.id for f in self.facts]

    def get(self, fact_id: str) -> Fact | None:
        return next((f for f in self.facts if f.id == fact_id), None)

    def to_json(self) -> FactLedger:
        return {"ids": self.ids, "next": self.next}


def _next_after(ids: Sequence[str]) -> int:
    nums = [int(m.group(1)) for i in ids if (m := _NEW_ID_RE.fullmatch(i))]
    return max(nums, default=0) + 1


_MARKER_RE = re.compile(r"^(\s*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?)")


def render(ledger: Ledger, text: str | None = None) -> str:
    """The memory as the model sees it: ``text`` (the MEMORY.md the ledger names) with each
    fact's id after its list marker (``- [F12] Lives in Lyon``); without ``text``, sections
    and one bullet per fact."""
    if text is not None:
        spans = factdiff.spans(text)
        if [f.norm for f, _a, _b in spans] == [f.norm for f in ledger.facts]:
            lines = text.split("\n")
            for f, (_fact, first, _end) in zip(ledger.facts, spans, strict=True):
                m = _MARKER_RE.match(lines[first])
                at = m.end() if m else 0
                lines[first] = f"{lines[first][:at]}[{f.id}] {lines[first][at:]}"
            return "\n".join(lines).strip()
    out: list[str] = []
    section: str | None = None
    for f in ledger.facts:
        if f.section != section:
            section = f.section
            if out:
                out.append("")
            if section:
                out.append(f"## {section}")
        out.append(f"- [{f.id}] {f.text}")
    return "\n".join(out)


# --- reading a reply -------------------------------------------------------------------

@dataclass(frozen=True)
class Marked:
    """A reply's MEMORY.md without its markers, and the markers of each of its facts."""

    text: str
    facts: list[Fact]
    ids: list[list[str]]  # ids written on each fact, in order (several on a merged bullet)
    bad_ids: list[list[str]]  # bracketed tokens that were meant as ids but are not ones
    sources: list[list[int]]  # message numbers cited by each fact ([#3, #5])


_LEAD_RE = re.compile(r"^(\s*(?:(?:[-*+]|\d{1,9}[.)])\s+)?)((?:[\[(\{]\s*(?:id\s*[:=]?\s*)?[#A-Za-z0-9_,;:= -]*\d[#A-Za-z0-9_,;:= -]*[\])\}]\s*)+)")
_TAIL_RE = re.compile(r"\s*((?:[\[(\{]\s*(?:id\s*[:=]?\s*|src\s*[:=]?\s*|sources?\s*[:=]?\s*|msgs?\s*[:=]?\s*)?#?[A-Za-z]?\d[#A-Za-z0-9_,;:= -]*[\])\}]\s*)+)$")
_GROUP_RE = re.compile(r"[\[(\{]([^\])\}]*)[\])\}]")
_SRC_TOKEN_RE = re.compile(r"#\s*(\d{1,6})")


def _read_group(group: str, ids: list[str], bad: list[str], sources: list[int]) -> bool:
    """Read one bracketed marker; False when it is ordinary text ("(2019)", "[draft]")."""
    body = group.strip()
    low = body.lower()
    if "#" in body or re.match(r"(?:src|sources?|msgs?)\b", low):
        nums = [int(n) for n in _SRC_TOKEN_RE.findall(body)]
        if not nums:
            nums = [int(n) for n in re.findall(r"\d{1,6}", body)]
        sources.extend(nums)
        return bool(nums)
    tokens = [t for t in re.split(r"[,;\s]+", re.sub(r"^(?:fact\s*)?ids?\s*[:=]?\s*", "", body, flags=re.I)) if t]
    if not tokens:
        return False
    keys = [id_key(t) for t in tokens]
    if all(k is not None for k in keys):
        ids.extend(k for k in keys if k is not None)
        return True
    if all(re.fullmatch(r"[A-Za-z]{1,3}[-_]?\d{1,9}", t) for t in tokens):
        bad.extend(tokens)  # looks like an id of another shape ("X12", "ID7"): not one of ours
        return True
    return False


def read_markers(reply: str) -> Marked:
    """Strip the id and source markers a model wrote on its facts; see the module docstring.

    A marker is a bracketed group at the start of a bullet (``- [F3] ...``, ``- [F3, F7] ...``)
    or at the end of a line (``... [#4, #9]``, ``... (F3)``). A bracketed group that is
    ordinary text ("(born 2019)") stays in the text.
    """
    lines = reply.split("\n")
    per_line: dict[int, tuple[list[str], list[str], list[int]]] = {}
    clean: list[str] = []
    for n, line in enumerate(lines):
        ids: list[str] = []
        bad: list[str] = []
        srcs: list[int] = []
        m = _LEAD_RE.match(line)
        if m:
            kept = [g for g in _GROUP_RE.findall(m.group(2)) if not _read_group(g, ids, bad, srcs)]
            rest = line[m.end():]
            line = m.group(1) + "".join(f"({g}) " for g in kept) + rest if kept else m.group(1) + rest
        t = _TAIL_RE.search(line)
        if t and t.start() > 0:
            groups = _GROUP_RE.findall(t.group(1))
            tmp_ids: list[str] = []
            tmp_bad: list[str] = []
            tmp_src: list[int] = []
            if all(_read_group(g, tmp_ids, tmp_bad, tmp_src) for g in groups):
                ids += tmp_ids
                bad += tmp_bad
                srcs += tmp_src
                line = line[: t.start()].rstrip()
        if ids or bad or srcs:
            per_line[n] = (ids, bad, srcs)
        clean.append(line)
    text = "\n".join(clean)
    out_facts: list[Fact] = []
    out_ids: list[list[str]] = []
    out_bad: list[list[str]] = []
    out_src: list[list[int]] = []
    for fact, first, end in factdiff.spans(text):
        fi: list[str] = []
        fb: list[str] = []
        fs: list[int] = []
        for n in range(first, end):
            if n in per_line:
                fi += per_line[n][0]
                fb += per_line[n][1]
                fs += per_line[n][2]
        out_facts.append(fact)
        out_ids.append(list(dict.fromkeys(fi)))
        out_bad.append(fb)
        out_src.append(sorted(set(fs)))
    return Marked(text, out_facts, out_ids, out_bad, out_src)


# --- precise matching ------------------------------------------------------------------

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_COMMON = frozenset(resources.text("corpus/stopwords.txt").split()) | frozenset(["user", "users", "has", "have", "had", "likes", "like", "loves", "lives", "live", "works", "work", "is", "are", "was", "prefers", "prefer", "born", "speaks", "owns", "plays", "visited", "learning", "learns", "studies", "enjoys", "hates", "dislikes", "drinks", "eats", "uses", "wants", "plans", "daughter", "son", "wife", "husband", "partner", "sister", "brother", "mother", "father", "mom", "dad", "child", "children", "kid", "kids", "job", "home", "city", "name", "age", "favourite", "favorite", "allergic", "birthday", "email", "phone", "pet", "dog", "cat", "car", "language", "languages", "works", "worked", "lived", "moved", "moving", "goes", "went", "runs", "drives", "reads", "writes", "the", "a", "an", "prefers", "preferred", "currently", "now", "always", "never", "usually", "often", "new", "old", "first", "last", "next", "main", "habite", "travaille", "aime", "est", "a", "une", "un", "le", "la", "les", "des", "du", "de", "et", "ou", "vit", "parle", "utilisateur", "utilisatrice", "fille", "fils", "femme", "mari", "ville", "nom", "chat", "chien"])


# common, so never names, but what a fact is about: a rewording keeps them
_NOUNS_TEXT = """
    partner daughter son wife husband sister brother mother father mom dad child children kid kids
    pet dog cat car fille fils femme mari chat chien
"""
_NOUNS = frozenset(_NOUNS_TEXT.split())


@functools.lru_cache(maxsize=8192)
def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD_RE.findall(factdiff.normalize(text)))


@functools.lru_cache(maxsize=8192)
def anchors(text: str) -> frozenset[str]:
    """The words that make a fact *this* fact: numbers (ages, years, dates, amounts) and
    names (capitalised words that are not common words), casefolded."""
    out: set[str] = set()
    # a fact's time is not what makes it this fact: a hand edit that moves "until" keeps its id
    words = _WORD_RE.findall(timing.body(text))
    for i, w in enumerate(words):
        if any(c.isdigit() for c in w):
            out.add(w.casefold())
        elif w[:1].isupper() and w.casefold() not in _COMMON:
            if i == 0 and w[1:].islower() and len(words) > 1 and w.casefold().endswith(("ing", "ed", "es")):
                continue  # "Speaking ...", "Moved ...": a verb that starts the sentence
            out.add(w.casefold())
    return frozenset(out)


def has_word(word: str, words: frozenset[str]) -> bool:
    """Whether ``word`` is among ``words`` (a word of five letters or more may change its ending)."""
    if word in words:
        return True
    if word.isdigit() or _CJK_RE.search(word):
        # a run of Chinese is one "word" here: sharing its first five characters says nothing
        # ("养了一只叫Doudou的猫" is not "养了一只叫Qiuqiu的猫"; found by tests/integration/test_unsaid_run.py)
        return False
    return len(word) >= 5 and any(len(w) >= 5 and w[:5] == word[:5] for w in words)


def compatible(old: str, new: str) -> bool:
    """Whether ``new`` can be ``old`` reworded: it names every name, number, date and place
    that ``old`` names (it may add detail), and it does not say the opposite."""
    if factdiff.flipped(old, new):
        return False
    words = frozenset(_words(new))
    return all(has_word(a, words) for a in anchors(old))


@functools.lru_cache(maxsize=8192)
def content(text: str) -> frozenset[str]:
    """A fact's words without the ones that say nothing of it (stop words; "daughter" and
    "partner" say something, even though they are no names)."""
    return frozenset(w for w in _words(text) if (w not in _COMMON or w in _NOUNS) and len(w) > 1)


def covers(big: str, small: str) -> bool:
    """Whether ``big`` says everything ``small`` says (every content word of ``small``, names
    and numbers included, is in ``big``): ``small`` merged into ``big`` loses nothing."""
    words = frozenset(_words(big))
    need = content(small)
    if not need or not all(has_word(w, words) for w in need):
        return False
    return compatible(small, big)


#: minimum similarity of a reworded fact whose ids were lost (on top of :func:`compatible`)
PAIR_THRESHOLD = 0.5


def pair(old: Sequence[Fact], new: Sequence[Fact], *, in_place: bool = False) -> dict[int, int]:
    """Which new fact (index) is which old fact (index), for facts without ids. Pure.

    Same normalised text first. Then, best first, pairs that are :func:`compatible` (the
    new one keeps every name and number of the old one; it may add detail) and similar
    enough; then pairs that name the same non-empty set of names
    and numbers and nothing else does (a fact translated to another language). With
    ``in_place`` (a hand edit), a fact replaced at the same place in the same section is
    the same fact whatever its other words, as long as it keeps the old one's names and
    numbers (:func:`compatible`): the user edited it. One that changed them is another
    fact (the old one is removed by the edit, and can be restored), as in :func:`pair`.
    """
    out: dict[int, int] = {}
    by_norm: dict[str, list[int]] = {}
    for i, f in enumerate(old):
        by_norm.setdefault(f.norm, []).append(i)
    for j, f in enumerate(new):
        queue = by_norm.get(f.norm)
        if queue:
            out[j] = queue.pop(0)
    used = set(out.values())
    if in_place:
        _pair_in_place(old, new, out, used)
    left_old = [i for i in range(len(old)) if i not in used]
    left_new = [j for j in range(len(new)) if j not in out]
    if not left_old or not left_new:
        return out
    anc_old = {i: anchors(old[i].text) for i in left_old}
    {j: anchors(new[j].text) for j in left_new}
    cands: list[tuple[float, bool, int, int]] = []
    for i in left_old:
        for j in left_new:
            # a rewording may change the words that say nothing of the fact ("likes" ->
            # "enjoys"), never the ones that do ("pasta with lemon" -> "pasta with chili")
            if not compatible(old[i].text, new[j].text) or not _keeps_words(old[i].text, new[j].text):
                continue
            score = factdiff.similarity(old[i].text, new[j].text)
            if score >= PAIR_THRESHOLD:
                cands.append((-score, old[i].section != new[j].section, i, j))
    cands.sort()
    for _s, _sec, i, j in cands:
        if i not in used and j not in out:
            out[j] = i
            used.add(i)
    # translated facts: the new one names all the old one's names and numbers, and no other
    # leftover on either side does
    left_old = [i for i in left_old if i not in used and anc_old[i]]
    left_new = [j for j in left_new if j not in out]
    # ... and shares none of the old one's other words: same-language text that kept the names
    # but changed what they are about ("nephew Tobias" -> "niece Tobias") is no translation
    # ... and says something besides names: "Has a grandmother in Lyon" -> "Aunt: Lyon" is another
    # fact about Lyon (a label and a name), not the same one translated
    fits = {i: [j for j in left_new if compatible(old[i].text, new[j].text) and not _same_language(
        old[i].text, new[j].text, anc_old[i]) and set(_words(new[j].text)) - anchors(new[j].text)]
        for i in left_old}
    for i, js in fits.items():
        if len(js) == 1 and sum(js[0] in other for other in fits.values()) == 1:
            out[js[0]] = i
            used.add(i)
    return out


def _same_language(old: str, new: str, names: frozenset[str]) -> bool:
    """Whether two facts share a word besides their names: then they are not a translation."""
    a = {w for w in _words(old) if len(w) > 1} - names
    b = {w for w in _words(new) if len(w) > 1}
    return bool(a & b)


def _keeps_words(old: str, new: str) -> bool:
    words = frozenset(_words(new))
    return all(has_word(w, words) for w in content(old))


def _pair_in_place(old: Sequence[Fact], new: Sequence[Fact], out: dict[int, int], used: set[int]) -> None:
    """Pair the facts between two matched neighbours one for one when the runs are the same
    length and in the same section and the new one keeps every name, number, date and place
    of the old one (:func:`compatible`): the words of a fact were edited where it stands."""
    anchors_new = sorted(out)
    bounds = [(-1, -1)] + [(j, out[j]) for j in anchors_new] + [(len(new), len(old))]
    for (j0, i0), (j1, i1) in itertools.pairwise(bounds):
        olds = [i for i in range(i0 + 1, i1) if i not in used]
        news = [j for j in range(j0 + 1, j1) if j not in out]
        if olds and len(olds) == len(news) and i1 > i0:
            for i, j in zip(olds, news, strict=True):
                # the user is trusted with the words, not with the names and numbers: "Likes tea"
                # -> "Enjoys green tea" is the fact edited, "Lives in Paris" -> "Lives in Lyon" (or
                # "likes apple 1" -> "hand apple 2") is another fact written where the old one was
                if old[i].section.casefold() == new[j].section.casefold() and compatible(
                        old[i].text, new[j].text):
                    out[j] = i
                    used.add(i)


def attach(previous: Ledger, text: str, *, in_place: bool = False,
           keep: Mapping[str, str] | None = None) -> Ledger:
    """Ids for ``text``, a revision written after ``previous`` outside the consolidation
    protocol. ``keep`` maps normalised texts to the ids they must have (a restore brings
    a fact back with its old id). Facts no rule pairs get new ids."""
    facts = factdiff.parse(text)
    keep = dict(keep or {})
    ids: list[str | None] = [None] * len(facts)
    taken: set[str] = set()
    for j, f in enumerate(facts):
        fid = keep.pop(f.norm, None)
        if fid is not None and fid not in taken:
            ids[j] = fid
            taken.add(fid)
    old = [f for f in previous.facts if f.id not in taken]
    rest = [j for j in range(len(facts)) if ids[j] is None]
    pairs = pair(old, [facts[j] for j in rest], in_place=in_place)
    for k, i in pairs.items():
        ids[rest[k]] = old[i].id
    nxt = previous.next
    out: list[str] = []
    for fid in ids:
        if fid is None:
            fid = new_id(nxt)
            nxt += 1
        out.append(fid)
    return Ledger.with_ids(text, out, nxt)
