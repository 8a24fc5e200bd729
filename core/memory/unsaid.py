"""What the user said about themselves that a consolidation kept nowhere: "not remembered" (pure).

A consolidation accounts for what it keeps (facts, the diary entry) and, in ``skipped``,
for what it chose not to keep. This module finds the rest:

* :func:`statements` picks the sentences of a user message in which the user says
  something about themselves: first person ("I ...", "my ...", "我..."), not a question,
  a request, a hypothetical or wish, thinking aloud or a passing state ("I'm tired"),
  not what someone else said (quoted text goes first), not code or logs. Rules, not a
  model: cheap, deterministic, and measured on a labelled corpus
  (tests/unit/memory/unsaid_corpus.py, figures in tests/unit/memory/test_unsaid.py).
* :func:`covered` says whether a text (a fact written or held, a sentence of the
  diary, a removed fact with its reason, a skipped quote) keeps a statement: every
  name, number and content word of it (stemmed, a few synonyms; Chinese by its content
  characters), clause by clause, a removal only by a removal, a like or dislike only by
  one; failing that, the receipt check's reading (:func:`receiptcheck.follows`: the text
  follows from the statement as a fact from its receipt, which also crosses languages).
* :func:`not_remembered` lists the statements nothing covers, each with its message
  number and the user's sentence; :func:`review_items` turns them into review items
  (kind ``not-remembered``) whose text is the statement as a fact (:func:`as_fact`),
  one action from memory.
* :func:`parse_skipped` validates ``save_memory``'s ``skipped`` at the door: a bad
  entry is dropped with a note, never an error.

Where it misses is said in docs/ARCHITECTURE.md ("Not remembered").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memtray.core.log.payloads import SkippedStatement
from memtray.core.log.payloads_memory import Provenance
from memtray.core.memory import facts, receiptcheck
from memtray.core.memory.wording import normalize

KIND = "not-remembered"
#: why a statement is held: its message is the one its ``source_seqs`` names (the log's number,
#: which every listing shows), so the reason names none (it said the consolidation's own
#: "message #3" beside it until the outside test of issue 32: two numbers for one message)
REASON = "you said this; no fact, diary entry or skip keeps it"
_OLD_REASON = re.compile(r"you said this \(message #\d+\); no fact, diary entry or skip keeps it")
MAX_SKIPPED = 200  # entries of ``skipped`` read per reply
MAX_QUOTE = 500
MAX_REASON = 300
MAX_ITEMS = 30  # not-remembered items per consolidation (a pasted essay is not 200 items)

__all__ = [
    "KIND",
    "REASON",
    "Accounted",
    "Skip",
    "Statement",
    "account",
    "as_fact",
    "covered",
    "detect",
    "headline",
    "listed",
    "not_remembered",
    "parse_skipped",
    "pieces",
    "provenance",
    "review_items",
    "statements",
]


@dataclass(frozen=True)
class Statement:
    """A sentence in which the user says something about themselves."""

    message: int  # the message's number as the consolidation prompt shows it (from 1)
    quote: str  # the sentence, as the user wrote it


@dataclass(frozen=True)
class Skip:
    """One entry of ``skipped``: what the model chose not to keep, and why."""

    message: int
    quote: str
    reason: str


# --- finding the statements ------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u9fff]")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|(?<![\w])'[^'\n]{3,}'(?![\w])")
_CODE_LINE = re.compile(
    r"^\s*(?:[$#>]|>>>|\w[\w.\[\]]*\s*[-+*/]?=(?!=)|def |class |import |from \S+ import|File \"|Traceback|"
    r"\w+Error\b|at \S+\(|[{}\[\]();]+\s*$)|[;{}]\s*$|\w\(\)")
_SPLIT = re.compile(r"(?<=[.!?。！？；;])\s*|\n+|:\s+")
_CLAUSE = re.compile(r",\s+(?:so|and|but|because)\s+(?=(?:i|my|i'm|i've)\b)", re.I)
_LEAD = re.compile(
    r"^(?:(?:and|but|also|oh|ok|okay|well|so|actually|anyway|haha|lol|btw|fyi|by the way|just so you know|"
    r"for the record|for context|please remember that|please remember|remember that|note that|please note that|"
    r"good morning|hi|hello|hey)\b[,!.:]?\s*)+", re.I)
_TIME_LEAD = re.compile(r"^(?:(?:last|next|this) \w+|in \d{4}|since \d{4}|these days|nowadays|every \w+|at work|at home|"
                        r"for work|on weekends|in my (?:free|spare) time),?\s+", re.I)
_FIRST = re.compile(r"^(?:i|i'm|i've|i'd|i'll|my|mine|my \w+ and i)\b", re.I)
_QUESTION_START = re.compile(
    r"^(?:what|how|why|when|where|who|whom|which|whose|do|does|did|is|are|am|can|could|should|would|will|shall|"
    r"may|might|have|has)\b", re.I)
_HYPOTHETICAL = re.compile(
    r"\b(?:if i|if my|what if|suppose|supposing|imagine|pretend|let's say|i wish|i would(?! (?:rather|prefer))|"
    r"i'd(?! (?:rather|prefer))|i could|i might|in the song|in the story|the character)\b", re.I)
_SPEECH = re.compile(r"\b(?:said|says|say|told|tells|asked|asks|goes|wrote|writes|replied)\b", re.I)
# what follows "I" or "I'm" when the user asks, thinks aloud, reacts or reports a passing state
_NOT_ABOUT_ME = re.compile(
    r"^i(?:'m| am)?\s*(?:just )?(?:think|guess|see|mean|know|understand|agree|disagree|believe|suppose|hope|"
    r"feel like|wonder|was wondering|am wondering|'m wondering|meant|forgot|didn't know|don't know|"
    r"don't understand|do not know|do not understand|get it|got it|tried|try|'ll try|will try|'ll check|"
    r"will check|ran|changed|updated|fixed|need|want|'d like|would like|'m looking for|am looking for|"
    r"have a question|have another question|have a problem|got an error|get an error|'m getting|am getting|"
    r"appreciate|apologi[sz]e|sorry|not sure|sure|"
    r"'m trying|am trying|like (?:it|that|this|them)|love (?:it|that|this|them)|hate (?:it|that|this)|"
    r"can't believe|cannot believe|'m curious|am curious|'m happy to|am happy to|'ll|will|'d(?! (?:rather|prefer)))\b", re.I)
_PASSING = re.compile(
    r"^i(?:'m| am) (?:so |very |really |a bit |kind of |still |just )?(?:tired|hungry|sleepy|bored|busy|stuck|"
    r"confused|back|here|done|ready|fine|good|ok|okay|sorry|sure|curious|excited|happy|sad|annoyed|lost|"
    r"late|home|online|off|in|out|working on|looking at|reading|using this|testing)\b", re.I)
_TASK_OBJECT = re.compile(
    r"^my (?:code|build|function|script|program|test|tests|query|error|output|file|files|app|server|class|"
    r"method|loop|regex|variable|repo|branch|commit|pr|database|essay|homework|question|answer|prompt|"
    r"message|screen|terminal|browser|connection|request)\b", re.I)
_CJK_NOT = re.compile(r"[吗呢？?]|什么|怎么|为什么|哪|谁|几[个点岁]|多少|是否|请|帮我|给我|能不能|可不可以|"
                      r"如果|假如|要是|假设|想象|我觉得|我认为|我想问|我不知道|我明白|我同意|我猜|我看看|"
                      r"我试试|我不确定|谢谢|应该")
_CJK_FIRST = re.compile(r"^(?:[^，,]{0,6}[，,])?我")
_CONTENT_MIN = 1


def _clean(text: str) -> str:
    text = _FENCE.sub("\n", text)
    text = _INLINE_CODE.sub(" ", text)
    lines = [line for line in text.splitlines() if not _CODE_LINE.search(line) and not line.startswith(("    ", "\t"))]
    return "\n".join(lines).replace("’", "'").replace("‘", "'")


def _is_statement(sentence: str) -> bool:
    s = sentence.strip()
    if not s:
        return False
    if _CJK.search(s):
        return bool(_CJK_FIRST.search(s)) and not _CJK_NOT.search(s)
    if s.endswith("?"):
        return False
    s = _LEAD.sub("", s).strip()
    s = _TIME_LEAD.sub("", s)
    if not _FIRST.match(s) or _QUESTION_START.match(s) or _HYPOTHETICAL.search(s):
        return False
    low = s.casefold()
    if _NOT_ABOUT_ME.match(low) or _PASSING.match(low) or _TASK_OBJECT.match(low):
        return False
    if low.startswith("my ") and _SPEECH.search(low):
        return False  # "my colleague said ...": someone else's words
    return len(_keys(s) | facts.anchors(s)) >= _CONTENT_MIN


def _sentences(text: str) -> list[str]:
    quoted = _QUOTED.search(text) is not None
    text = _QUOTED.sub(" \u2026 ", text)
    out: list[str] = []
    for part in _SPLIT.split(text):
        for clause in _CLAUSE.split(part):
            clause = clause.strip(" \t,")
            if clause and not (quoted and "\u2026" in clause and _SPEECH.search(clause)):
                out.append(clause)
    return out


def statements(text: str) -> list[str]:
    """The sentences of one user message in which the user says something about themselves."""
    return [s.replace(" \u2026 ", " ").strip() for s in _sentences(_clean(text)) if _is_statement(s)]


def detect(messages: Sequence[tuple[str, str]]) -> list[Statement]:
    """Every self-statement of the user's messages; ``messages`` are (role, text) pairs numbered
    from 1 as the consolidation prompt shows them."""
    return [Statement(n, s) for n, (role, text) in enumerate(messages, 1) if role == "user"
            for s in statements(text)]


# --- coverage ------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W\d_\u3400-\u9fff]+|\d+|[\u3400-\u9fff]")
_CONTRACTIONS = (("can't", "can not"), ("won't", "will not"), ("n't", " not"), ("'m", " am"), ("'ve", " have"),
                 ("'re", " are"), ("'ll", " will"), ("'d", " would"), ("'s", ""))
# words that carry no fact of their own here: pronouns, auxiliaries, light verbs, hedges
_LIGHT_TEXT = """
    a an the is are was were be been being am to of in on at for with and or but not no nor so as by from into
    about than then that this these those it its he she they them their his her user users i me my mine myself
    we us our you your has have had having do does did done who which what there here will would can could
    should shall may might must get got gets named called call name some any one also too very
    really still just now currently usually always often sometimes mostly most bit lot much many every each
    go goes going went make makes made use uses used keep keeps kept like likes liked love loves loved enjoy
    enjoys prefer prefers dislike dislikes hate hates stand fan longer anymore since ago year years day days
    please remember note by way fyi btw though actually quite pretty
"""
_LIGHT = frozenset(_LIGHT_TEXT.split())
_SYNONYMS = {"programs": "code", "program": "code", "programming": "code", "coding": "code", "codes": "code",
             "writes": "code", "dwelling": "live", "resides": "live", "based": "live", "lives": "live",
             "living": "live", "moved": "move", "relocated": "move", "sold": "sell", "sells": "sell",
             "selling": "sell", "beekeeper": "bee", "beekeeping": "bee", "cellist": "cello",
             "pianist": "piano", "guitarist": "guitar", "violinist": "violin", "vegetarian": "vegetarian",
             "kids": "child", "kid": "child", "children": "child", "mom": "mother", "mum": "mother",
             "dad": "father", "wakes": "wake", "waking": "wake", "woke": "wake", "concise": "short",
             "brief": "short", "replies": "answer", "reply": "answer", "answers": "answer"}


def _stem(w: str) -> str:
    w = _SYNONYMS.get(w, w)
    for suf, rep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suf) and len(w) - len(suf) >= 3 and not w.endswith("ss"):
            return _SYNONYMS.get(w[: len(w) - len(suf)] + rep, w[: len(w) - len(suf)] + rep)
    return w


def _tokens(text: str) -> list[str]:
    low = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    for short, long in _CONTRACTIONS:
        low = low.replace(short, long)
    return _WORD.findall(low)


def _keys(text: str) -> set[str]:
    return {_stem(w) for w in _tokens(text) if w not in _LIGHT and not w.isdigit() and not _CJK.search(w)}


def _has(word: str, words: set[str]) -> bool:
    return word in words or (len(word) >= 5 and any(len(w) >= 5 and w[:5] == word[:5] for w in words))


# characters that say nothing of a Chinese statement (particles, pronouns, measure words, light verbs)
_CJK_LIGHT = frozenset("的了是我你他她它在也都很就和吗呢吧啊个这那会对叫有养一只名我们每天")


def _chars(text: str) -> set[str]:
    return {c for c in _CJK.findall(text) if c not in _CJK_LIGHT}


def _follows(text: str, statement: str) -> bool:
    """The receipt check's reading: ``text`` follows from ``statement`` as a fact from its receipt
    (its paraphrase table: "Is a hobby beekeeper" from "I keep bees in the garden", "Lives in
    Shanghai" from "我住在上海")."""
    return receiptcheck.follows(text, statement) == ""


_REMOVAL = re.compile(r"\b(?:removed|sold|sell|sells|selling|gave away|give away|got rid of|lost|quit|stopped|no longer|"
                      r"anymore|moved out|broke up|left)\b|卖了|卖掉|送人|不再|丢了|戒了", re.I)
_SENTIMENT = re.compile(r"\b(?:like|likes|liked|love|loves|loved|enjoy|enjoys|prefer|prefers|dislike|dislikes|hate|"
                        r"hates|fan|favou?rite|want|wants|rather|can.t stand|cannot stand|can not stand|into)\b|喜欢|讨厌|爱", re.I)


#: where a text (a merged bullet, a diary sentence) starts another clause with a subject of its
#: own: "User lives in Bergen and their sister lives in Oslo" is two clauses, each read alone
_CLAUSES = re.compile(r";\s*|；|,?\s+(?:and|but|while|whereas)\s+(?=(?:the\s+)?(?:user|their|they|he|she|his|her|"
                      r"i|my)\b)|,\s+(?=(?:the\s+)?(?:user|their|they|he|she|his|her)\b)", re.I)


def covered(statement: str, text: str) -> bool:
    """Whether ``text`` keeps ``statement``, clause by clause (a merged bullet "A; B" is two, and
    so is "A, and their sister B"), and as the user said it: a clause about someone else, or one
    that drops the statement's "not", its "used to" or its "maybe", keeps nothing of it."""
    if _REMOVAL.search(statement) and not _REMOVAL.search(text):
        return False  # "I sold my kayak" is not kept by "Owns a kayak"
    if _SENTIMENT.search(statement) and not _SENTIMENT.search(text):
        return False  # "I don't like pickles" is not kept by "Pickle is their parrot"
    return any(_covered(statement, part) and not receiptcheck.says_otherwise(part, statement)
               for part in _CLAUSES.split(text) if part and part.strip())


def _covered(statement: str, text: str) -> bool:
    """Whether ``text`` keeps ``statement``: every name and number of it and every content word
    (stemmed, a few synonyms), or its Chinese content
    characters (seven in ten); failing that, ``text`` follows from ``statement`` by the receipt
    check's reading (which also carries a statement across languages)."""
    names = {a for a in facts.anchors(_CJK.sub(" ", statement)) if a not in ("i", "my")}
    words = {_stem(w) for w in _tokens(text)} | {w for w in _tokens(text)}
    if not all(_has(_stem(a), words) or _has(a, words) for a in names):
        return False
    if _CJK.search(statement):
        chars = _chars(statement)
        if chars and _CJK.search(text) and len(chars & _chars(text)) * 10 >= 7 * len(chars):
            return True
        return _follows(text, statement)
    keys = _keys(statement) - {_stem(a) for a in names}
    if not keys:
        return bool(names)
    if _CJK.search(text):
        return False  # an English statement kept in Chinese: not told (the receipt check cannot either)
    hit = sum(1 for k in keys if _has(k, words))
    if hit == len(keys):
        return True
    return bool(hit or names) and _follows(text, statement)


_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s+|\n+")


def pieces(text: str) -> list[str]:
    """A diary entry (or any paragraph) cut into sentences: each is checked alone, so one long
    entry does not cover everything by having every word somewhere."""
    return [p for p in _SENTENCE.split(text) if p.strip()]


def not_remembered(found: Iterable[Statement], keepers: Sequence[str], skipped: Sequence[Skip]) -> list[Statement]:
    """The statements nothing keeps: no text of ``keepers`` (facts written or held, sentences of
    the diary entry, removed facts with their reasons) covers them, and no ``skipped`` entry
    of their message quotes them."""
    out: list[Statement] = []
    seen: set[str] = set()
    for s in found:
        norm = normalize(s.quote)
        if norm in seen:
            continue
        seen.add(norm)
        if any(covered(s.quote, t) for t in keepers) or _kept_in_parts(s.quote, keepers):
            continue
        if any(k.message == s.message and (_quotes(k.quote, s.quote) or covered(s.quote, k.quote)) for k in skipped):
            continue
        out.append(s)
    return out


_PARTS = re.compile(r"\s*[,，;；]\s*|\s+(?:and|but|so)\s+", re.I)


def _kept_in_parts(statement: str, keepers: Sequence[str]) -> bool:
    """A sentence whose first part is kept is kept: what follows a comma or an "and" in one
    sentence is detail ("I live in Paris, in the 11th arrondissement" is kept by "Lives in
    Paris"; "I like hiking in Nordmarka and I want to climb Kolsås" by "Likes hiking in
    Nordmarka"), unless a later part names a name the first does not; a sentence each part of
    which a fact keeps is kept too. A part with its own "I"
    after a comma and "so", "and", "but" or "because" is a statement of its own (:func:`statements`
    cuts it off), so it is checked on its own."""
    parts = [p for p in _PARTS.split(statement.strip().rstrip(".!。！"))
             if _keys(p) or facts.anchors(_CJK.sub(" ", p)) - {"i", "my"} or _chars(p)]
    if len(parts) < 2:
        return False
    if all(any(covered(p, t) for t in keepers) for p in parts):
        return True  # each part by its own fact
    if any(_names(p) - _names(parts[0]) for p in parts[1:]):
        return False  # a name after the comma is no detail ("我养了一只猫，叫Miso"; "two kids, Leo and Ana")
    return any(covered(parts[0], t) for t in keepers)


def _names(text: str) -> set[str]:
    """The capitalised names of ``text`` (numbers are detail here)."""
    return {a for a in facts.anchors(_CJK.sub(" ", text)) if not any(c.isdigit() for c in a)} - {"i", "my"}


def _quotes(quote: str, sentence: str) -> bool:
    """Whether a skip's quote stands for the sentence: it holds the whole sentence, or it is a
    run of the sentence's own words (never a part of a word) that says at least half of it --
    a skip quoting "I" or "in" accounts for nothing."""
    q, s = re.findall(r"\w+", normalize(quote)), re.findall(r"\w+", normalize(sentence))
    if not q or not s:
        return False
    if _run_in(s, q):
        return True
    return 2 * len(q) >= len(s) and _run_in(q, s)


def _run_in(words: list[str], run: list[str]) -> bool:
    """``words`` appear in ``run`` as one contiguous run."""
    n = len(words)
    return any(run[i:i + n] == words for i in range(len(run) - n + 1))


# --- skipped -----------------------------------------------------------------------------------

def parse_skipped(raw: Any, messages: Sequence[str]) -> tuple[list[Skip], list[str]]:
    """``save_memory``'s ``skipped`` checked at the door: each entry needs a message number of
    the consolidated range, a quote found in that message (case, spacing, punctuation and width
    aside) and a reason. Bad entries are dropped with a note; nothing raises."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"skipped is not a list ({type(raw).__name__}); ignored"]
    out: list[Skip] = []
    notes: list[str] = []
    if len(raw) > MAX_SKIPPED:
        notes.append(f"skipped has {len(raw)} entries; only the first {MAX_SKIPPED} were read")
    for n, e in enumerate(raw[:MAX_SKIPPED], 1):
        if not isinstance(e, dict):
            notes.append(f"skipped entry {n} is not an object; ignored")
            continue
        num, quote, reason = e.get("message"), e.get("quote"), e.get("reason")
        if isinstance(num, str) and re.fullmatch(r"[0-9]{1,9}", num.strip().lstrip("#")):  # not "²"
            num = int(num.strip().lstrip("#"))
        if not isinstance(num, int) or isinstance(num, bool) or not 1 <= num <= len(messages):
            notes.append(f"skipped entry {n} names no consolidated message ({str(num)[:20]!r}); ignored")
            continue
        if not isinstance(quote, str) or not quote.strip() or len(quote) > MAX_QUOTE:
            notes.append(f"skipped entry {n} has no usable quote; ignored")
            continue
        if not _in_message(quote, messages[num - 1]):
            notes.append(f"skipped entry {n}: message #{num} does not say {quote[:60]!r}; ignored")
            continue
        why = reason.strip()[:MAX_REASON] if isinstance(reason, str) else ""
        out.append(Skip(num, " ".join(quote.split()), why or "no reason given"))
    return out, notes


_PUNCT = re.compile(r"[^\w\s]")


def _loose(text: str) -> str:
    """The receipt check's normalisation (width, contractions, numbers and times in one form),
    then case and punctuation."""
    return " ".join(_PUNCT.sub(" ", receiptcheck.normalize(text).casefold()).split())


def _in_message(quote: str, message: str) -> bool:
    q = _loose(quote)
    return bool(q) and q in _loose(message)


# --- what the user sees --------------------------------------------------------------------

def headline(n: int) -> str:
    """"2 things you said were not remembered": the notification's and the CLI's words."""
    return f"{n} thing{'s' if n != 1 else ''} you said {'were' if n != 1 else 'was'} not remembered"


_VERB_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "be": "is"}
_ADVERBS_TEXT = "usually always often never mostly sometimes really also still just rarely mainly only"
_ADVERBS = frozenset(_ADVERBS_TEXT.split())
_PAST_OR_MODAL = re.compile(r"(?:ed|was|were|sold|gave|got|went|took|made|had|broke|quit|left|bought|"
                            r"grew|began|won|lost|met|ran|wrote|can|can't|cannot|will|would|should|must|"
                            r"could|might|may)$")
_START = (("i'm ", "User is "), ("i am ", "User is "), ("i've ", "User has "), ("i have ", "User has "),
          ("i was ", "User was "), ("i'd ", "User would "), ("i'll ", "User will "), ("i don't ", "User doesn't "),
          ("i do not ", "User does not "), ("i didn't ", "User didn't "), ("i can't ", "User can't "))


_TAIL = re.compile(r",?\s+(?:by the way|btw|though|too|haha|lol|fyi)$", re.I)


def _third(verb: str) -> str:
    low = verb.casefold()
    if low in _VERB_IRREGULAR:
        return _VERB_IRREGULAR[low]
    if _PAST_OR_MODAL.search(low) or not low.isalpha():
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _mid(text: str) -> str:
    for pat, rep in ((r"\bmy\b", "their"), (r"\bme\b", "them"), (r"\bmyself\b", "themselves"),
                     (r"\bI'm\b", "they're"), (r"\bI've\b", "they've"), (r"\bI\b", "they"), (r"\bmine\b", "theirs")):
        text = re.sub(pat, rep, text)
    return text


def as_fact(quote: str) -> str:
    """The user's sentence as a fact about the user ("I have a cat named Miso." -> "User has a cat
    named Miso"): the first person becomes "User", the verb agrees, the words stay theirs."""
    s = _TAIL.sub("", _LEAD.sub("", quote.strip()).strip().rstrip(".!;。！；"))
    if _CJK.search(s):
        return s.replace("我的", "用户的").replace("我", "用户")
    low = s.casefold()
    for start, rep in _START:
        if low.startswith(start):
            return rep + _mid(s[len(start):])
    if low.startswith("my "):
        return "User's " + _mid(s[3:])
    m = re.match(r"^(?:i)\s+((?:no longer|\w+)\s+)?(\w+)(.*)$", s, re.I | re.S)
    if m is not None:
        adverb, verb, rest = m.group(1), m.group(2), m.group(3)
        if adverb and adverb.strip().casefold() not in _ADVERBS | {"no longer"}:  # "I write code": the first word is the verb
            verb, rest, adverb = adverb.strip(), f" {verb}{rest}", None
        head = f"User {adverb.strip()} " if adverb else "User "
        return head + _third(verb) + _mid(rest)
    return s


def review_items(found: Sequence[Statement], seqs: Sequence[int | None]) -> list[dict[str, Any]]:
    """Review items for statements nothing kept: the text is the fact "Add to memory" writes, the
    quote is the user's sentence, ``source_seqs`` the message's log seq (its receipt)."""
    from memtray.core.memory.items import review_item

    out: list[dict[str, Any]] = []
    for s in found[:MAX_ITEMS]:
        seq = seqs[s.message - 1] if 0 < s.message <= len(seqs) else None
        item = review_item(KIND, as_fact(s.quote), "", None, REASON)
        item["quote"] = s.quote
        if seq is not None:
            item["source_seqs"] = [seq]
        out.append(item)
    return out


# --- one consolidation's account ---------------------------------------------------------------

@dataclass
class Accounted:
    """What a consolidation did not keep: the model's ``skipped`` (checked), the review items for
    what nothing keeps, and notes on entries the door dropped."""

    skipped: list[SkippedStatement]
    items: list[dict[str, Any]]
    notes: list[str]


def keepers(memory: facts.Ledger, held: Sequence[Mapping[str, Any]], diary: str, removed: Mapping[str, str],
            before: facts.Ledger) -> list[str]:
    """Every text that keeps something after a consolidation: the facts of ``memory``, the items
    ``held`` for review, the ``diary`` entry, and the facts it ``removed`` (ids of ``before``)
    with their reasons ("Owns a red kayak (removed: sold it)" keeps "I sold my red kayak")."""
    gone = [f"{f.text} (removed: {why})" for fid, why in removed.items() if (f := before.get(fid)) is not None]
    return [f.text for f in memory.facts] + [str(i.get("text", "")) for i in held] + [diary] + gone


def account(raw_skipped: Any, messages: list[dict[str, Any]], keepers: Sequence[str],
            notes: list[str] | None = None) -> Accounted:
    """The account of one consolidation. ``messages`` are the consolidated messages (numbered as
    the prompt shows them: :func:`guard.shown_messages`); ``keepers`` every text that keeps
    something (:func:`keepers`). The door's notes are also added to ``notes``."""
    from memtray.core.memory.guard import shown_messages

    shown = [(str(m.get("role")), str(m.get("content") or ""), m.get("seq")) for m in shown_messages(messages)]
    texts = [t for _r, t, _s in shown]
    skips, skip_notes = parse_skipped(raw_skipped, texts)
    seqs = [s for _r, _t, s in shown]
    # every text sentence by sentence (a short diary entry too: "Talked about Oslo. User wants
    # to live by the sea." does not keep "I live in Oslo"); a removed fact and its reason stay one
    cut = [p for t in keepers for p in ([t] if "(removed: " in t else pieces(t))]
    missing = not_remembered(detect([(r, t) for r, t, _s in shown]), cut, skips)
    if len(missing) > MAX_ITEMS:
        skip_notes.append(f"{len(missing) - MAX_ITEMS} more things you said were not remembered; only the first "
                          f"{MAX_ITEMS} are listed for review")
    recorded: list[SkippedStatement] = []
    for k in skips:
        rec = SkippedStatement(message=k.message, quote=k.quote, reason=k.reason)
        if (seq := seqs[k.message - 1]) is not None:
            rec["seq"] = seq
        recorded.append(rec)
    if notes is not None:
        notes += skip_notes
    return Accounted(recorded, review_items(missing, seqs), skip_notes)


def listed(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` as the review lists it: a not-remembered item held before :data:`REASON` was
    worded so gets its words (its log keeps the old ones), one message number beside its quote."""
    if item.get("kind") == KIND and _OLD_REASON.fullmatch(str(item.get("reason", ""))):
        return {**item, "reason": REASON}
    return item


def provenance(item: Mapping[str, Any], led: facts.Ledger) -> dict[str, Provenance] | None:
    """The receipt a not-remembered item's fact is written with when the user adds it to memory:
    the message that says it (its log seq), the user's sentence as the quote, stated by the user.
    None for any other kind of item (or when the fact is not in ``led``)."""
    if item.get("kind") != KIND:
        return None
    norm = normalize(str(item.get("text", "")))
    fact = next((f for f in led.facts if f.norm == norm), None)
    if fact is None:
        return None
    prov = Provenance(source_seqs=[int(s) for s in item.get("source_seqs") or []], text=fact.text,
                      quote=str(item.get("quote") or ""), stated=True)
    return {fact.id: prov}
