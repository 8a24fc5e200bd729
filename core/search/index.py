"""The keyword half of history search: a derived SQLite FTS5 index over the diary and the log.

Owns ``state/search.sqlite`` (the vectors of :mod:`vectors` live in the same file)
and the keyword rules; the service that keeps it up to date is in :mod:`service`.

The index is *derived*: every document comes from an event, so deleting the file
(or a format change, or a log that no longer matches it) just rebuilds it from
the log. One document per event, its rowid being the event's seq:

* ``message`` events with role ``user`` or ``assistant`` and some text. Tool
  results (role ``tool``) and assistant messages that only call tools are *not*
  indexed: they are machine output (including this tool's own results, which
  would otherwise echo every earlier search back).
* ``memory.written`` events with a ``history_append``: the diary entry, as one
  ``history`` document; with a ``reason`` other than consolidation, the memory
  revision itself too is a ``memory`` document (the facts it added or changed).
* ``memory.purged`` means content left the log: the index is rebuilt from scratch.

Tables: ``documents`` (seq, kind, session, role, ts, text), the FTS5 index
``docs`` over its text (external content, ``porter unicode61 remove_diacritics 2``:
English word forms share a stem, so "running" finds "runs") and ``meta`` (format,
last indexed seq/id and its log position, so a sync reads only the log's tail).
Scripts without spaces between words (Chinese, Japanese, Korean) are indexed as
overlapping character pairs, the usual CJK bigram scheme, so "老师" is found
inside "我女儿的老师"; a query is split the same way and its pairs must be adjacent.

Queries never reach FTS5 as syntax: each word becomes a quoted string, the words
are AND-ed, and a trailing ``*`` asks for a prefix match. Hits are ranked by BM25
among the newest 2000 matches (a word found everywhere would otherwise cost a
score for every document). When that finds nothing the words are matched as
case-insensitive substrings instead, newest first; ``regex=True`` matches a
Python regular expression (case-insensitive) over the stored texts, newest first.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtray.core.base.fsutil import FILE_MODE, ensure_dir
from memtray.core.base.home import Home
from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import MemoryPurged, MemoryWritten, Message, Record, scrub_text
from memtray.core.log.origin import said_at
from memtray.core.log.projection_driver import BATCH, START, Mark, ProjectionDriver, quarantine_file
from memtray.core.log.segments import Position
from memtray.core.log.store import Store
from memtray.core.log.transcript import diff_text
from memtray.core.search.text import (
    CLOSE,
    ELLIPSIS,
    OPEN,
    Hit,
    SearchError,
    cjk_split,
    compile_regex,
    excerpt,
    fts_query,
    has_cjk,
    like_escape,
    regexp,
    substring_pieces,
    tidy,
    words_pattern,
)

log = logging.getLogger(__name__)

INDEX_NAME = "search.sqlite"
FORMAT = 2  # 2: porter stemming, CJK bigrams, memory documents
KINDS = ("history", "memory", "message")
#: how documents are dated (meta ``said_at``): 1 peers' events by their origin, 2 imported
#: messages by their sent_at too; an index of an older rule that holds such messages is rebuilt
SAID_AT = "2"
_INDEXED_ROLES = frozenset({"user", "assistant"})
_BATCH = BATCH  # records per transaction (and between checks for "stop")
_SNIPPET_TOKENS = 16
_RANK_WINDOW = 2000  # newest full-text matches ranked per query


def index_path(home: Home) -> Path:
    return home.state / INDEX_NAME


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
    if rec.type == Message.TYPE:
        m = Message.of(rec)
        if m.role in _INDEXED_ROLES and m.content and m.content.strip():
            return _Doc(rec.seq, "message", rec.session, m.role, said_at(rec), m.content)
    elif rec.type == MemoryWritten.TYPE:
        w = MemoryWritten.of(rec)
        if w.history_append and w.history_append.strip():
            return _Doc(rec.seq, "history", rec.session, None, said_at(rec), w.history_append)
        facts = revision_text(w)
        if facts:
            return _Doc(rec.seq, "memory", rec.session, None, said_at(rec), facts)
    return None


def revision_text(w: MemoryWritten) -> str:
    """What a memory revision (remember, hand edit, restore...) said: its added and
    changed facts, one per line. Consolidations are covered by their diary entry."""
    if w.reason == "consolidation":
        return ""
    return diff_text(w.diff)


# --- the index ---------------------------------------------------------------------------


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS documents(seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
    "session TEXT, role TEXT, ts TEXT NOT NULL, text TEXT NOT NULL)",
    # The full-text index over documents.text (external content: the text is stored once).
    "CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(text, content='documents', "
    "content_rowid='seq', tokenize='porter unicode61 remove_diacritics 2')",
)
_CLEAR = ("DELETE FROM documents", "INSERT INTO docs(docs) VALUES ('delete-all')")


class SearchIndex:
    """The FTS5 index file. Thread-safe: every operation holds :attr:`lock`, which the
    vector table in the same file (:class:`~memtray.core.search.vectors.VectorStore`)
    shares with it, as it shares :attr:`db`. A :class:`Projection` of the log, kept in step
    by its :attr:`driver`; a purge (content left the log) rebuilds it."""

    name = "search index"
    restart_types = frozenset({MemoryPurged.TYPE})

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self.db = db
        self.lock = threading.RLock()
        self.driver = ProjectionDriver(self, quarantine_file(path))
        self._count: int | None = None  # documents, known since the last write (count() scans them)

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
                if _is_full(exc):  # not damage: deleting it would only hand the space to another write
                    raise
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
        with self.lock:
            self.db.close()

    # --- keeping up with the log (a Projection: core/log/projection_driver.py) ----------

    def sync(self, source: Store | EventLog, *, should_stop: Callable[[], bool] | None = None) -> int:
        """Index every record after the last indexed one; returns documents added.

        Incremental and idempotent. If the log no longer matches what was indexed
        (replaced, shortened, purged), the index is rebuilt. ``should_stop`` is
        polled between batches; what was indexed so far is kept.
        """
        elog = source.log if isinstance(source, Store) else source
        with self.lock, self._translate():
            return self.driver.catch_up(elog, should_stop=should_stop, batch=_BATCH)

    def rebuild(self, source: Store | EventLog) -> int:
        """Drop every document and index the whole log again."""
        elog = source.log if isinstance(source, Store) else source
        with self.lock, self._translate():
            return self.driver.rebuild(elog, batch=_BATCH)

    def position(self) -> Mark | None:
        mark = self._meta()
        if mark is None or (mark.seq and mark.position is None):
            return None
        if mark.seq and self._dated_by_import():
            log.info("search index dates synced messages by their import; rebuilding it")
            return None
        return mark

    def _dated_by_import(self) -> bool:
        """An index from before imported messages were dated when said (origin.said_at) that
        holds some (their sessions are ``name@<device>``, or ``chatgpt:``/``nanobot:`` ones
        for ``memtray import``, dated when sent since ``said_at`` 2): it is rebuilt once,
        vectors kept (a format change would drop them, and the offline model takes hours)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'said_at'").fetchone()
        if row is not None and str(row[0]) == SAID_AT:
            return False
        with self._tx():
            self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('said_at', ?)", (SAID_AT,))
        if row is None and self.db.execute(
                "SELECT 1 FROM documents WHERE session GLOB '*@d*' LIMIT 1").fetchone() is not None:
            return True
        return self.db.execute("SELECT 1 FROM documents WHERE session GLOB 'chatgpt:*' "
                               "OR session GLOB 'nanobot:*' LIMIT 1").fetchone() is not None

    def start_over(self, elog: EventLog) -> Mark:
        self._count = None
        with self._tx():
            for stmt in _CLEAR:
                self.db.execute(stmt)
            # vec_* keys belong to the vector table, which keeps its rows (see vectors.py)
            self.db.execute("DELETE FROM meta WHERE key != 'format' AND key NOT LIKE 'vec\\_%' ESCAPE '\\'")
            self.db.execute("INSERT INTO meta(key, value) VALUES ('generation', ?)", (os.urandom(8).hex(),))
            self.db.execute("INSERT INTO meta(key, value) VALUES ('said_at', ?)", (SAID_AT,))
        return START

    def apply(self, records: Sequence[Record], mark: Mark) -> int:
        rows = []
        for rec in records:
            doc = document_of(rec)
            if doc is not None:  # text older versions logged (lone surrogates) is indexed made valid
                rows.append((doc.seq, scrub_text(doc.text), doc.kind, doc.session and scrub_text(doc.session),
                             doc.role, doc.ts))
        assert mark.position is not None
        self._count = None
        with self._tx():
            # Plain INSERTs: a seq indexed twice would be a bug, and the meta row
            # committed with them is what makes a retry skip them.
            self.db.executemany(
                "INSERT INTO documents(seq, text, kind, session, role, ts) VALUES (?,?,?,?,?,?)", rows
            )
            self.db.executemany(
                "INSERT INTO docs(rowid, text) VALUES (?, ?)", [(r[0], cjk_split(r[1])) for r in rows]
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                [("last_seq", str(mark.seq)), ("last_id", mark.id),
                 ("position", json.dumps(mark.position.to_json()))],
            )
        return len(rows)

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        """One transaction (the connection is in autocommit mode otherwise)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _meta(self) -> Mark | None:
        """The stored mark; None when unreadable (the driver then rebuilds)."""
        values = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        try:
            pos = Position.from_json(json.loads(values["position"])) if "position" in values else None
            return Mark(int(values.get("last_seq", 0)), values.get("last_id", ""), pos)
        except (ValueError, TypeError, IndexError):
            return None

    @property
    def last_seq(self) -> int:
        with self.lock:
            mark = self._meta()
            return mark.seq if mark is not None else 0

    def count(self) -> int:
        """How many documents there are (the ranking reads it for every query: kept between writes)."""
        with self.lock:
            if self._count is None:
                self._count = int(self.db.execute("SELECT count(*) FROM documents").fetchone()[0])
            return self._count

    @property
    def generation(self) -> str:
        """Changes whenever the documents are rebuilt (derived data keyed by seq re-checks then)."""
        with self.lock:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            return "" if row is None else str(row[0])

    def documents_after(self, seq: int, limit: int) -> list[tuple[int, str]]:
        """``(seq, text)`` of the next ``limit`` documents after ``seq``, oldest first."""
        with self.lock, self._translate():
            rows = self.db.execute(
                "SELECT seq, text FROM documents WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit)
            ).fetchall()
        return [(int(a), str(b)) for a, b in rows]

    def documents(self, seqs: Iterable[int]) -> dict[int, tuple[str, str | None, str | None, str, str]]:
        """``seq -> (kind, session, role, ts, text)`` for the seqs that are documents."""
        wanted = list(seqs)
        out: dict[int, tuple[str, str | None, str | None, str, str]] = {}
        with self.lock, self._translate():
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                marks = ",".join("?" * len(chunk))
                for seq, k, s, r, ts, text in self.db.execute(
                    f"SELECT seq, kind, session, role, ts, text FROM documents WHERE seq IN ({marks})", chunk
                ):
                    out[int(seq)] = (k, s, r, ts, text)
        return out

    def seqs_of(self, sessions: Iterable[str]) -> set[int]:
        """The seqs of every document of ``sessions``."""
        wanted = list(sessions)
        out: set[int] = set()
        with self.lock, self._translate():
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                marks = ",".join("?" * len(chunk))
                out.update(int(r[0]) for r in self.db.execute(
                    f"SELECT seq FROM documents WHERE session IN ({marks})", chunk))
        return out

    def allowed(self, kind: str | None, session: str | None) -> set[int] | None:
        """The seqs that pass the filters (None: no filter)."""
        if kind is None and session is None:
            return None
        filters, params = filter_sql(kind, session)
        with self.lock, self._translate():
            rows = self.db.execute(f"SELECT seq FROM documents AS d WHERE 1{filters}", params).fetchall()
        return {int(r[0]) for r in rows}

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
        filters, params = filter_sql(kind, session)
        if regex:
            if not query:
                return []
            pattern = compile_regex(query)
            return self._scan("text REGEXP ?", [query], filters, params, pattern, limit)
        if not query.strip():
            return []
        match = fts_query(query)
        if match is not None:
            hits = self._fts(match, substring_pieces(query), filters, params, limit)
            if hits:
                return hits
        pieces = substring_pieces(query)
        where, args = [], []
        for piece in pieces:
            if piece.isascii():
                where.append("text LIKE ? ESCAPE '\\'")
                args.append(like_escape(piece))
            else:  # LIKE folds ASCII only
                where.append("text REGEXP ?")
                args.append(re.escape(piece))
        pattern = words_pattern(pieces)
        return self._scan(" AND ".join(where), args, filters, params, pattern, limit)

    def _fts(
        self, match: str, query_words: list[str], filters: str, params: list[Any], limit: int,
    ) -> list[Hit]:
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
            f"SELECT snippet(docs, 0, '{OPEN}', '{CLOSE}', '{ELLIPSIS}', {_SNIPPET_TOKENS}) "
            "FROM docs WHERE docs MATCH ? AND rowid = ?"
        )
        hits = []
        with self.lock:
            try:
                rows = self.db.execute(top_sql, [match, *params, _RANK_WINDOW, limit]).fetchall()
                for seq, k, s, r, ts, score in rows:
                    (snip,) = self.db.execute(snippet_sql, (match, seq)).fetchone()
                    if OPEN not in snip and has_cjk(snip):  # pairs were matched, not the stored words
                        (text,) = self.db.execute("SELECT text FROM documents WHERE seq = ?", (seq,)).fetchone()
                        snip = excerpt(text, words_pattern(query_words))
                    hits.append(Hit(k, seq, s, r, ts, tidy(snip), -float(score), "keyword", -float(score)))
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
        with self.lock, self._translate():
            rows = self.db.execute(sql, [*args, *params, limit]).fetchall()
        return [Hit(k, seq, s, r, ts, excerpt(text, pattern), 0.0) for seq, k, s, r, ts, text in rows]


def filter_sql(kind: str | None, session: str | None) -> tuple[str, list[Any]]:
    """SQL conditions (`` AND d.kind = ?``...) on ``documents AS d`` for the filters, and their values."""
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
        db.create_function("regexp", 2, regexp, deterministic=True)
        stored = _stored_format(db)
        if stored not in (None, str(FORMAT)):
            log.info("search index format %s is not %s; rebuilding it", stored, FORMAT)
            db.close()
            _remove(path)
            return _connect(path)
        for stmt in _SCHEMA:
            db.execute(stmt)
        db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('format', ?)", (str(FORMAT),))
        if stored is None:  # a new file dates imported messages when said from the start
            db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('said_at', ?)", (SAID_AT,))
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


def _is_full(exc: sqlite3.Error) -> bool:
    """SQLITE_FULL (or the OS's ENOSPC under it): the disk is full, the file is fine."""
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
