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
   (:mod:`memtray.core.memory.stance`: about the user, not "my sister"; so, not asked or
   maybe; now, not "used to"): the quote's sentence around it is read for that, never as
   evidence.

A quote found only in the assistant's messages makes the fact ``inferred``: the user never said it.
What the check cannot see is in docs/ARCHITECTURE.md ("Receipts").
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import snowballstemmer
from memtray import resources
from memtray.core.memory import stance
from memtray.core.memory.receipts import Receipt

__all__ = ["Check", "Claims", "check", "claims", "normalize", "says_otherwise"]

#: a quote of this many words or more may differ from its message in one word of ``SLIP``
SLIP = 8
#: similarity (0..1) from an embedding model above which one uncovered content word is forgiven
SIMILAR = 0.82
#: the group of framing phrases ("works as"): always said
FRAMING = 0


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


# --- the word list ---------------------------------------------------------------------

_STEMMER = snowballstemmer.stemmer("english")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_CJK_RE = re.compile(f"[{_CJK}]")
_TOKEN_RE = re.compile(f"[{_CJK}]|(?:(?![{_CJK}])[^\\W_])+", re.UNICODE)
_NEGATORS = frozenset({"not", "no", "never", "neither", "nor", "without", "none", "不", "没", "没有", "别"})
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH_OF = {m[:3]: m for m in _MONTHS} | {m: m for m in _MONTHS} | {"sept": "september"}


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    if not word.isascii() or not word.isalpha():
        return word
    return str(_STEMMER.stemWord(word))


@dataclass(frozen=True)
class _Table:
    stop: frozenset[str]
    framing: frozenset[str]  # stems
    #: first stem of a phrase -> (phrase stems, group number), longest first
    phrases: dict[str, list[tuple[tuple[str, ...], int]]]
    cjk: list[tuple[str, int]]  # Chinese entries, longest first
    words: frozenset[str]  # every stem of the table: a capitalised one is no name
    implies: list[tuple[frozenset[str], str]]  # (stems or Chinese words, the stem whose groups they imply)
    places: frozenset[int]  # groups of place names: anchors, like any name
    opposites: dict[int, frozenset[int]]  # a group -> the groups that say its opposite
    negative: frozenset[str]  # stems of words that say "not" without one ("avoids", "intolerant")


@functools.cache
def _table() -> _Table:
    stop: set[str] = set()
    framing: set[str] = set()
    phrases: dict[str, list[tuple[tuple[str, ...], int]]] = {}
    cjk: list[tuple[str, int]] = []
    words: set[str] = set()
    implies: list[tuple[frozenset[str], str]] = []
    places: set[int] = set()
    opposite_lines: list[tuple[str, str]] = []
    negative: set[str] = set()
    group = 0
    for line in resources.text("corpus/paraphrases.txt").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("stop:"):
            stop.update(line[5:].split())
            continue
        if line.startswith("framing:"):
            for w in line[8:].split():
                if "_" in w:  # a phrase: a group of its own that always counts as said
                    phrases.setdefault(_stem(w.split("_")[0]), []).append(
                        (tuple(_stem(x) for x in w.split("_")), FRAMING))
                else:
                    framing.add(_stem(w))
                words.update(w.split("_"))
            continue
        if line.startswith("negative:"):
            negative.update(_stem(w.casefold()) for w in line[9:].split())
            continue
        if line.startswith("opposite:"):
            left, _, right = line[9:].partition("|")
            opposite_lines.append((left.strip().casefold(), right.strip().casefold()))
            continue
        if line.startswith("implies:"):
            left, _, right = line[8:].partition("=>")
            implies.append((frozenset(w if _CJK_RE.search(w) else _stem(w.casefold()) for w in left.split()),
                            _stem(right.strip().casefold())))
            continue
        group += 1
        if line.startswith("place:"):
            places.add(group)
            line = line[6:]
        for entry in line.split("~"):
            entry = entry.strip().casefold()
            if _CJK_RE.search(entry):
                cjk.append((entry, group))
                continue
            stems = tuple(_stem(w) for w in _TOKEN_RE.findall(entry))
            if stems:
                phrases.setdefault(stems[0], []).append((stems, group))
                words.update(stems)
                words.update(_TOKEN_RE.findall(entry))
    for v in phrases.values():
        v.sort(key=lambda p: -len(p[0]))
    cjk.sort(key=lambda p: -len(p[0]))

    def groups_of(entry: str) -> set[int]:
        stems = tuple(_stem(w) for w in _TOKEN_RE.findall(entry))
        return {g for p, g in phrases.get(stems[0], ()) if p == stems} if stems else set()

    opposites: dict[int, set[int]] = {}
    for left, right in opposite_lines:
        a, b = groups_of(left), groups_of(right)
        if not a or not b:
            raise ValueError(f"paraphrases.txt: 'opposite: {left} | {right}' names no group")
        for g in a:
            opposites.setdefault(g, set()).update(b)
        for g in b:
            opposites.setdefault(g, set()).update(a)
    return _Table(frozenset(stop), frozenset(framing), phrases, cjk, frozenset(words), implies, frozenset(places),
                  {g: frozenset(v) for g, v in opposites.items()}, frozenset(negative))


# --- normalising -----------------------------------------------------------------------

_QUOTES = str.maketrans({"‘": "'", "’": "'", "ʼ": "'", "`": "'", "“": '"', "”": '"'})
_CONTRACTIONS = ((re.compile(r"\bcan't\b", re.I), "can not"), (re.compile(r"\bcannot\b", re.I), "can not"),
                 (re.compile(r"\bwon't\b", re.I), "will not"), (re.compile(r"n't\b", re.I), " not"),
                 (re.compile(r"'m\b", re.I), " am"), (re.compile(r"'re\b", re.I), " are"),
                 (re.compile(r"'ve\b", re.I), " have"), (re.compile(r"'ll\b", re.I), " will"),
                 (re.compile(r"'d\b", re.I), " would"), (re.compile(r"'s\b", re.I), ""))
_UNITS = {w: n for n, w in enumerate(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"])}
_TENS = {w: 10 * n for n, w in enumerate(["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]) if n > 1}
_NUMWORD_RE = re.compile(r"\b(?:(" + "|".join(_TENS) + r")(?:[\s-](" + "|".join(list(_UNITS)[1:10]) + r"))?|("
                         + "|".join(_UNITS) + r"))\b", re.I)
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_NUM_RE = re.compile("[零〇一二两三四五六七八九十]+")
_ZH_ARTICLE_RE = re.compile("(?<![零〇一二两三四五六七八九十])一(?=[个名只位件本条张家辆份])")
_AMPM = r"(a\.?\s?m\.?|p\.?\s?m\.?)(?![a-z])"
_CLOCK_RE = re.compile(r"\b(\d{1,2}):(\d{2})(?:\s*" + _AMPM + ")?", re.I)
_HOUR_RE = re.compile(r"\b(\d{1,2})\s*" + _AMPM, re.I)
_ISO_RE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_ZH_MONTH_RE = re.compile(r"(\d{1,2})\s*月")
_ORDINAL_RE = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b", re.I)
_THOUSANDS_RE = re.compile(r"\b(\d{1,3})((?:,\d{3})+)\b")


def _zh_number(m: re.Match[str]) -> str:
    s = m.group()
    if "十" not in s:
        if len(s) > 1 and s[0] in "一两" and not s[1:].strip("〇零一二三四五六七八九"):
            return "".join(str(_ZH_DIGITS[c]) for c in s)  # 二〇二四
        return "".join(str(_ZH_DIGITS[c]) for c in s) if len(s) <= 4 else s
    head, _, tail = s.partition("十")
    if len(head) > 1 or len(tail) > 1 or "十" in tail:
        return s
    n = (_ZH_DIGITS.get(head, 1) if head else 1) * 10 + (_ZH_DIGITS.get(tail, 0) if tail else 0)
    return f" {n} "


def _hour(h: str, ampm: str | None) -> int:
    n = int(h)
    if ampm and ampm[0].lower() == "p" and n < 12:
        return n + 12
    if ampm and ampm[0].lower() == "a" and n == 12:
        return 0
    return n


@functools.lru_cache(maxsize=16384)
def normalize(text: str) -> str:
    """``text`` as the check compares it: NFKC, contractions spelled out, numbers, times and
    dates in one form ("Five AM" -> "5", "5:30pm" -> "17 30", "2024-03-05" -> "2024 march 5",
    "3月5日" -> "march 5日"), case kept (names are read from it)."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    for pat, rep in _CONTRACTIONS:
        text = pat.sub(rep, text)
    text = _ZH_ARTICLE_RE.sub("", text)  # 一个, 一只: "a", no number (as "a cat" has none)
    text = _ZH_NUM_RE.sub(_zh_number, text)
    text = _NUMWORD_RE.sub(lambda m: f" {_TENS[m[1].lower()] + (_UNITS[m[2].lower()] if m[2] else 0)} " if m[1]
                           else f" {_UNITS[m[3].lower()]} ", text)
    text = _THOUSANDS_RE.sub(lambda m: m[1] + m[2].replace(",", ""), text)
    text = _ISO_RE.sub(lambda m: f"{m[1]} {_MONTHS[int(m[2]) - 1] if 1 <= int(m[2]) <= 12 else m[2]} {int(m[3])}",
                       text)
    text = _ZH_MONTH_RE.sub(lambda m: f" {_MONTHS[int(m[1]) - 1]} " if 1 <= int(m[1]) <= 12 else m.group(), text)
    text = _CLOCK_RE.sub(lambda m: f" {_hour(m[1], m[3])}" + (f" {int(m[2])} " if int(m[2]) else " "), text)
    text = _HOUR_RE.sub(lambda m: f" {_hour(m[1], m[2])} ", text)
    text = re.sub(r"\b(\d+)\s*o'?\s?clock\b", r" \1 ", text, flags=re.I)
    text = re.sub(r"\b(?:noon|midday)\b", " 12 ", text, flags=re.I)
    text = re.sub(r"\bmidnight\b", " 0 ", text, flags=re.I)  # as "12 am" is
    text = _ORDINAL_RE.sub(r"\1", text)
    text = re.sub(r"\b(\d+)\s?(?:k|km|kms|kilometres|kilometers)\b", r"\1 km", text, flags=re.I)
    text = re.sub(r"\b0+(\d)", r"\1", text)
    return text


@dataclass(frozen=True)
class _Tok:
    raw: str  # as written
    word: str  # casefolded
    stem: str
    name: bool  # capitalised where a sentence does not start, and no common word
    initial: bool = False  # the first word of a sentence
    asks: bool = False  # a "?" follows it
    frame: bool = False  # a word of the quote's sentence outside the quote: read for its stance only


def _tokens(text: str, *, names: bool = True) -> list[_Tok]:
    norm = normalize(text)
    table = _table()
    out: list[_Tok] = []
    for m in _TOKEN_RE.finditer(norm):
        raw = m.group()
        w = raw.casefold()
        if w in _MONTH_OF and (len(w) > 3 or raw[:1].isupper()):
            w = _MONTH_OF[w]
        i = m.start() - 1  # the last character before the word, spaces aside (linear: no slicing)
        while i >= 0 and norm[i].isspace():
            i -= 1
        initial = i < 0 or norm[i] in ".!?;-–—*•#>。！？"
        is_name = (names and raw[:1].isupper() and not raw.isupper() and not initial and w not in table.stop
                   and _stem(w) not in table.words and w not in table.words) or (
            names and len(raw) > 1 and raw.isupper() and raw.isalpha() and raw.isascii() and w not in table.stop
            and _stem(w) not in table.words)
        j = m.end()  # the first character after the word, spaces and closing quotes aside
        while j < len(norm) and (norm[j].isspace() or norm[j] in "\"')）)"):
            j += 1
        out.append(_Tok(raw, w, _stem(w), is_name, initial, j < len(norm) and norm[j] in "?？"))
    return out


@functools.lru_cache(maxsize=256)
def _said(text: str) -> tuple[_Tok, ...]:
    """A message's tokens, once per text: every piece of every fact's quote is looked up in
    the same few messages."""
    return tuple(_tokens(text))


# --- what a text says ------------------------------------------------------------------

@dataclass(frozen=True)
class _Unit:
    """One content word (or phrase) of a text: the paraphrase groups it belongs to, its stems."""

    groups: frozenset[int]
    stems: frozenset[str]
    shown: str


@dataclass(frozen=True)
class Claims:
    """What a fact (or a quote) says, as the check compares it."""

    anchors: dict[str, str]  # stem or number -> the word as written: names, numbers, months
    units: list[_Unit]
    stems: frozenset[str]  # every word and stem, stop words included
    groups: frozenset[int]
    bigrams: frozenset[str]
    #: what each "not" outside a paraphrase denies: the stems of the few words after it
    negations: tuple[frozenset[str], ...]
    neg_groups: frozenset[int]  # groups matched by a phrase with a "not" in it ("can not stand")


def _bigrams(text: str) -> set[str]:
    out: set[str] = set()
    for run in re.findall(f"[{_CJK}]+", text):
        out.update(run[i:i + 2] for i in range(len(run) - 1))
        if len(run) == 1:
            out.add(run)
    return out


def claims(text: str) -> Claims:
    """The anchors, content words, stems, paraphrase groups and Chinese bigrams of ``text``."""
    return _claims(_tokens(text))


def _phrase_at(toks: Sequence[_Tok], i: int) -> tuple[int, set[int]] | None:
    """The longest paraphrase starting at ``toks[i]``: its length and every group it is in."""
    table = _table()
    for p, _g in table.phrases.get(toks[i].stem, ()):
        if tuple(x.stem for x in toks[i:i + len(p)]) == p:
            return len(p), {g for p2, g in table.phrases[toks[i].stem]
                            if len(p2) == len(p) and tuple(x.stem for x in toks[i:i + len(p2)]) == p2}
    return None


def _claims(toks: Sequence[_Tok]) -> Claims:
    table = _table()
    cjk_text = "".join(t.word for t in toks if _CJK_RE.fullmatch(t.word))
    groups: set[int] = set()
    neg_groups: set[int] = set()
    units: list[_Unit] = []
    consumed: set[int] = set()  # positions in cjk_text inside a paraphrase
    anchors: dict[str, str] = {}  # a stem or number (or "@group" of a place) -> as written
    for entry, g in table.cjk:
        start = cjk_text.find(entry)
        while start >= 0:
            span = set(range(start, start + len(entry)))
            if not span & consumed:
                consumed |= span
                groups.add(g)
                if any(c in _NEGATORS for c in entry):
                    neg_groups.add(g)
                if g in table.places:
                    anchors[f"@{g}"] = entry
                else:
                    units.append(_Unit(frozenset({g}), frozenset(), entry))
            start = cjk_text.find(entry, start + 1)
    negations: list[frozenset[str]] = []

    def scope(at: int) -> frozenset[str]:  # the next three words that say something
        words = [x for x in toks[at + 1:at + 8] if x.word not in table.stop and x.word not in _NEGATORS]
        return frozenset(x.stem for x in words[:3])

    i = 0
    pos = 0
    while i < len(toks):
        t = toks[i]
        if _CJK_RE.fullmatch(t.word):
            if pos not in consumed and t.word in _NEGATORS:
                negations.append(scope(i))
            pos += 1
            i += 1
            continue
        hit = _phrase_at(toks, i)
        if hit is not None and not (hit[0] == 1 and t.name):
            size, gs = hit
            groups.update(gs)
            words = toks[i:i + size]
            if any(x.word in _NEGATORS for x in words):
                neg_groups.update(gs)
            stems = frozenset(x.stem for x in words) - table.stop - _NEGATORS
            if gs & table.places:
                anchors[f"@{min(gs & table.places)}"] = " ".join(x.raw for x in words)
            else:
                units.append(_Unit(frozenset(gs), stems, " ".join(x.raw for x in words)))
            i += size
            continue
        i += 1
        if t.word in _NEGATORS:
            negations.append(scope(i - 1))
        elif t.word.isdigit() or t.word in _MONTHS or t.name:
            anchors[t.word if t.word.isdigit() else t.stem] = t.raw
        elif t.word not in table.stop and t.stem not in table.stop and len(t.word) > 1:
            units.append(_Unit(frozenset(), frozenset({t.stem}), t.raw))
    stems = frozenset(x.stem for x in toks) | frozenset(x.word for x in toks)
    for left, right in table.implies:
        if any(w in stems or (_CJK_RE.search(w) and w in cjk_text) for w in left):
            groups.update(g for p, g in table.phrases.get(right, ()) if p == (right,))
    return Claims(anchors, units, stems, frozenset(groups), frozenset(_bigrams(cjk_text)), tuple(negations),
                  frozenset(neg_groups))


def _join(*parts: Sequence[_Tok]) -> list[_Tok]:
    """Token lists one after the other, a full stop between them (no phrase spans two)."""
    out: list[_Tok] = []
    for p in parts:
        if out and p:
            out.append(_Tok(".", ".", ".", False))
        out += p
    return out


# --- finding the quote -----------------------------------------------------------------

_ELISION_RE = re.compile(r"\s*(?:…|\.{3,}|\[\s*(?:…|\.{2,})?\s*\]|\(\s*(?:…|\.{2,})\s*\))\s*")


def _locate(piece: list[str], message: Sequence[_Tok]) -> list[_Tok] | None:
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


def _framed(message: Sequence[_Tok], start: int, end: int) -> list[_Tok]:
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


def _denied(message: Sequence[_Tok], start: int) -> list[_Tok]:
    """The negators just before a quoted span, in its clause (``I don't`` + ``smoke``): the
    quote's words are evidence only with the "not" the message puts before them."""
    out: list[_Tok] = []
    if start < len(message) and message[start].initial:
        return out  # the quote starts its sentence: a "not" before it is another sentence's
    for t in reversed(message[max(0, start - NEGATION_REACH):start]):
        if t.word in _CLAUSE:
            break
        if t.word in _NEGATORS:
            out.append(t)
        if t.initial:
            break
    return out[::-1]


def _find(quote: str, cited: Sequence[int], texts: Sequence[str]) -> tuple[list[int], list[_Tok]] | None:
    """Where each elided piece of ``quote`` is (message numbers, among ``cited``) and the
    message words it matched; None when some piece is in none of them."""
    whole = _find_pieces(_ELISION_RE.split(quote), cited, texts)
    if whole is None and _SENTENCE_RE.search(quote):  # two sentences of two messages, quoted as one
        whole = _find_pieces(_SENTENCE_RE.split(_ELISION_RE.sub(". ", quote)), cited, texts)
    return whole


_SENTENCE_RE = re.compile(r"(?<=[.!?;。！？；])\s*")


def _find_pieces(pieces: Sequence[str], cited: Sequence[int],
                 texts: Sequence[str]) -> tuple[list[int], list[_Tok]] | None:
    found: list[int] = []
    words: list[_Tok] = []
    for piece in (p for p in pieces if _TOKEN_RE.search(p)):
        pw = [t.word for t in _tokens(piece, names=False)]
        hit = next(((n, got) for n in cited if (got := _locate(pw, _said(texts[n - 1]))) is not None), None)
        if hit is None:
            return None
        if hit[0] not in found:
            found.append(hit[0])
        words = _join(words, hit[1])
    return found, words


# --- the decision ----------------------------------------------------------------------

def _has_stem(stem: str, stems: frozenset[str]) -> bool:
    """``stem`` among ``stems``, or a word of five letters or more with the same first five
    ("fluently" / "fluent", which the stemmer leaves apart), or the same word as a doer
    ("worker" / "work", "rider" / "ride", "runner" / "run")."""
    if stem in stems:
        return True
    if len(stem) >= 5 and not stem.isdigit() and any(len(w) >= 5 and w[:5] == stem[:5] for w in stems):
        return True
    stop = _table().stop
    return any(_same_doer(stem, w) for w in stems if w.isalpha() and w not in stop)


def _same_doer(a: str, b: str) -> bool:
    """Whether one stem is the doer of the other ("worker" / "work", "rider" / "ride")."""
    da, db = _doer(a), _doer(b)
    if (da == a) == (db == b):
        return False  # both doers or neither: the stems alone decide
    verb = b if da != a else a  # the one that is no doer: four letters at least ("let" is no "letter")
    return len(verb) >= 4 and bool({da, da + "e"} & {db, db + "e"})


@functools.lru_cache(maxsize=16384)
def _doer(stem: str) -> str:
    """The verb of a doer noun's stem ("worker" -> "work", "runner" -> "run"); the stem itself
    for any other word. Only "-er" and "-or" of a stem of six letters or more."""
    if len(stem) < 5 or not stem.isalpha() or not stem.endswith(("er", "or")):
        return stem
    base = stem[:-2]
    return base[:-1] if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "aeiouls" else base


def _covered(unit: _Unit, ev: Claims) -> bool:
    if FRAMING in unit.groups or unit.groups & ev.groups:
        return True
    return bool(unit.stems) and all(_has_stem(x, ev.stems) for x in unit.stems)


def follows(fact: str, evidence: str | Sequence[_Tok], *, context: Sequence[_Tok] = (),
            similarity: Callable[[str, str], float | None] | None = None) -> str:
    """Why ``fact`` does not follow from ``evidence`` (the words a quote matched, and the
    old wording of a fact it rewords), or "" when it does. ``context``: the rest of the cited
    messages, which may supply an anchor the quote leaves out when the quote names none."""
    framed = _tokens(evidence) if isinstance(evidence, str) else list(evidence)
    ev_toks = [t for t in framed if not t.frame]
    fact_toks = _tokens(fact)
    f, ev = _claims(fact_toks), _claims(ev_toks)
    ctx = _claims(context) if context else None
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
    why = _negation(f, ev)
    if why:
        return why
    how = _stance(fact_toks, f, framed, ev)
    if how.why:
        return how.why
    table = _table()
    # a word that says "not" on its own ("Avoids") is said by the quote's "not" (they agree: above)
    said_not = frozenset(table.negative) if ev.negations or ev.neg_groups else frozenset()
    missing = [u.shown for u in f.units if not _covered(u, ev) and not (u.stems and u.stems <= table.framing)
               and not (u.stems and u.stems <= how.forgiven | said_not)]
    cjk = [b for b in f.bigrams if len(b) == 2]
    if cjk:
        rest = [b for b in cjk if b not in ev.bigrams]
        cjk_groups = frozenset().union(*(u.groups for u in f.units if not u.stems))
        if len(rest) * 3 > len(cjk) and not (cjk_groups and cjk_groups <= ev.groups):
            missing.append("".join(rest[:3]))
    for u in f.units:  # the opposite of what the quote says, never forgiven by a similarity
        against = frozenset().union(*(table.opposites.get(g, frozenset()) for g in u.groups)) & ev.groups
        if against and not _covered(u, ev):
            said = next((x.shown for x in ev.units if x.groups & against), "")
            return f"the fact says '{u.shown}', the quote says '{said}'" if said else (
                f"the fact says '{u.shown}', the quote says the opposite")
    if not missing:
        return "" if f.units or f.anchors or cjk else "the fact says nothing the quote could support"
    if len(missing) == 1 and similarity is not None:
        score = similarity(fact, " ".join(t.raw for t in ev_toks))
        if score is not None and score >= SIMILAR:
            return ""
    return "the quote does not say " + ", ".join(f"'{w}'" for w in missing[:3])


def _negation(f: Claims, ev: Claims) -> str:
    """Why the fact and the quote disagree on "not", or ""."""
    shared = f.groups & ev.groups  # a "not" inside a paraphrase both share ("can not stand") is none
    neg = _table().negative  # "avoids" says "not" unless the other side says "avoid" too
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
    t_toks, s_toks = _tokens(text), _tokens(statement)
    f, ev = _claims(t_toks), _claims(s_toks)
    why = _negation(f, ev) or _stance(t_toks, f, s_toks, ev).why
    if why:
        return why.replace("the quote", "the statement").replace("the fact", "the text")
    theirs = stance.of(t_toks, _table().stop)
    if theirs.party and not stance.of(s_toks, _table().stop).party and not stance.mentions_party(s_toks):
        return f"the text is about '{theirs.party}', the statement is about the user"
    return ""


@dataclass(frozen=True)
class _How:
    why: str  # why the fact does not say it as the quote does, or ""
    forgiven: frozenset[str] = frozenset()  # words the fact may add ("Might", "Former") as the quote's stance


def _sentences(toks: Sequence[_Tok]) -> list[tuple[list[_Tok], int]]:
    """Evidence cut into its sentences, each with where its quoted words start (after the frame)."""
    out: list[list[_Tok]] = []
    for t in toks:
        if t.word == "." and not t.raw.isalnum() and t.stem == ".":
            out.append([])
            continue
        if not out or (t.initial and out[-1] and not t.frame and any(not x.frame for x in out[-1])):
            out.append([])
        out[-1].append(t)
    return [(s, next((i for i, t in enumerate(s) if not t.frame), 0)) for s in out if s]


def _stance(fact_toks: Sequence[_Tok], f: Claims, framed: Sequence[_Tok], ev: Claims) -> _How:
    """Whether the fact says what its quote says *as* the quote says it: about the user (not
    "my sister"), as so (not asked, hoped or maybe), now (not "used to", not "lived")."""
    stop = _table().stop
    sents = _sentences(framed)
    says = [stance.of(s, stop, focus) for s, focus in sents]
    others = [s for s in says if s.party]
    names = {k for k in f.anchors if not k.isdigit() and k not in _MONTH_OF.values()}
    about = others and (stance.mentions_party(fact_toks) or stance.of(fact_toks, stop).party or any(
        names & s.party_words or (not s.party_words and names - set(ev.anchors)) for s in others))
    if others and not about:
        if not any(s.subject and not s.party for s in says):
            return _How(f"the quote is about '{others[0].party}', the fact is about the user")
        # a merge of the user's words and someone else's: what only the other's sentence says
        each = [_claims([t for t in s if not t.frame]) for s, _f in sents]
        table = _table()
        claimed: list[tuple[str, _Unit | str]] = [
            (u.shown, u) for u in f.units if not (u.stems and u.stems <= table.framing) and FRAMING not in u.groups]
        claimed += [(v, k) for k, v in f.anchors.items()]
        for shown, what in claimed:
            by = [i for i, c in enumerate(each) if (_covered(what, c) if isinstance(what, _Unit)
                                                    else what in c.anchors or what in c.stems)]
            if by and all(says[i].party for i in by):
                return _How(f"the quote says '{shown}' of '{says[by[0]].party}', the fact says it of the user")
    w = stance.words()
    modal = next((s.modal for s in says if s.modal), "")
    if modal and not stance.fact_modal(fact_toks):
        return _How("the quote asks, the fact says it is so" if modal == "?" else
                    f"the quote says '{modal}', the fact says it is so")
    is_past = stance.fact_past(fact_toks)
    past = next((s.past for s in says if s.past), "")
    if past and not is_past:
        return _How(f"the quote says '{past}', the fact says it is so now")
    for s in says:
        if s.verb and not is_past and any(t.stem == s.verb_stem for t in fact_toks):
            return _How(f"the quote says '{s.verb}', the fact says it is so now")
    forgiven = (w.modal_fact if modal else frozenset()) | (w.past_fact if past else frozenset())
    return _How("", forgiven | {_stem(x) for x in forgiven})


def check(fact: str, receipt: Receipt | None, messages: Sequence[tuple[str, str]], *,
          known: Sequence[str] = (), reworded: bool = False,
          similarity: Callable[[str, str], float | None] | None = None) -> Check:
    """Decide one fact on its receipt. ``messages``: (role, text) of the consolidated messages,
    numbered from 1 as the prompt shows them. ``known``: what memory already says of it (the old
    wording of the fact an update rewords, the facts a merge joins): a fact that says no more
    than that needs no receipt (``kind`` ``stated``, no ``messages``). ``reworded``: the fact
    is ``known`` reworded by its id; one that says more than its old wording needs a receipt
    like an add (the reason then names what the old wording does not say). Pure."""
    old = _join(*(_tokens(k) for k in known))
    if known and not follows(fact, old):
        return Check("stated")
    if receipt is None:
        if reworded and known:
            # a rewording by id that says more than the old wording needs a receipt like an add:
            # the id says which fact it is, never that the new words were said
            why = follows(fact, old)
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
    evidence = _join(words, *(_tokens(k) for k in known))
    # an anchor the quote leaves out may come only from the message the quote is in, never
    # from another message the receipt cites (a receipt citing 12 messages is no licence)
    context = _join(*(_said(texts[n - 1]) for n in found))
    why = follows(fact, evidence, context=context, similarity=similarity)
    if why:
        return Check("held", why, tuple(found), receipt.quote)
    stated = any(messages[n - 1][0] == "user" for n in found)
    return Check("stated" if stated else "inferred", "", tuple(found), receipt.quote)
