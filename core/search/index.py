"""History search: a derived SQLite FTS5 index over the diary and the message log.

Owns ``state/search.sqlite``, the ``search`` service and the ``search_history`` agent
tool; the ``memtray history search`` command is in :mod:`cli_search`.

The index is *derived*: every document comes from an event, so deleting the file
(or a format change, or a log that no longer matches it) just rebuilds it from
the log. One document per event, its rowid being the event's seq:

* ``message`` events with role ``user`` or ``assistant`` and some text. Tool
  results (role ``tool``) and assistant messages that only call tools are *not*
  indexed: they are machine output (including this tool's own results, which
  would otherwise echo every earlier search back).
* ``memory.written`` events with a ``history_append``: the diary entry, as one
  ``history`` document.
* ``memory.purged`` means content left the log: the index is rebuilt from scratch.

Tables: ``documents`` (seq, kind, session, role, ts, text), the FTS5 index
``docs`` over its text (external content, ``unicode61 remove_diacritics 2``) and
``meta`` (format, last indexed seq/id and its log position, so a sync reads only
the log's tail).

Queries never reach FTS5 as syntax: each word becomes a quoted string, the words
are AND-ed, and a trailing ``*`` asks for a prefix match. Hits are ranked by BM25
among the newest 2000 matches (a word found everywhere would otherwise cost a
score for every document). When that finds nothing the words are matched as
case-insensitive substrings instead, newest first; ``regex=True`` matches a
Python regular expression (case-insensitive) over the stored texts, newest first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, tzinfo
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtray.core.base.errors import LogError, MemtrayError
from memtray.core.base.fsutil import FILE_MODE, ensure_dir
from memtray.core.base.home import Home
from memtray.core.llm.tools import Tool, ToolContext, ToolError
from memtray.core.log.eventlog import EventLog, Position
from memtray.core.log.events import Record
from memtray.core.log.store import Store, record_ending_at

if TYPE_CHECKING:
    from memtray.core.app import App

log = logging.getLogger(__name__)

INDEX_NAME = "search.sqlite"
FORMAT = 1
KINDS = ("history", "message")
_INDEXED_ROLES = frozenset({"user", "assistant"})
_BATCH = 2000  # records per transaction (and between checks for "stop")
_SNIPPET_TOKENS = 16
_RANK_WINDOW = 2000  # newest full-text matches ranked per query
_SNIPPET_CHARS = 240
_OPEN, _CLOSE, _ELLIPSIS = "«", "»", "…"


class SearchError(MemtrayError):
    """A search could not run: bad pattern or query, or the index is unusable."""


def index_path(home: Home) -> Path:
    return home.state / INDEX_NAME


@dataclass(frozen=True, slots=True)
class Hit:
    """One match. ``score`` is the negated BM25 rank (higher is better); 0.0 for
    substring and regex matches, which come newest first."""

    kind: str
    seq: int
    session: str | None
    role: str | None
    ts: str
    snippet: str
    score: float

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


# --- documents ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Doc:
    seq: int
    kind: str
    session: str | None
    role: str | None
    ts: str
    text: str


def document_of(rec: Record) -> _Doc | None:
    """The searchable document an event contributes, if any."""
    d = rec.data
    if rec.type == "message":
        role, text = d.get("role"), d.get("content")
        if role in _INDEXED_ROLES and isinstance(text, str) and text.strip():
            return _Doc(rec.seq, "message", rec.session, role, rec.ts, text)
    elif rec.type == "memory.written":
        text = d.get("history_append")
        if isinstance(text, str) and text.strip():
            return _Doc(rec.seq, "history", rec.session, None, rec.ts, text)
    return None


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
        quoted = '"' + core.replace('"', '""') + '"'
        terms.append(quoted + "*" if core != piece else quoted)
    return " AND ".join(terms) if terms else None


def _substring_pieces(query: str) -> list[str]:
    return [p for p in (piece.rstrip("*") or piece for piece in query.split()) if p]


def _like_escape(text: str) -> str:
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


def _regexp(pattern: str, text: str | None) -> bool:
    return text is not None and _compile(pattern).search(text) is not None


def _tidy(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _SNIPPET_CHARS:
        text = text[: _SNIPPET_CHARS - 1].rstrip() + _ELLIPSIS
    return text


def excerpt(text: str, pattern: re.Pattern[str]) -> str:
    """A window of ``text`` around the first match of ``pattern``, matches marked « »."""
    m = pattern.search(text)
    if m is None or m.end() == m.start():
        return _tidy(text)
    start = max(0, m.start() - 60)
    if start:
        space = text.find(" ", start, m.start())
        start = space + 1 if space >= 0 else start
    end = min(len(text), max(m.end(), start) + 120)
    body = pattern.sub(lambda x: f"{_OPEN}{x.group()}{_CLOSE}" if x.group() else "", text[start:end])
    return _tidy((_ELLIPSIS if start else "") + body + (_ELLIPSIS if end < len(text) else ""))


# --- the index ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Meta:
    last_seq: int = 0
    last_id: str = ""
    position: Position | None = None


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS documents(seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
    "session TEXT, role TEXT, ts TEXT NOT NULL, text TEXT NOT NULL)",
    # The full-text index over documents.text (external content: the text is stored once).
    "CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(text, content='documents', "
    "content_rowid='seq', tokenize='unicode61 remove_diacritics 2')",
)
_CLEAR = ("DELETE FROM documents", "INSERT INTO docs(docs) VALUES ('delete-all')")


class SearchIndex:
    """The FTS5 index file. Thread-safe: every operation holds one lock."""

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self._db = db
        self._lock = threading.RLock()
        self._validated = False  # the stored position was checked against the log

    # --- opening -----------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path) -> SearchIndex:
        """Open (creating or, if unreadable or of another format, recreating) the index."""
        path = Path(path)
        try:
            ensure_dir(path.parent)
            try:
                db = _connect(path)
            except sqlite3.DatabaseError as exc:
                log.warning("search index %s is unusable (%s); rebuilding it from the log", path, exc)
                _remove(path)
                db = _connect(path)
        except (OSError, sqlite3.Error) as exc:
            raise SearchError(
                f"cannot open the search index {path}: {exc}",
                hint=f"Check the permissions and free space of {path.parent}; the file is safe to delete.",
            ) from exc
        return cls(path, db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- keeping up with the log -------------------------------------------------------

    def sync(self, source: Store | EventLog, *, should_stop: Callable[[], bool] | None = None) -> int:
        """Index every record after the last indexed one; returns documents added.

        Incremental and idempotent. If the log no longer matches what was indexed
        (replaced, shortened, purged), the index is rebuilt. ``should_stop`` is
        polled between batches; what was indexed so far is kept.
        """
        elog = source.log if isinstance(source, Store) else source
        with self._lock, self._translate():
            meta = self._meta()
            if meta.last_seq > elog.last_seq or (meta.last_seq and meta.position is None):
                return self._rebuild(elog, should_stop)
            if meta.last_seq and not self._validated:
                assert meta.position is not None
                rec = record_ending_at(elog.dir, meta.position)
                if rec is None or rec.seq != meta.last_seq or rec.id != meta.last_id:
                    log.info("search index does not match the event log; rebuilding it")
                    return self._rebuild(elog, should_stop)
            self._validated = True
            added = self._consume(elog, meta, should_stop, rebuilding=False)
            if added < 0:
                return self._rebuild(elog, should_stop)
            return added

    def rebuild(self, source: Store | EventLog) -> int:
        """Drop every document and index the whole log again."""
        elog = source.log if isinstance(source, Store) else source
        with self._lock, self._translate():
            return self._rebuild(elog, None)

    def _rebuild(self, elog: EventLog, should_stop: Callable[[], bool] | None) -> int:
        with self._tx():
            for stmt in _CLEAR:
                self._db.execute(stmt)
            self._db.execute("DELETE FROM meta WHERE key != 'format'")
        self._validated = True
        return self._consume(elog, _Meta(), should_stop, rebuilding=True)

    def _consume(
        self, elog: EventLog, meta: _Meta, should_stop: Callable[[], bool] | None, *, rebuilding: bool
    ) -> int:
        """Index records after ``meta``; -1 means "this needs a rebuild" (nothing half-done)."""
        added = 0
        last: tuple[Record, Position] | None = None
        rows: list[tuple[int, str, str, str | None, str | None, str]] = []
        expect = meta.last_seq + 1
        pending = 0
        for rec, pos in elog.read(meta.position):
            if rec.seq < expect:
                continue  # only when reading from the start
            if rec.seq != expect and meta.position is not None:
                return -1  # the log moved under the stored position
            if rec.type == "memory.purged" and not rebuilding:
                self._flush(rows, last)
                return -1
            expect = rec.seq + 1
            doc = document_of(rec)
            if doc is not None:
                rows.append((doc.seq, doc.text, doc.kind, doc.session, doc.role, doc.ts))
            last = (rec, pos)
            pending += 1
            if pending >= _BATCH:
                added += self._flush(rows, last)
                rows, pending = [], 0
                if should_stop is not None and should_stop():
                    return added
        return added + self._flush(rows, last)

    def _flush(self, rows: list[tuple[int, str, str, str | None, str | None, str]],
               last: tuple[Record, Position] | None) -> int:
        if last is None:
            return 0
        rec, pos = last
        with self._tx():
            # Plain INSERTs: a seq indexed twice would be a bug, and the meta row
            # committed with them is what makes a retry skip them.
            self._db.executemany(
                "INSERT INTO documents(seq, text, kind, session, role, ts) VALUES (?,?,?,?,?,?)", rows
            )
            self._db.executemany("INSERT INTO docs(rowid, text) VALUES (?, ?)", [r[:2] for r in rows])
            self._db.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                [("last_seq", str(rec.seq)), ("last_id", rec.id),
                 ("position", json.dumps(pos.to_json()))],
            )
        return len(rows)

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        """One transaction (the connection is in autocommit mode otherwise)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _meta(self) -> _Meta:
        values = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        try:
            pos = Position.from_json(json.loads(values["position"])) if "position" in values else None
            return _Meta(int(values.get("last_seq", 0)), values.get("last_id", ""), pos)
        except (ValueError, TypeError, IndexError):
            return _Meta(1, "", None)  # unreadable: forces a rebuild

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._meta().last_seq

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM documents").fetchone()[0])

    @contextlib.contextmanager
    def _translate(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise SearchError(
                f"the search index failed: {exc}",
                hint=f"Delete {self.path}; it is rebuilt from the event log.",
            ) from exc

    # --- searching ---------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int = 20,
        kind: str | None = None,
        session: str | None = None,
        regex: bool = False,
    ) -> list[Hit]:
        """Best matches for ``query`` (see the module docstring for the rules)."""
        if limit < 1:
            raise SearchError(f"the limit must be at least 1, not {limit}")
        if kind is not None and kind not in KINDS:
            raise SearchError(f"unknown kind {kind!r}", hint=f"Use one of: {', '.join(KINDS)}.")
        filters, params = _filters(kind, session)
        if regex:
            if not query:
                return []
            pattern = compile_regex(query)
            return self._scan("text REGEXP ?", [query], filters, params, pattern, limit)
        if not query.strip():
            return []
        match = fts_query(query)
        if match is not None:
            hits = self._fts(match, filters, params, limit)
            if hits:
                return hits
        pieces = _substring_pieces(query)
        where, args = [], []
        for piece in pieces:
            if piece.isascii():
                where.append("text LIKE ? ESCAPE '\\'")
                args.append(_like_escape(piece))
            else:  # LIKE folds ASCII only
                where.append("text REGEXP ?")
                args.append(re.escape(piece))
        pattern = _compile("|".join(re.escape(p) for p in sorted(pieces, key=len, reverse=True)))
        return self._scan(" AND ".join(where), args, filters, params, pattern, limit)

    def _fts(self, match: str, filters: str, params: list[Any], limit: int) -> list[Hit]:
        # Rank (BM25) the newest _RANK_WINDOW matches only: a word found in most
        # documents would otherwise score every one of them (100 ms at 100 000
        # entries) for a ranking that means little. Snippets are made for the
        # chosen few only, one rowid lookup each.
        top_sql = (
            "SELECT seq, kind, session, role, ts, score FROM ("
            " SELECT d.seq, d.kind, d.session, d.role, d.ts, docs.rank AS score"
            " FROM docs JOIN documents AS d ON d.seq = docs.rowid"
            f" WHERE docs MATCH ?{filters} ORDER BY docs.rowid DESC LIMIT ?"
            ") ORDER BY score, seq DESC LIMIT ?"
        )
        snippet_sql = (
            f"SELECT snippet(docs, 0, '{_OPEN}', '{_CLOSE}', '{_ELLIPSIS}', {_SNIPPET_TOKENS}) "
            "FROM docs WHERE docs MATCH ? AND rowid = ?"
        )
        hits = []
        with self._lock:
            try:
                rows = self._db.execute(top_sql, [match, *params, _RANK_WINDOW, limit]).fetchall()
                for seq, k, s, r, ts, score in rows:
                    (snip,) = self._db.execute(snippet_sql, (match, seq)).fetchone()
                    hits.append(Hit(k, seq, s, r, ts, _tidy(snip), -float(score)))
            except sqlite3.OperationalError as exc:  # a query we failed to make safe
                log.warning("FTS query %r failed (%s); using substring search", match, exc)
                return []
        return hits

    def _scan(
        self, where: str, args: list[Any], filters: str, params: list[Any],
        pattern: re.Pattern[str], limit: int,
    ) -> list[Hit]:
        sql = (
            f"SELECT seq, kind, session, role, ts, text FROM documents AS d WHERE {where}{filters} "
            "ORDER BY seq DESC LIMIT ?"
        )
        with self._lock, self._translate():
            rows = self._db.execute(sql, [*args, *params, limit]).fetchall()
        return [Hit(k, seq, s, r, ts, excerpt(text, pattern), 0.0) for seq, k, s, r, ts, text in rows]


def _filters(kind: str | None, session: str | None) -> tuple[str, list[Any]]:
    sql, params = "", []
    if kind is not None:
        sql += " AND d.kind = ?"
        params.append(kind)
    if session is not None:
        sql += " AND d.session = ?"
        params.append(session)
    return sql, params


def _connect(path: Path) -> sqlite3.Connection:
    if not path.exists():
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
        os.close(fd)
    if os.name != "nt":
        os.chmod(path, FILE_MODE)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        # WAL + NORMAL: a crash may lose the last batches (re-indexed next time),
        # never corrupt the file. The -wal/-shm files inherit the file's 0600 mode.
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.create_function("regexp", 2, _regexp, deterministic=True)
        stored = _stored_format(db)
        if stored not in (None, str(FORMAT)):
            log.info("search index format %s is not %s; rebuilding it", stored, FORMAT)
            db.close()
            _remove(path)
            return _connect(path)
        for stmt in _SCHEMA:
            db.execute(stmt)
        db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('format', ?)", (str(FORMAT),))
    except BaseException:
        db.close()
        raise
    return db


def _stored_format(db: sqlite3.Connection) -> str | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except sqlite3.OperationalError:  # no meta table: a new file
        return None
    return None if row is None else str(row[0])


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


# --- the service -------------------------------------------------------------------------

TOOL_NAME = "search_history"
TOOL_DESCRIPTION = (
    "Search earlier conversations and the history diary (HISTORY.md) by words. "
    "Use it when the user refers to something discussed before that is not in your memory. "
    "Words are AND-ed; end a word with * to match a prefix. Returns dated matching excerpts."
)
TOOL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "words to look for"},
        "limit": {"type": "integer", "description": "most results to return (default 8, at most 25)"},
    },
    "required": ["query"],
    "additionalProperties": False,
}
_TOOL_LIMIT = 25


class SearchService:
    """Keeps a :class:`SearchIndex` in step with the store, lazily before each search.

    Appends only mark the index stale (never blocking the appending thread); the
    first search after them indexes the new records. :meth:`start` indexes the
    backlog once in a background thread.
    """

    def __init__(self, store: Store, index: SearchIndex) -> None:
        self.store = store
        self.index = index
        self._dirty = True
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sync_lock = threading.Lock()
        store.subscribe(self._on_append)

    def _on_append(self, records: list[Record], state: object) -> None:
        self._dirty = True

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._background, name="memtray-search", daemon=True)
            self._thread.start()

    def _background(self) -> None:
        try:
            self.sync(should_stop=self._stop.is_set)
        except MemtrayError as exc:
            log.warning("could not bring the search index up to date: %s", exc)
        except Exception:  # a bug: log it; the next search retries and raises it there
            log.exception("indexing the history for search failed")

    def sync(self, *, should_stop: Callable[[], bool] | None = None) -> int:
        """Index what was appended since the last sync; returns documents added."""
        with self._sync_lock:
            return self._sync_locked(should_stop)

    def _sync_locked(self, should_stop: Callable[[], bool] | None = None) -> int:
        if not self._dirty:
            return 0
        self._dirty = False  # appends during the sync mark it again
        try:
            added = self.index.sync(self.store, should_stop=should_stop)
        except BaseException:
            self._dirty = True
            raise
        if should_stop is not None and should_stop():
            self._dirty = True  # stopped early: finish next time
        return added

    def search(
        self, query: str, *, limit: int = 20, kind: str | None = None,
        session: str | None = None, regex: bool = False,
    ) -> list[Hit]:
        with self._sync_lock:
            try:
                self._sync_locked()
            except (SearchError, LogError) as exc:
                # A damaged log or index still lets us search what was indexed.
                log.warning("searching a search index that is not up to date: %s", exc)
            return self.index.search(query, limit=limit, kind=kind, session=session, regex=regex)

    @contextlib.contextmanager
    def detached(self) -> Iterator[None]:
        """Close the index file for the duration (e.g. while ``state/`` is emptied).

        Searches wait meanwhile; afterwards the index is reopened (and rebuilt
        from the log if the file is gone) and brought up to date on next use.
        """
        with self._sync_lock:
            self.index.close()
            try:
                yield
            finally:
                self.index = SearchIndex.open(self.index.path)
                self._dirty = True

    def tool(self) -> Tool:
        return Tool(TOOL_NAME, TOOL_DESCRIPTION, TOOL_PARAMETERS, self._tool_handler)

    async def _tool_handler(self, args: dict[str, Any], ctx: ToolContext) -> str:
        query = str(args["query"])
        limit = min(max(int(args.get("limit") or 8), 1), _TOOL_LIMIT)
        try:
            hits = await asyncio.to_thread(self.search, query, limit=limit)
        except MemtrayError as exc:
            raise ToolError(str(exc)) from exc
        return format_hits(hits)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.index.close()


def format_hits(hits: Iterable[Hit], tz: tzinfo | None = None) -> str:
    lines = [h.line(tz) for h in hits]
    return "\n".join(lines) if lines else "no matches"


def install(app: App, *, start: bool) -> None:
    """Add the ``search`` service and the ``search_history`` tool to ``app``."""
    try:
        index = SearchIndex.open(index_path(app.home))
    except SearchError as exc:
        log.error("history search is unavailable: %s", exc)
        return
    svc = SearchService(app.store, index)
    app.services["search"] = svc
    app.tools.add(svc.tool())
    if start:
        svc.start()
