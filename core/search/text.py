"""Text rules shared by both halves of history search: hits, queries, excerpts, CJK pairs.

Owns :class:`Hit` (one result, its JSON shape is the ``history search --json``
contract), the FTS5 query quoting, the CJK bigram split used on both sides of the
keyword index, and the excerpts with matches marked « ».
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, tzinfo
from functools import lru_cache
from typing import Any

from memtray.core.base.errors import MemtrayError

SNIPPET_CHARS = 240
OPEN, CLOSE, ELLIPSIS = "«", "»", "…"

class SearchError(MemtrayError):
    """A search could not run: bad pattern or query, or the index is unusable."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One match. ``score``: higher is better. In keyword mode it is the negated BM25
    rank (``keyword_score`` too); 0.0 for substring and regex matches, which come
    newest first. In semantic mode it is the cosine similarity (``semantic_score``);
    in hybrid mode the reciprocal-rank-fusion sum, with both parts alongside (None
    where that half did not find the document). ``mode`` is what actually ran."""

    kind: str
    seq: int
    session: str | None
    role: str | None
    ts: str
    snippet: str
    score: float
    mode: str = "keyword"
    keyword_score: float | None = None
    semantic_score: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self, tz: tzinfo | None = None) -> str:
        """``[2026-11-30 10:15] (cli/user) …snippet…``: the time in ``tz`` (default: local),
        and "history" in place of the role for diary entries."""
        try:
            when = datetime.fromisoformat(self.ts.replace("Z", "+00:00")).astimezone(tz)
            stamp = when.strftime("%Y-%m-%d %H:%M")
        except ValueError:
            stamp = self.ts
        return f"[{stamp}] ({self.session or '-'}/{self.role or self.kind}) {self.snippet}"


def format_hits(hits: Iterable[Hit], tz: tzinfo | None = None) -> str:
    lines = [h.line(tz) for h in hits]
    return "\n".join(lines) if lines else "no matches"


# --- scripts without spaces ----------------------------------------------------------

_CJK_RUN = re.compile(
    "[\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]+"
)


def has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None


def cjk_split(text: str) -> str:
    """``text`` with every CJK run replaced by its overlapping character pairs
    ("我女儿" -> " 我女 女儿 "); a single character stays as it is."""
    if not has_cjk(text):
        return text

    def pairs(m: re.Match[str]) -> str:
        run = m.group()
        if len(run) == 1:
            return f" {run} "
        return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "

    return _CJK_RUN.sub(pairs, text)


# --- query handling ----------------------------------------------------------------------


def fts_query(query: str) -> str | None:
    """``query`` as a safe FTS5 expression (quoted words, AND-ed), or None if it has no words.

    A word is a whitespace-separated piece with at least one letter or digit; a
    trailing ``*`` makes it a prefix. Everything else (quotes, brackets,
    AND/OR/NOT/NEAR, ``-``, ``:``) is literal text inside a quoted string.
    """
    terms = []
    for piece in query.replace("\x00", " ").split():  # FTS5 strings end at a NUL
        core = piece.rstrip("*")
        if not any(ch.isalnum() for ch in core):
            continue
        # a CJK piece becomes the phrase of its character pairs, which is what was indexed
        quoted = '"' + " ".join(cjk_split(core).split()).replace('"', '""') + '"'
        terms.append(quoted + "*" if core != piece else quoted)
    return " AND ".join(terms) if terms else None


def substring_pieces(query: str) -> list[str]:
    return [p for p in (piece.rstrip("*") or piece for piece in query.split()) if p]


def words_pattern(pieces: list[str]) -> re.Pattern[str]:
    """A case-insensitive pattern matching any of ``pieces`` (longest first), for excerpts."""
    return _compile("|".join(re.escape(p) for p in sorted(pieces, key=len, reverse=True)) or "(?!)")


def like_escape(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def compile_regex(pattern: str) -> re.Pattern[str]:
    try:
        return _compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise SearchError(
            f"invalid regular expression {pattern!r}: {exc}",
            hint="Use Python `re` syntax (it is case-insensitive), or drop --regex to search plain words.",
        ) from None


def regexp(pattern: str, text: str | None) -> bool:
    return text is not None and _compile(pattern).search(text) is not None


def tidy(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > SNIPPET_CHARS:
        text = text[: SNIPPET_CHARS - 1].rstrip() + ELLIPSIS
    return text


def excerpt(text: str, pattern: re.Pattern[str]) -> str:
    """A window of ``text`` around the first match of ``pattern``, matches marked « »."""
    m = pattern.search(text)
    if m is None or m.end() == m.start():
        return tidy(text)
    start = max(0, m.start() - 60)
    if start:
        space = text.find(" ", start, m.start())
        start = space + 1 if space >= 0 else start
    end = min(len(text), max(m.end(), start) + 120)
    body = pattern.sub(lambda x: f"{OPEN}{x.group()}{CLOSE}" if x.group() else "", text[start:end])
    return tidy((ELLIPSIS if start else "") + body + (ELLIPSIS if end < len(text) else ""))
