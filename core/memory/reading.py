"""How the receipt check reads a text: its word list, normalisation, tokens and claims (pure).

:mod:`memtray.core.memory.receiptcheck` finds a quote in its messages and decides whether a
fact follows from it; this module is what both sides are read as: text normalised (NFKC,
contractions, numbers, times and dates in one form), tokens (with names, sentence starts and
a question mark noted), and :class:`Claims` (anchors, content words and their paraphrase
groups of resources/corpus/paraphrases.txt, negations, Chinese bigrams), and when a fact's
word is covered by a quote's (:func:`covered`: its group, its stem, its first five letters,
or the doer of its verb).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import snowballstemmer
from memtray import resources

__all__ = ["CJK_RE", "FRAMING", "MONTH_OF", "NEGATORS", "TOKEN_RE", "Claims", "Table", "Tok", "Unit", "claims",
           "claims_of", "covered", "has_stem", "join", "message_tokens", "normalize", "stem_of", "tokens", "word_table"]

#: the group of framing phrases ("works as"): always said
FRAMING = 0

# --- the word list ---------------------------------------------------------------------

_STEMMER = snowballstemmer.stemmer("english")
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
CJK_RE = re.compile(f"[{CJK}]")
TOKEN_RE = re.compile(f"[{CJK}]|(?:(?![{CJK}])[^\\W_])+", re.UNICODE)
NEGATORS = frozenset({"not", "no", "never", "neither", "nor", "without", "none", "不", "没", "没有", "别"})
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
MONTH_OF = {m[:3]: m for m in _MONTHS} | {m: m for m in _MONTHS} | {"sept": "september"}


@functools.lru_cache(maxsize=65536)
def stem_of(word: str) -> str:
    if not word.isascii() or not word.isalpha():
        return word
    return str(_STEMMER.stemWord(word))


@dataclass(frozen=True)
class Table:
    stop: frozenset[str]
    framing: frozenset[str]  # stems
    #: first stem of a phrase -> (phrase stems, group number), longest first
    phrases: dict[str, list[tuple[tuple[str, ...], int]]]
    cjk: list[tuple[str, int]]  # Chinese entries, longest first
    words: frozenset[str]  # every stem of the table: a capitalised one is no name
    implies: list[tuple[frozenset[str], str]]  # (stems or Chinese words, the stem whose groups they imply)
    places: frozenset[int]  # groups of place names: anchors, like any name
    opposites: dict[int, frozenset[int]]  # a group -> the groups that say its opposite
    #: a group -> the groups its words also say, one way ("narrower:" lines: a puppy is a dog,
    #: loving is liking; a dog need not be a puppy, liking is not loving)
    broader: dict[int, frozenset[int]]
    negative: frozenset[str]  # stems of words that say "not" without one ("avoids", "intolerant")
    light: frozenset[str] = frozenset()  # stems of verbs that say only that it is done ("Goes jogging")
    feeling: frozenset[int] = frozenset()  # the groups of liking and disliking
    dislike: frozenset[int] = frozenset()  # the groups of disliking
    doers: frozenset[str] = frozenset()  # stems of words for one who does a thing ("musician", "runner")


@functools.cache
def word_table() -> Table:
    stop: set[str] = set()
    framing: set[str] = set()
    phrases: dict[str, list[tuple[tuple[str, ...], int]]] = {}
    cjk: list[tuple[str, int]] = []
    words: set[str] = set()
    implies: list[tuple[frozenset[str], str]] = []
    places: set[int] = set()
    opposite_lines: list[tuple[str, str]] = []
    narrower_lines: list[tuple[str, str]] = []
    negative: set[str] = set()
    light: set[str] = set()
    doers: set[str] = set()
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
                if CJK_RE.search(w):  # "用户" as "user": a Chinese entry of the framing group
                    cjk.append((w, FRAMING))
                elif "_" in w:  # a phrase: a group of its own that always counts as said
                    phrases.setdefault(stem_of(w.split("_")[0]), []).append(
                        (tuple(stem_of(x) for x in w.split("_")), FRAMING))
                else:
                    framing.add(stem_of(w))
                words.update(w.split("_"))
            continue
        if line.startswith("negative:"):
            negative.update(stem_of(w.casefold()) for w in line[9:].split())
            continue
        if line.startswith("doer:"):
            doers.update(stem_of(w.casefold()) for w in line[5:].split())
            continue
        if line.startswith("light:"):
            light.update(stem_of(w.casefold()) for w in line[6:].split())
            continue
        if line.startswith("opposite:"):
            left, _, right = line[9:].partition("|")
            opposite_lines.append((left.strip().casefold(), right.strip().casefold()))
            continue
        if line.startswith("narrower:"):
            left, _, right = line[9:].partition("|")
            narrower_lines.append((left.strip().casefold(), right.strip().casefold()))
            continue
        if line.startswith("implies:"):
            left, _, right = line[8:].partition("=>")
            implies.append((frozenset(w if CJK_RE.search(w) else stem_of(w.casefold()) for w in left.split()),
                            stem_of(right.strip().casefold())))
            continue
        group += 1
        if line.startswith("place:"):
            places.add(group)
            line = line[6:]
        for entry in line.split("~"):
            entry = entry.strip().casefold()
            if CJK_RE.search(entry):
                cjk.append((entry, group))
                continue
            stems = tuple(stem_of(w) for w in TOKEN_RE.findall(entry))
            if stems:
                phrases.setdefault(stems[0], []).append((stems, group))
                words.update(stems)
                words.update(TOKEN_RE.findall(entry))
    for v in phrases.values():
        v.sort(key=lambda p: -len(p[0]))
    cjk.sort(key=lambda p: -len(p[0]))

    def groups_of(entry: str) -> set[int]:
        if CJK_RE.search(entry):
            return {g for e, g in cjk if e == entry}
        stems = tuple(stem_of(w) for w in TOKEN_RE.findall(entry))
        return {g for p, g in phrases.get(stems[0], ()) if p == stems} if stems else set()

    def named(kind: str, left: str, right: str) -> tuple[set[int], set[int]]:
        a, b = groups_of(left), groups_of(right)
        if not a or not b:
            raise ValueError(f"paraphrases.txt: '{kind}: {left} | {right}' names no group")
        return a, b

    broader: dict[int, set[int]] = {}
    for left, right in narrower_lines:
        a, b = named("narrower", left, right)
        for g in a:
            broader.setdefault(g, set()).update(b)
    changed = True
    while changed:  # a kitten is a cat is an animal: the relation is read to its end
        changed = False
        for g, up in broader.items():
            more = set().union(*(broader.get(x, set()) for x in up)) - up - {g}
            if more:
                up |= more
                changed = True
    below: dict[int, set[int]] = {}
    for g, up in broader.items():
        for x in up:
            below.setdefault(x, set()).add(g)
    opposites: dict[int, set[int]] = {}
    for left, right in opposite_lines:
        a, b = named("opposite", left, right)
        # what is opposite a word is opposite every narrower word of it: "loves" | "hates" as "likes" | "dislikes"
        a = a.union(*(below.get(g, set()) for g in a))
        b = b.union(*(below.get(g, set()) for g in b))
        for g in a:
            opposites.setdefault(g, set()).update(b)
        for g in b:
            opposites.setdefault(g, set()).update(a)
    likes, dislikes = groups_of("like"), groups_of("dislike")
    feeling = frozenset(g for g in range(1, group + 1) if ({g} | broader.get(g, set())) & (likes | dislikes))
    dislike = frozenset(g for g in feeling if ({g} | broader.get(g, set())) & dislikes)
    return Table(frozenset(stop), frozenset(framing), phrases, cjk, frozenset(words), implies, frozenset(places),
                 {g: frozenset(v) for g, v in opposites.items()}, {g: frozenset(v) for g, v in broader.items()},
                 frozenset(negative), frozenset(light), feeling, dislike, frozenset(doers))


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
    text = re.sub(r"\btwice\b", " 2 times ", text, flags=re.I)  # "twice a week" is "2 times a week"
    text = re.sub(r"\bthrice\b", " 3 times ", text, flags=re.I)
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
class Tok:
    raw: str  # as written
    word: str  # casefolded
    stem: str
    name: bool  # capitalised where a sentence does not start, and no common word
    initial: bool = False  # the first word of a sentence
    asks: bool = False  # a "?" follows it
    frame: bool = False  # a word of the quote's sentence outside the quote: read for its stance only
    pause: bool = False  # a comma or a colon before it: where a clause may start ("I don't drive, I cycle")


def tokens(text: str, *, names: bool = True) -> list[Tok]:
    norm = normalize(text)
    table = word_table()
    out: list[Tok] = []
    for m in TOKEN_RE.finditer(norm):
        raw = m.group()
        w = raw.casefold()
        if w in MONTH_OF and (len(w) > 3 or raw[:1].isupper()):
            w = MONTH_OF[w]
        i = m.start() - 1  # the last character before the word, spaces aside (linear: no slicing)
        while i >= 0 and norm[i].isspace():
            i -= 1
        initial = i < 0 or norm[i] in ".!?;-–—*•#>。！？"
        is_name = (names and raw[:1].isupper() and not raw.isupper() and not initial and w not in table.stop
                   and stem_of(w) not in table.words and w not in table.words) or (
            names and len(raw) > 1 and raw.isupper() and raw.isalpha() and raw.isascii() and w not in table.stop
            and stem_of(w) not in table.words)
        j = m.end()  # the first character after the word, spaces and closing quotes aside
        while j < len(norm) and (norm[j].isspace() or norm[j] in "\"')）)"):
            j += 1
        out.append(Tok(raw, w, stem_of(w), is_name, initial, j < len(norm) and norm[j] in "?？",
                       pause=i >= 0 and norm[i] in ",:，、：…"))
    return out


@functools.lru_cache(maxsize=256)
def message_tokens(text: str) -> tuple[Tok, ...]:
    """A message's tokens, once per text: every piece of every fact's quote is looked up in
    the same few messages."""
    return tuple(tokens(text))


# --- what a text says ------------------------------------------------------------------

@dataclass(frozen=True)
class Unit:
    """One content word (or phrase) of a text: the paraphrase groups it belongs to, its stems."""

    groups: frozenset[int]
    stems: frozenset[str]
    shown: str


@dataclass(frozen=True)
class Claims:
    """What a fact (or a quote) says, as the check compares it."""

    anchors: dict[str, str]  # stem or number -> the word as written: names, numbers, months
    units: list[Unit]
    stems: frozenset[str]  # every word and stem, stop words included
    groups: frozenset[int]
    bigrams: frozenset[str]
    #: what each "not" outside a paraphrase denies: the stems of the few words after it
    negations: tuple[frozenset[str], ...]
    neg_groups: frozenset[int]  # groups matched by a phrase with a "not" in it ("can not stand")


def _bigrams(text: str) -> set[str]:
    out: set[str] = set()
    for run in re.findall(f"[{CJK}]+", text):
        out.update(run[i:i + 2] for i in range(len(run) - 1))
        if len(run) == 1:
            out.add(run)
    return out


def claims(text: str) -> Claims:
    """The anchors, content words, stems, paraphrase groups and Chinese bigrams of ``text``."""
    return claims_of(tokens(text))


def _phrase_at(toks: Sequence[Tok], i: int) -> tuple[int, set[int]] | None:
    """The longest paraphrase starting at ``toks[i]``: its length and every group it is in."""
    table = word_table()
    for p, _g in table.phrases.get(toks[i].stem, ()):
        if tuple(x.stem for x in toks[i:i + len(p)]) == p:
            return len(p), {g for p2, g in table.phrases[toks[i].stem]
                            if len(p2) == len(p) and tuple(x.stem for x in toks[i:i + len(p2)]) == p2}
    return None


def claims_of(toks: Sequence[Tok]) -> Claims:
    table = word_table()
    cjk_text = "".join(t.word for t in toks if CJK_RE.fullmatch(t.word))
    groups: set[int] = set()
    neg_groups: set[int] = set()
    units: list[Unit] = []
    consumed: set[int] = set()  # positions in cjk_text inside a paraphrase
    framed: set[int] = set()  # positions in cjk_text inside a framing word
    anchors: dict[str, str] = {}  # a stem or number (or "@group" of a place) -> as written
    for entry, g in table.cjk:
        start = cjk_text.find(entry)
        while start >= 0:
            span = set(range(start, start + len(entry)))
            if not span & consumed:
                consumed |= span
                if g == FRAMING:  # says nothing, and no character pair of it need be in the quote
                    framed |= span
                    start = cjk_text.find(entry, start + 1)
                    continue
                groups.add(g)
                if any(c in NEGATORS for c in entry):
                    neg_groups.add(g)
                if g in table.places:
                    anchors[f"@{g}"] = entry
                else:
                    units.append(Unit(frozenset({g}), frozenset(), entry))
            start = cjk_text.find(entry, start + 1)
    negations: list[frozenset[str]] = []

    def scope(at: int) -> frozenset[str]:  # the next three words that say something
        words = [x for x in toks[at + 1:at + 8] if x.word not in table.stop and x.word not in NEGATORS]
        return frozenset(x.stem for x in words[:3])

    i = 0
    pos = 0
    while i < len(toks):
        t = toks[i]
        if CJK_RE.fullmatch(t.word):
            if pos not in consumed and t.word in NEGATORS:
                negations.append(scope(i))
            pos += 1
            i += 1
            continue
        hit = _phrase_at(toks, i)
        if hit is not None and not (hit[0] == 1 and t.name):
            size, gs = hit
            groups.update(gs)
            words = toks[i:i + size]
            if any(x.word in NEGATORS for x in words):
                neg_groups.update(gs)
            stems = frozenset(x.stem for x in words) - table.stop - NEGATORS
            if gs & table.places:
                anchors[f"@{min(gs & table.places)}"] = " ".join(x.raw for x in words)
            else:
                units.append(Unit(frozenset(gs), stems, " ".join(x.raw for x in words)))
            i += size
            continue
        i += 1
        if t.word in NEGATORS:
            negations.append(scope(i - 1))
        elif t.word.isdigit() or t.word in _MONTHS or t.name:
            anchors[t.word if t.word.isdigit() else t.stem] = t.raw
        elif t.word not in table.stop and t.stem not in table.stop and len(t.word) > 1:
            units.append(Unit(frozenset(), frozenset({t.stem}), t.raw))
    stems = frozenset(x.stem for x in toks) | frozenset(x.word for x in toks)
    for left, right in table.implies:
        if any(w in stems or (CJK_RE.search(w) and w in cjk_text) for w in left):
            groups.update(g for p, g in table.phrases.get(right, ()) if p == (right,))
    groups.update(*(table.broader.get(g, ()) for g in list(groups)))  # "puppy" says "dog" too
    plain = "".join(" " if k in framed else c for k, c in enumerate(cjk_text))
    return Claims(anchors, units, stems, frozenset(groups), frozenset(_bigrams(plain)), tuple(negations),
                  frozenset(neg_groups))


def join(*parts: Sequence[Tok]) -> list[Tok]:
    """Token lists one after the other, a full stop between them (no phrase spans two)."""
    out: list[Tok] = []
    for p in parts:
        if out and p:
            out.append(Tok(".", ".", ".", False))
        out += p
    return out


def has_stem(stem: str, stems: frozenset[str]) -> bool:
    """``stem`` among ``stems``, or a word of five letters or more with the same first five
    ("fluently" / "fluent", which the stemmer leaves apart), or the same word as a doer
    ("worker" / "work", "rider" / "ride", "runner" / "run")."""
    if stem in stems:
        return True
    if len(stem) >= 5 and not stem.isdigit() and any(len(w) >= 5 and w[:5] == stem[:5] for w in stems):
        return True
    stop = word_table().stop
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


def covered(unit: Unit, ev: Claims) -> bool:
    if FRAMING in unit.groups or unit.groups & ev.groups:
        return True
    return bool(unit.stems) and all(has_stem(x, ev.stems) for x in unit.stems)
