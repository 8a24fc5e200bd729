"""Facts in MEMORY.md: parse them, edit them one at a time, and diff two revisions.

MEMORY.md is plain markdown. ATX headings (``#`` .. ``######``) name sections;
every bullet (``-``, ``*``, ``+`` or ``1.``) is one fact, together with the
wrapped lines that continue it; a plain paragraph counts as one fact too.
Nested bullets are facts of their own. Fenced code blocks are one fact each;
HTML comments and thematic breaks are not facts. A fence or comment that never
closes is read as ordinary text, so appending to the file can never swallow it.

A fact's identity is its *normalised* text (:func:`normalize`), so the same
fact keeps the same :attr:`Fact.id` in every revision and in every section.

:func:`diff` pairs the facts of two revisions: exact matches on the normalised
text first (a fact that only moved section is unchanged), then a greedy
best-pair fuzzy match among the leftovers, so a reworded fact shows as changed
rather than as dropped plus added. Only leftovers that share a content word
are compared, which keeps a 500-fact diff in the low milliseconds.

Everything here is a pure function of its arguments.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from memtray.core.base.errors import MemtrayError
from memtray.core.log.payloads_memory import DiffFact, FactDiffData
from memtray.core.memory import wording
from memtray.core.memory.wording import flipped, normalize, similarity

__all__ = [
    "DEFAULT_SECTION",
    "DEFAULT_THRESHOLD",
    "Fact",
    "FactDiff",
    "FactError",
    "FactNotFound",
    "add_fact",
    "diff",
    "diff_facts",
    "find_fact",
    "flipped",
    "match_fact",
    "normalize",
    "parse",
    "rebase",
    "remove_fact",
    "replace_fact",
    "similarity",
    "spans",
]

#: Section that :func:`add_fact` uses when none is given.
DEFAULT_SECTION = "General"
#: Minimum :func:`similarity` for two facts to count as one fact reworded.
DEFAULT_THRESHOLD = 0.6

# A word shared by most leftover facts (a name, "work") says little about which
# pairs are rewordings: beyond a fact's rarest shared word, words found in more
# than this many leftovers (or half of them, if more) do not add candidates.
_COMMON_TOKEN_MIN = 8


class FactError(MemtrayError):
    """A fact cannot be added or found as asked."""


class FactNotFound(FactError):
    """No fact in the memory matches what was asked for."""


@dataclass(frozen=True)
class Fact:
    """One fact of a memory revision.

    ``id`` is the first 8 hex digits of the SHA-1 of ``norm``; the n-th repeat of
    the same ``norm`` in one document gets ``-n`` appended (``-2``, ``-3``, ...).
    """

    id: str
    section: str
    text: str
    norm: str


@dataclass(frozen=True)
class FactDiff:
    """What changed between two revisions of a memory."""

    added: list[Fact]
    dropped: list[Fact]
    #: ``(old, new)`` pairs of facts that were reworded, in order of the new text.
    changed: list[tuple[Fact, Fact]]
    #: How many facts are in both revisions with the same normalised text.
    unchanged: int

    @property
    def counts(self) -> tuple[int, int, int]:
        """``(added, dropped, changed)``."""
        return len(self.added), len(self.dropped), len(self.changed)

    @property
    def is_empty(self) -> bool:
        """True when no fact was added, dropped or changed."""
        return not (self.added or self.dropped or self.changed)

    def to_json(self) -> FactDiffData:
        """A stable, JSON-ready dict (keys and order do not depend on hashing)."""
        return {
            "added": [_fact_json(f) for f in self.added],
            "dropped": [_fact_json(f) for f in self.dropped],
            "changed": [
                {
                    "old": _fact_json(old),
                    "new": _fact_json(new),
                    "similarity": round(similarity(old.text, new.text), 3),
                }
                for old, new in self.changed
            ],
            "unchanged": self.unchanged,
        }


    @classmethod
    def from_json(cls, data: FactDiffData) -> FactDiff:
        """The diff a ``memory.written`` event recorded (:meth:`to_json`'s shape), as it was
        written: the same facts under the same ids, nothing matched again."""
        return cls([_fact_of(f) for f in data["added"]], [_fact_of(f) for f in data["dropped"]],
                   [(_fact_of(c["old"]), _fact_of(c["new"])) for c in data["changed"]], data["unchanged"])


def _fact_json(fact: Fact) -> DiffFact:
    return {"id": fact.id, "section": fact.section, "text": fact.text}


def _fact_of(item: DiffFact) -> Fact:
    return Fact(item["id"], item["section"], item["text"], normalize(item["text"]))


def _fact_id(norm: str) -> str:
    return hashlib.sha1(norm.encode("utf-8", "surrogatepass")).hexdigest()[:8]


# --- scanning --------------------------------------------------------------------------

_HEADING_RE = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_HEADING_CLOSE_RE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_BREAK_RE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_BULLET_RE = re.compile(r"([ \t]*)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
_COMMENT_OPEN_RE = re.compile(r" {0,3}<!--")
_COMMENT_CLOSE = "-->"
_SCOPE_MARKER_RE = re.compile(r"^<!-- scope: [a-z0-9][a-z0-9_-]{0,31} -->[ \t]*\r?$", re.M)


class _Block(NamedTuple):
    """A run of lines that is one fact, or would be if its text were not empty."""

    start: int
    end: int  # exclusive
    heading: int  # index into _Doc.headings, -1 before the first heading
    text: str
    bullet: str  # the list marker, "" for paragraphs and fences; indented markers keep their indent


class _Heading(NamedTuple):
    line: int
    title: str


@dataclass(frozen=True)
class _Doc:
    lines: list[str]  # the text's lines, each with its own "\n" / "\r\n"; "".join() gives it back
    kinds: list[int]
    headings: list[_Heading]
    blocks: list[_Block]


# Line kinds, decided once per line by _Scanner.
_BLANK, _HEADING, _BREAK, _BULLET, _FENCE, _COMMENT, _TEXT = range(7)


class _Scanner:
    """Classifies each line once (backwards, so fence and comment closers are known), then
    groups lines into blocks going forwards. Linear in the length of the text."""

    def __init__(self, units: list[str]) -> None:
        self.units = units
        self.lines = lines = [_content(unit) for unit in units]
        n = len(lines)
        self.kinds = kinds = [_TEXT] * n
        # Longest closing fence after the current line, per fence character, and the
        # first line after it that contains "-->".
        fence_after = {"`": 0, "~": 0}
        comment_after = n
        for i in range(n - 1, -1, -1):
            line = lines[i]
            body = line.lstrip(" \t")
            if not line.strip():
                kinds[i] = _BLANK
                continue
            c = body[0]
            if c == "#":
                if _HEADING_RE.match(line):
                    kinds[i] = _HEADING
            elif c in "-*_+" or c.isdigit():
                if c in "-*_" and _BREAK_RE.match(line):
                    kinds[i] = _BREAK
                elif c != "_" and _BULLET_RE.match(line):
                    kinds[i] = _BULLET
            elif c in "`~":
                m = _FENCE_RE.match(line)
                if m is not None:
                    fence, info = m.group(1), m.group(2)
                    opens = not (fence[0] == "`" and "`" in info)
                    if opens and fence_after[fence[0]] >= len(fence):
                        kinds[i] = _FENCE
                    if not info.strip():
                        fence_after[fence[0]] = max(fence_after[fence[0]], len(fence))
            elif c == "<":
                m = _COMMENT_OPEN_RE.match(line)
                if m is not None and (_COMMENT_CLOSE in line[m.end() :] or comment_after < n):
                    kinds[i] = _COMMENT
            if _COMMENT_CLOSE in line:
                comment_after = i

    def _fence_end(self, i: int) -> int:
        m = _FENCE_RE.match(self.lines[i])
        assert m is not None
        fence = m.group(1)
        for j in range(i + 1, len(self.lines)):
            close = _FENCE_RE.match(self.lines[j])
            if (
                close is not None
                and not close.group(2).strip()
                and close.group(1)[0] == fence[0]
                and len(close.group(1)) >= len(fence)
            ):
                return j
        raise AssertionError("unreachable: the backward pass saw a closer")  # pragma: no cover

    def _comment_end(self, i: int) -> int:
        line = self.lines[i]
        if _COMMENT_CLOSE in line[line.index("<!--") + 4 :]:
            return i
        return next(j for j in range(i + 1, len(self.lines)) if _COMMENT_CLOSE in self.lines[j])

    def scan(self) -> _Doc:
        lines, kinds = self.lines, self.kinds
        n = len(lines)
        headings: list[_Heading] = []
        blocks: list[_Block] = []
        i = 0
        while i < n:
            kind = kinds[i]
            if kind in (_BLANK, _BREAK):
                i += 1
            elif kind == _HEADING:
                m = _HEADING_RE.match(lines[i])
                assert m is not None
                title = _HEADING_CLOSE_RE.sub("", m.group(2) or "").strip()
                headings.append(_Heading(i, title))
                i += 1
            elif kind == _COMMENT:
                i = self._comment_end(i) + 1
            elif kind == _FENCE:
                end = self._fence_end(i) + 1
                blocks.append(_Block(i, end, len(headings) - 1, "\n".join(lines[i:end]), ""))
                i = end
            else:
                b = _BULLET_RE.match(lines[i]) if kind == _BULLET else None
                parts = [(b.group(3) or "") if b is not None else lines[i]]
                j = i + 1
                while j < n and kinds[j] == _TEXT:
                    parts.append(lines[j])
                    j += 1
                text = " ".join(" ".join(parts).split())
                marker = b.group(1) + b.group(2) if b is not None else ""
                blocks.append(_Block(i, j, len(headings) - 1, text, marker))
                i = j
        return _Doc(self.units, kinds, headings, blocks)


def _content(unit: str) -> str:
    return unit.removesuffix("\n").removesuffix("\r")


def _scan(text: str) -> _Doc:
    # Only "\n" ends a line: str.splitlines() would also split on \x0b, \x1c, \u2028...
    units = [line + "\n" for line in text.split("\n")]
    units[-1] = units[-1][:-1]
    if not units[-1]:
        units.pop()
    return _Scanner(units).scan()


def _facts(doc: _Doc) -> list[tuple[Fact, _Block]]:
    seen: dict[str, int] = {}
    out: list[tuple[Fact, _Block]] = []
    for block in doc.blocks:
        norm = normalize(block.text)
        if not norm:
            continue
        count = seen[norm] = seen.get(norm, 0) + 1
        fid = _fact_id(norm)
        if count > 1:
            fid = f"{fid}-{count}"
        section = doc.headings[block.heading].title if block.heading >= 0 else ""
        out.append((Fact(fid, section, block.text, norm), block))
    return out


def parse(text: str) -> list[Fact]:
    """The facts of a MEMORY.md text, in document order. Never raises."""
    return [fact for fact, _ in _facts(_scan(text))]


def spans(text: str) -> list[tuple[Fact, int, int]]:
    """Each fact of :func:`parse` with the lines it spans: ``(fact, first, end)``, ``end``
    exclusive, counted in ``text.split("\\n")``."""
    return [(fact, block.start, block.end) for fact, block in _facts(_scan(text))]


def replace_fact(text: str, index: int, new_text: str) -> str:
    """``text`` with the ``index``-th fact of :func:`parse` reworded to ``new_text`` in place
    (same list marker, same line; continuation lines folded into it). Raises :class:`FactError`
    for an empty text and :class:`FactNotFound` for an index out of range."""
    body = _LEADING_MARKER_RE.sub("", _one_line(new_text), count=1)
    if not normalize(body):
        raise FactError("A fact needs some text.")
    doc = _scan(text)
    pairs = _facts(doc)
    if not 0 <= index < len(pairs):
        raise FactNotFound(f"No fact number {index + 1} in the memory.")
    block = pairs[index][1]
    units = list(doc.lines)
    last = units[block.end - 1]
    ending = "\r\n" if last.endswith("\r\n") else "\n" if last.endswith("\n") else ""
    line = _bullet_line(block.bullet, body) if block.bullet else body
    units[block.start : block.end] = [line + ending]
    return "".join(units)


# --- editing ---------------------------------------------------------------------------

_LEADING_MARKER_RE = re.compile(r"\A(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|\Z)")


def _one_line(text: str) -> str:
    # Escaping "-->" keeps an earlier unclosed "<!--" from turning into a comment
    # that would swallow the lines we add; normalize() drops the backslash again.
    return " ".join(text.split()).replace("-->", "--\\>")


def add_fact(text: str, fact_text: str, section: str | None = None) -> str:
    """Append ``fact_text`` as a bullet at the end of ``section`` (default :data:`DEFAULT_SECTION`).

    The section heading is matched on its normalised title; a missing section is
    added as ``## section`` at the end of the text. The fact is folded onto one
    line and a leading list marker is dropped. If a fact with the same normalised
    text is already anywhere in the memory, ``text`` is returned unchanged.
    Line endings (LF or CRLF) follow the text's.

    Raises :class:`FactError` if ``fact_text`` has no words.
    """
    body = _LEADING_MARKER_RE.sub("", _one_line(fact_text), count=1)
    norm = normalize(body)
    if not norm:
        raise FactError("A fact needs some text.")
    doc = _scan(text)
    if any(fact.norm == norm for fact, _ in _facts(doc)):
        return text
    scoped = _SCOPE_MARKER_RE.search(text)
    if scoped is not None:
        # named scopes' blocks follow the global facts (core/memory/scopes.py): a fact added
        # without saying where is global, never the last scope's by standing at the end
        head = add_fact(text[:scoped.start()], fact_text, section)
        return head + ("\n" if head.endswith("\n") else "\n\n" if head else "") + text[scoped.start():]
    title = _HEADING_CLOSE_RE.sub("", _one_line(section or "")).strip()
    if not normalize(title):
        title = DEFAULT_SECTION
    newline = "\r\n" if "\r\n" in text else "\n"
    units = list(doc.lines)
    target = next(
        (k for k, h in enumerate(doc.headings) if normalize(h.title) == normalize(title)), None
    )

    if target is None:
        if units and not units[-1].endswith("\n"):
            units[-1] += newline
        if units and _content(units[-1]).strip():
            units.append(newline)
        units += [f"## {title}{newline}", _bullet_line("-", body) + newline]
        return "".join(units)

    in_section = [b for b in doc.blocks if b.heading == target]
    if in_section:
        at = in_section[-1].end
        marker = in_section[-1].bullet
        marker = marker if marker in ("-", "*", "+") else "-"
    else:
        at = doc.headings[target].line + 1
        marker = "-"
    line = _bullet_line(marker, body)
    if at == len(units) and not units[-1].endswith("\n"):
        units[-1] += newline  # keep the text's missing final newline missing
        units.append(line)
    else:
        units.insert(at, line + newline)
    return "".join(units)


def _bullet_line(marker: str, body: str) -> str:
    line = f"{marker} {body}"
    if _BREAK_RE.match(line) is not None:
        line = f"{marker} \\{body}"  # "- --" would read as a thematic break
    return line


def _locate(doc: _Doc, fact: Fact | str) -> _Block:
    pairs = _facts(doc)
    if isinstance(fact, Fact):
        for candidate, block in pairs:
            if candidate.id == fact.id:
                return block
        for candidate, block in pairs:
            if candidate.norm == fact.norm:
                return block
        raise FactNotFound(f"No fact {fact.id} ({fact.text!r}) in the memory.")
    found = find_fact([f for f, _ in pairs], fact)
    if found is None:
        raise FactNotFound(f"No fact matches {fact!r} exactly.")
    return next(block for candidate, block in pairs if candidate.id == found.id)


def remove_fact(text: str, fact: Fact | str) -> str:
    """Remove one fact (its bullet and continuation lines) from the text.

    A :class:`Fact` is looked up by id, then by normalised text. A string is an
    id, a unique id prefix of at least 4 characters, or the fact's exact text
    (see :func:`find_fact`); removal never guesses fuzzily, so resolve a vague
    query with :func:`match_fact` first. Nested bullets under the fact stay.
    Raises :class:`FactNotFound`.
    """
    doc = _scan(text)
    block = _locate(doc, fact)
    units = list(doc.lines)
    start, end = block.start, block.end
    if start == 0 or doc.kinds[start - 1] == _BLANK:
        # Do not leave two blank lines (or a trailing one) where the fact was.
        if end < len(units) and doc.kinds[end] == _BLANK:
            end += 1
        elif end == len(units) and start > 0:
            start -= 1
    elif end < len(units) and doc.kinds[end] == _TEXT:
        # Only a code fence can have text right after it; without a blank line
        # in its place the paragraphs above and below would run together.
        units[start:end] = ["\r\n" if units[start].endswith("\r\n") else "\n"]
        return "".join(units)
    del units[start:end]
    return "".join(units)


# --- matching --------------------------------------------------------------------------


def diff(old: str, new: str, *, threshold: float = DEFAULT_THRESHOLD) -> FactDiff:
    """Compare two MEMORY.md texts; see :func:`diff_facts`."""
    return diff_facts(parse(old), parse(new), threshold=threshold)


def diff_facts(
    old: Sequence[Fact], new: Sequence[Fact], *, threshold: float = DEFAULT_THRESHOLD
) -> FactDiff:
    """Pair the facts of two revisions.

    Facts with equal ``norm`` are unchanged, whatever their section. Of the rest,
    pairs with :func:`similarity` >= ``threshold`` are taken best-first (ties go
    to the pair in the same section, then to the earlier facts) as changed.
    """
    pending: dict[str, list[int]] = defaultdict(list)
    for i, fact in enumerate(old):
        pending[fact.norm].append(i)
    matched_old: set[int] = set()
    left_new: list[int] = []
    unchanged = 0
    for j, fact in enumerate(new):
        queue = pending.get(fact.norm)
        if queue:
            matched_old.add(queue.pop(0))
            unchanged += 1
        else:
            left_new.append(j)
    left_old = [i for i in range(len(old)) if i not in matched_old]

    pairs: list[tuple[float, bool, int, int]] = []
    if left_old and left_new:
        prep_new = {j: wording.prepare(new[j].norm) for j in left_new}
        index: dict[str, list[int]] = defaultdict(list)
        for j in left_new:
            for token in prep_new[j].tokens:
                index[token].append(j)
        common = max(_COMMON_TOKEN_MIN, len(left_new) // 2)
        for i in left_old:
            prep = wording.prepare(old[i].norm)
            postings = sorted((index[t] for t in prep.tokens if t in index), key=len)
            candidates: set[int] = set()
            for k, posting in enumerate(postings):
                if k and len(posting) > common:
                    break
                candidates.update(posting)
            for j in candidates:
                score = wording.score(prep, prep_new[j])
                if score >= threshold:
                    pairs.append((-score, old[i].section != new[j].section, i, j))
    pairs.sort()
    used_old: set[int] = set()
    used_new: dict[int, int] = {}
    for _, _, i, j in pairs:
        if i not in used_old and j not in used_new:
            used_old.add(i)
            used_new[j] = i
    return FactDiff(
        added=[new[j] for j in left_new if j not in used_new],
        dropped=[old[i] for i in left_old if i not in used_old],
        changed=[(old[used_new[j]], new[j]) for j in left_new if j in used_new],
        unchanged=unchanged,
    )


_ID_QUERY_RE = re.compile(r"[0-9a-f]{4,8}(?:-\d+)?")


def find_fact(facts: Sequence[Fact], query: str) -> Fact | None:
    """The fact with this id, unique id prefix (>= 4 characters) or exact normalised text."""
    q = query.strip().casefold()
    for fact in facts:
        if fact.id == q:
            return fact
    if _ID_QUERY_RE.fullmatch(q):
        by_prefix = [f for f in facts if f.id.startswith(q)]
        if len(by_prefix) == 1:
            return by_prefix[0]
    norm = normalize(query)
    return next((f for f in facts if f.norm == norm), None) if norm else None


def match_fact(
    facts: Sequence[Fact], query: str, *, threshold: float = DEFAULT_THRESHOLD
) -> Fact | None:
    """Find a fact by :func:`find_fact`, else the best fuzzy match scoring >= ``threshold``.

    A fuzzy query matches a fact that contains all its words (``"tea"`` finds
    ``"User likes tea"``) or that is :func:`similarity`-close to it. When two
    facts score the same, the query is ambiguous and the answer is ``None``.
    """
    found = find_fact(facts, query)
    if found is not None:
        return found
    norm = normalize(query)
    if not norm:
        return None
    q = wording.prepare(norm)
    best: Fact | None = None
    best_score = -1.0
    tie = False
    for fact in facts:
        p = wording.prepare(fact.norm)
        coverage = len(q.tokens & p.tokens) / len(q.tokens) if q.tokens else 0.0
        # The trigram term breaks ties between facts that contain all the query's words.
        score = max(wording.score(q, p), 0.9 * coverage + 0.1 * wording.dice(q.grams, p.grams))
        if score > best_score + 1e-9:
            best, best_score, tie = fact, score, False
        elif abs(score - best_score) <= 1e-9:
            tie = True
    if best is None or best_score < threshold or tie:
        return None
    return best


def rebase(update: str, base: str, now: str) -> str:
    """Carry the changes made from ``base`` to ``now`` into ``update`` (a proposal made from
    ``base``): facts removed meanwhile stay removed, rewordings stay, additions are kept. Pure."""
    if base == now:
        return update
    d = diff(base, now)
    out = update
    for f in d.dropped:
        hit = _same(out, f)
        if hit is not None:
            out = remove_fact(out, hit)
    for o, n in d.changed:
        hit = _same(out, o)
        if hit is not None:
            out = add_fact(remove_fact(out, hit), n.text, hit.section or n.section or None)
    for f in d.added:
        if _same(out, f) is None:  # added on both sides: once
            out = add_fact(out, f.text, f.section or None)
    return out


def _same(text: str, fact: Fact) -> Fact | None:
    return next((f for f in parse(text) if f.norm == fact.norm), None)
