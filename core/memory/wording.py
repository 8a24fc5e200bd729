"""How alike two fact texts are: normalisation, content words, negation, similarity (pure).

:func:`normalize` is a fact's identity for exact matching (casefolded, markdown emphasis
and escapes dropped). :func:`similarity` scores rewordings (character trigrams and content
words); :func:`flipped` spots a fact that says the opposite of another. Used by the fact
diff (:mod:`factdiff`) and the id matcher (:mod:`facts`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any, NamedTuple

__all__ = ["Prepared", "clean_controls", "clean_obj", "dice", "flip", "flipped", "normalize", "prepare", "score",
           "similarity"]

# --- control characters ----------------------------------------------------------------

# Memory text holds no control character but "\n", "\t" and the "\r" of a "\r\n" line
# end. The ones str.split() takes for white space (and a lone "\r") become a space, the
# rest (ESC, BEL, DEL, C1 ...) are dropped: "Ign\x05ore" is "Ignore" to every reader.
_CONTROL_RE = re.compile(r"\r(?!\n)|[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]")
_CONTROL_SPACE = frozenset("\r\x0b\x0c\x1c\x1d\x1e\x1f\x85")


def clean_controls(text: str) -> str:
    """``text`` as memory stores it: see :data:`_CONTROL_RE`. Pure; idempotent."""
    if _CONTROL_RE.search(text) is None:
        return text
    return _CONTROL_RE.sub(lambda m: " " if m.group() in _CONTROL_SPACE else "", text)


def clean_obj(obj: Any) -> Any:
    """Every string (value, not key) in a JSON-like value, through :func:`clean_controls`."""
    if isinstance(obj, str):
        return clean_controls(obj)
    if isinstance(obj, dict):
        return {k: clean_obj(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean_obj(v) for v in obj]
    return obj


# --- normalisation ---------------------------------------------------------------------

_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "“": '"', "”": '"', "„": '"'})
_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")
_EMPHASIS_RE = re.compile(r"\*\*|__|~~|`+")
_EMPHASIS_EDGE_RE = re.compile(r"(?<!\w)[*_]+|[*_]+(?!\w)")
_MARKUP_RE = re.compile(r"[\\*_~`]")
_TRAILING = ".,;:!? "


def normalize(text: str) -> str:
    """Casefold, drop markdown emphasis, escapes and control characters, collapse whitespace,
    strip end punctuation."""
    text = clean_controls(text)
    if not text.isascii():
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
        text = text.translate(_QUOTES)
    if _MARKUP_RE.search(text):
        text = _ESCAPE_RE.sub(r"\1", text)
        text = _EMPHASIS_RE.sub("", text)
        text = _EMPHASIS_EDGE_RE.sub("", text)
    return " ".join(text.casefold().split()).rstrip(_TRAILING)



# --- similarity ------------------------------------------------------------------------

_WORD_RE = re.compile(r"\w+(?:'\w+)*")
# Words that say nothing about which fact is which (in a memory, "user" is everywhere).
_STOPWORD_TEXT = """
    a an the and or but nor of to in on at for with by from as into onto about over
    under than then so such very also too just is are was were be been being am has
    have had having do does did it its this that these those there here he she they
    them his her hers their theirs i me my mine we us our ours you your yours who whom
    which what when where how user users s
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Words that negate ("doesn't like tea", "no longer lives in Oslo", "never drinks coffee").
# They all count as one word, "not", so "can't" / "cannot" / "can not" read alike; a pair
# of facts that differ *only* in negation (and the words that go with it: "no longer",
# "not anymore") is a flip, never a rewording: the old fact is dropped and needs a reason.
_NEGATOR_TEXT = """
    not no never cannot cant dont doesnt didnt isnt arent wasnt werent wont wouldnt hasnt
    havent hadnt shouldnt couldnt mustnt neednt aint
"""
_NEGATORS = frozenset(_NEGATOR_TEXT.split())
_NEGATION_COMPANIONS = frozenset({"longer", "anymore", "more", "ever"})
_NEGATOR_STEMS = {"cant": "can", "cannot": "can", "wont": "will", "couldnt": "could", "shouldnt": "should",
                  "wouldnt": "would", "mustnt": "must", "neednt": "need"}


class Prepared(NamedTuple):
    tokens: frozenset[str]  # content words, lightly stemmed
    grams: frozenset[str]  # character trigrams of the content words in order
    n_tokens: int
    n_grams: int


@functools.lru_cache(maxsize=16384)
def prepare(norm: str) -> Prepared:
    words: list[str] = []
    content: list[str] = []
    for raw in _WORD_RE.findall(norm):
        word = raw.removesuffix("'s").replace("'", "")
        words.append(word)
        if word in _STOPWORDS:
            continue
        if word in _NEGATORS:
            stem = _NEGATOR_STEMS.get(word)
            if stem is not None:  # "can't" / "cannot" / "can not" alike
                content.append(stem)
            word = "not"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        content.append(word)
    key = f" {' '.join(content)} " if content else f" {norm} "
    grams = frozenset(key[i : i + 3] for i in range(len(key) - 2))
    tokens = frozenset(content or words)
    return Prepared(tokens, grams, len(tokens), len(grams))


def flip(a: Prepared, b: Prepared) -> bool:
    only = a.tokens ^ b.tokens
    return "not" in only and only <= _NEGATION_COMPANIONS | {"not"}


def flipped(a: str, b: str) -> bool:
    """Whether two fact texts differ only by a negation ("likes tea" / "doesn't like tea",
    "lives in Oslo" / "no longer lives in Oslo"): the same words saying the opposite."""
    return flip(prepare(normalize(a)), prepare(normalize(b)))


def dice(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0


def score(a: Prepared, b: Prepared) -> float:
    if flip(a, b):
        return 0.0  # "likes tea" -> "doesn't like tea" is a different fact, not a rewording
    # Character trigrams catch "Sam" -> "Samuel" and typo fixes; word overlap
    # catches reordering. difflib's ratio was the first choice but costs ~0.2 ms
    # per pair in pure Python, 20x the budget of a 500-fact diff.
    total = a.n_grams + b.n_grams
    score = 2 * len(a.grams & b.grams) / total if total else 0.0
    inter = len(a.tokens & b.tokens)
    if inter:
        score = max(score, 2 * inter / (a.n_tokens + b.n_tokens))
        if inter >= 2 and inter == min(a.n_tokens, b.n_tokens):
            # "lives in Berlin" inside "lives in Berlin, Germany": the fact only
            # gained detail. One shared word is too weak a sign for this.
            score = max(score, 0.9)
    return score


def similarity(a: str, b: str) -> float:
    """How alike two fact texts are, 0..1.

    The largest of: Dice overlap of character trigrams, Dice overlap of content
    words (stop words such as "the", "is", "user" left out, plurals folded), and
    0.9 when one fact's words (at least two) all appear in the other. 0 when the two
    differ only by a negation ("not", "never", "doesn't", "no longer"...).
    """
    na, nb = normalize(a), normalize(b)
    if na == nb:
        return 1.0
    return score(prepare(na), prepare(nb))


