"""The search service: keeps the index and its vectors in step with the log, answers
keyword / semantic / hybrid searches, recalls past snippets for a turn, and is the
``search_history`` tool.

Owns :class:`SearchService` and ``install``. Appends never touch the keyword index
(never blocking the appending thread); the next search indexes the new records
(the index's driver, core/log/projection_driver.py, knows how far it is), and
:meth:`SearchService.start` indexes the backlog once in a thread.
Embedding runs as a background task on the app's worker loop, and only in a
long-lived instance (the daemon, the warm instance, the desktop), which calls
:meth:`SearchService.start_embedding`: a one-shot command never starts it, so it
can neither delay nor outlive the command (``history embed`` runs it in the
foreground on purpose). It is batched (:data:`BATCH` documents a call),
resumable (the position is stored with the vectors, so a restart continues where
it stopped), retried with a back-off when the model fails, and never awaited by
a turn. Until a document has its vector it is found by its words only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memtray import resources
from memtray.core.base.config import Config, Settings
from memtray.core.base.errors import LLMError, LogError, MemtrayError
from memtray.core.base.home import Home
from memtray.core.llm.tools import Tool, ToolContext, ToolError, ToolRegistry
from memtray.core.log.events import Record, Usage, UsageRecorded
from memtray.core.log.store import Store
from memtray.core.memory import scopes
from memtray.core.search.embed import SETUP_HINT, Embedder
from memtray.core.search.hybrid import (
    CANDIDATES,
    NEAR_SPREAD,
    WEAK_SEMANTIC_WEIGHT,
    fuse,
    keyword_first,
    semantic_hits,
)
from memtray.core.search.index import KINDS, SearchIndex, index_path
from memtray.core.search.query import content_words
from memtray.core.search.ranking import Ranker
from memtray.core.search.text import Hit, SearchError, format_hits

__all__ = ["MODES", "Recall", "SearchResult", "SearchService", "build", "format_hits"]
from memtray.core.search.vectors import VectorStore, cosine

log = logging.getLogger(__name__)

MODES = ("keyword", "semantic", "hybrid")
BATCH = 64  # documents per embedding call at most (the offline model's are smaller: Embedder.batch_size)
QUERY_TIMEOUT = 10.0  # seconds a query's embedding may take before keyword results are used
RECALL_TIMEOUT = 4.0
#: a semantic match weaker than this is not recalled (keyword matches always may be)
RECALL_MIN_SIMILARITY = 0.35
RECALL_CHARS = 400
_BACKOFF = (30.0, 120.0, 600.0, 1800.0)

TOOL_NAME = "search_history"
TOOL_DESCRIPTION = (
    "Search earlier conversations, the history diary (HISTORY.md) and memory edits, by words "
    "and by meaning (other wordings and languages match too when an embedding model is set up). "
    "Use it when the user refers to something discussed before that is not in your memory. "
    "Returns dated matching excerpts."
)
TOOL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "what to look for"},
        "limit": {"type": "integer", "description": "most results to return (default 8, at most 25)"},
    },
    "required": ["query"],
    "additionalProperties": False,
}
_TOOL_LIMIT = 25


@dataclass
class SearchResult:
    """Hits and how they were found: ``mode`` is what ran (``hybrid`` asked without an
    embedding model runs ``keyword``), ``notes`` say why it differs from what was asked."""

    hits: list[Hit]
    mode: str
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Recall:
    """Past snippets given to a turn: the quoted block and the seqs it quotes."""

    text: str
    seqs: list[int]


@dataclass
class EmbedStatus:
    model: str
    done: int
    total: int
    running: bool
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "done": self.done, "total": self.total,
                "running": self.running, "error": self.error}


class SearchService:
    """Keyword index, vectors and embedder, kept in step with ``store``."""

    def __init__(
        self, store: Store, index: SearchIndex, embedder: Embedder, *,
        submit: Callable[[Coroutine[Any, Any, Any]], concurrent.futures.Future[Any]] | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.vectors = VectorStore(index)
        self.embedder = embedder
        self._submit = submit
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sync_lock = threading.Lock()
        self._backfill: concurrent.futures.Future[Any] | None = None
        self._backfill_lock = asyncio.Lock()  # one backfill at a time (background or `history embed`)
        self._listeners: list[Callable[[int, int], None]] = []  # backfill progress (worker loop only)
        self._started = False
        self._embedding = False  # background embedding: long-lived instances only (module doc)
        self._failures = 0
        self._retry_at = 0.0
        self.last_error: str | None = None
        #: whether background embedding may spend now (the app sets the upkeep budget here:
        #: core/memory/upkeep.py); asked on the worker before and between batches
        self.may_spend: Callable[[], bool] = lambda: True
        store.subscribe(self._on_append)

    # --- keeping up ----------------------------------------------------------------

    def _on_append(self, records: list[Record], state: object) -> None:
        if self._embedding:
            self._kick()

    def start(self) -> None:
        """Index the backlog in a thread (the keyword index; embedding is :meth:`start_embedding`)."""
        self._started = True
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
        if self._embedding and not self._stop.is_set():
            self._kick()

    def start_embedding(self) -> None:
        """Embed the history in the background from now on, and whatever is appended later
        (a long-lived instance only: module doc). Idempotent."""
        self._embedding = True
        if not self._started:
            self.start()
        self._kick()  # the backfill brings the keyword index up to date first

    @property
    def embedding_task(self) -> concurrent.futures.Future[Any] | None:
        """The background backfill running or last run (None: none was started)."""
        return self._backfill

    def sync(self, *, should_stop: Callable[[], bool] | None = None) -> int:
        """Index what was appended since the last sync; returns documents added."""
        with self._sync_lock:
            return self.index.sync(self.store, should_stop=should_stop)

    def _sync_quietly(self) -> None:
        try:
            self.index.sync(self.store)
        except (SearchError, LogError) as exc:
            # A damaged log or index still lets us search what was indexed.
            log.warning("searching a search index that is not up to date: %s", exc)

    # --- embedding -----------------------------------------------------------------

    def _kick(self) -> None:
        """Start the background backfill unless it runs, is not configured, or backs off."""
        if (self._submit is None or not self._embedding or not self.embedder.available
                or self._stop.is_set()):
            return
        if self._backfill is not None and not self._backfill.done():
            return
        if time.monotonic() < self._retry_at:
            return
        self._backfill = self._submit(self._background_backfill())

    async def _background_backfill(self) -> None:
        if not self.may_spend():  # over the day's budget: the next append or day starts it again
            return
        try:
            await self.backfill(should_stop=lambda: not self.may_spend())
            self._failures = 0
            self.last_error = None
        except LLMError as exc:
            delay = _BACKOFF[min(self._failures, len(_BACKOFF) - 1)]
            self._failures += 1
            self._retry_at = time.monotonic() + delay
            self.last_error = str(exc)
            log.warning("embedding the history failed (%s); keyword search meanwhile, retrying in %.0fs",
                        exc, delay)
        except MemtrayError as exc:
            self.last_error = str(exc)
            log.warning("embedding the history stopped: %s", exc)

    async def backfill(self, *, progress: Callable[[int, int], None] | None = None,
                       should_stop: Callable[[], bool] | None = None) -> int:
        """Embed every document that has no vector yet, :data:`BATCH` at a time; returns
        how many this call embedded. Resumable: what was stored stays stored if it stops.
        ``progress(done, total)`` hears of every batch, also of a background backfill that
        runs meanwhile (this call then waits for it and finishes what is left)."""
        if not self.embedder.available:
            raise SearchError(self.embedder.keyword_only_reason or "no embedding model is configured",
                              hint=SETUP_HINT)
        if progress is not None:
            self._listeners.append(progress)
        try:
            async with self._backfill_lock:
                return await self._backfill_locked(should_stop)
        finally:
            if progress is not None:
                self._listeners.remove(progress)

    async def _backfill_locked(self, should_stop: Callable[[], bool] | None) -> int:
        done = 0
        await asyncio.to_thread(self._prepare)
        while not (should_stop is not None and should_stop()) and not self._stop.is_set():
            batch, through = await asyncio.to_thread(
                self.vectors.pending, min(BATCH, self.embedder.batch_size))
            if not batch:
                break
            vecs, usage = await self.embedder.embed_counted([text for _seq, text in batch])
            self._spent("embedding", usage)
            await asyncio.to_thread(
                self.vectors.put, [(seq, text, v) for (seq, text), v in zip(batch, vecs, strict=True)], through
            )
            done += len(batch)
            if self._listeners:
                counts = await asyncio.to_thread(self.vectors.progress)
                for fn in list(self._listeners):
                    fn(*counts)
        return done

    def _prepare(self) -> None:
        with self._sync_lock:
            self._sync_quietly()
        self.vectors.use_model(self.embedder.identity)

    def embed_status(self) -> EmbedStatus:
        done, total = self.vectors.progress() if self.embedder.available else (0, self.index.count())
        running = self._backfill is not None and not self._backfill.done()
        return EmbedStatus(self.embedder.model, done, total, running, self.last_error)

    async def similarities(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
        """The cosine similarity of each (a, b) by the embedding model, in one request: the
        receipt check's signal by meaning (core/memory/receiptcheck.py). Empty without an
        embedding model or when it fails (the check then decides on words alone)."""
        if not pairs or not self.embedder.available:
            return {}
        texts = sorted({t for pair in pairs for t in pair})
        try:
            vecs, usage = await self.embedder.embed_counted(texts)
        except (LLMError, MemtrayError, OSError, ValueError) as exc:
            log.info("no similarity for the receipt check: %s", exc)
            return {}
        self._spent("embedding", usage)  # upkeep: the receipt check of a consolidation
        by = dict(zip(texts, vecs, strict=True))
        return {(a, b): cosine(by[a], by[b]) for a, b in pairs}

    def _spent(self, kind: str, usage: Usage | None) -> None:
        """Record an embedding call's tokens and cost in the log (the usage ledger,
        core/log/usage.py); a read-only log records nothing and loses nothing else."""
        if usage is None or self.store.readonly:
            return
        try:
            self.store.append(UsageRecorded(kind=kind, model=self.embedder.model, usage=usage))
        except LogError as exc:
            log.warning("could not record the embedding's usage: %s", exc)

    # --- searching -----------------------------------------------------------------

    def search(
        self, query: str, *, limit: int = 20, kind: str | None = None,
        session: str | None = None, regex: bool = False,
    ) -> list[Hit]:
        """Keyword search (the rules of :mod:`index`), after catching up with the log."""
        with self._sync_lock:
            self._sync_quietly()
            return self.index.search(query, limit=limit, kind=kind, session=session, regex=regex)

    async def asearch(
        self, query: str, *, mode: str = "hybrid", limit: int = 20, kind: str | None = None,
        session: str | None = None, regex: bool = False, exclude: Iterable[int] = (), purpose: str = "search",
        scope: str | None = None, diary: bool = True,
    ) -> SearchResult:
        """Search in ``mode``; ``hybrid`` without an embedding model (or when the model
        fails) is keyword search, with a note that says so. ``purpose`` names the query's
        embedding in the usage ledger (``search``, or ``recall`` for a turn's). ``scope``:
        only what the conversations of that memory scope said and wrote (:meth:`in_scope`).
        ``diary`` False: no diary entry (what an MCP client limited to a scope is given: the
        diary is of no scope)."""
        scoped = scope is not None and bool(scopes.known(self.store.state))
        if not diary and kind == "history":
            return SearchResult([], mode)
        if not scoped and diary:
            return await self._asearch(query, mode=mode, limit=limit, kind=kind, session=session, regex=regex,
                                       exclude=exclude, purpose=purpose)
        found = await self._asearch(query, mode=mode, limit=limit * 4, kind=kind, session=session, regex=regex,
                                    exclude=exclude, purpose=purpose)
        hits = self.in_scope(found.hits, scope) if scope is not None and scoped else found.hits
        return dataclasses.replace(found, hits=[h for h in hits if diary or h.kind != "history"][:limit])

    def in_scope(self, hits: list[Hit], scope: str) -> list[Hit]:
        """The hits of conversations of ``scope`` (a diary entry or a memory edit counts as
        the conversation that wrote it; one no conversation wrote, such as a hand edit, is of
        no scope and left out). A home without named scopes keeps every hit."""
        state = self.store.state
        if not scopes.known(state):
            return hits
        want = scopes.check_name(scope)
        return [h for h in hits if h.session is not None and h.session in state.sessions
                and scopes.of_session(state, h.session) == want]

    async def _asearch(
        self, query: str, *, mode: str = "hybrid", limit: int = 20, kind: str | None = None,
        session: str | None = None, regex: bool = False, exclude: Iterable[int] = (), purpose: str = "search",
    ) -> SearchResult:
        if mode not in MODES:
            raise SearchError(f"unknown search mode {mode!r}", hint=f"Use one of: {', '.join(MODES)}.")
        if limit < 1:
            raise SearchError(f"the limit must be at least 1, not {limit}")
        if kind is not None and kind not in KINDS:
            raise SearchError(f"unknown kind {kind!r}", hint=f"Use one of: {', '.join(KINDS)}.")
        skip = set(exclude)
        if regex or mode == "keyword":
            if regex and mode == "semantic":
                raise SearchError("--regex is a keyword search", hint="Drop --mode semantic, or --regex.")
            hits = await asyncio.to_thread(
                self.search, query, limit=limit + len(skip), kind=kind, session=session, regex=regex)
            return SearchResult([h for h in hits if h.seq not in skip][:limit], "keyword")
        if not query.strip():
            return SearchResult([], mode)
        notes: list[str] = []
        vec: list[float] | None = None
        if not self.embedder.available:
            if mode == "semantic":
                raise SearchError(f"semantic search needs an embedding model: {self.embedder.keyword_only_reason}",
                                  hint=SETUP_HINT)
            notes.append(self.embedder.keyword_only_reason or "no embedding model: keyword search only")
        elif not await asyncio.to_thread(self._has_vectors):
            # nothing to compare a query vector with (a one-shot command before any backfill):
            # making one would only cost the model's loading, seconds for the offline one
            total = await asyncio.to_thread(self.index.count)
            notes.append(f"{total} of {total} entries have no embedding yet (found by their words only)")
            if mode == "semantic":
                return SearchResult([], "semantic", notes)
        else:
            try:
                await self.embedder.prepare()
                vecs, usage = await asyncio.wait_for(self.embedder.embed_counted([query]), QUERY_TIMEOUT)
                (vec,) = vecs
                self._spent(purpose, usage)
            except (LLMError, TimeoutError) as exc:
                why = str(exc) or "it did not answer in time"
                if mode == "semantic":
                    raise SearchError(f"the embedding model failed: {why}",
                                      hint="Try --mode keyword, or check embedding_model.") from None
                notes.append(f"the embedding model failed ({why}): keyword search only")
        if vec is None:  # hybrid without vectors: keywords, then the passages with the rarer words
            hits = await asyncio.to_thread(self.by_words, query, limit=limit, kind=kind, session=session,
                                           exclude=skip)
            return SearchResult(hits, "keyword", notes)
        result = await asyncio.to_thread(
            self.with_vector, query, vec, mode=mode, limit=limit, kind=kind, session=session, exclude=skip)
        result.notes[:0] = notes
        return result

    def with_vector(
        self, query: str, vec: list[float], *, mode: str = "hybrid", limit: int = 20,
        kind: str | None = None, session: str | None = None, exclude: Iterable[int] = (),
    ) -> SearchResult:
        """The semantic or hybrid search of ``query`` whose embedding is ``vec`` (blocking:
        SQLite and the vector scan; :meth:`asearch` runs it in a thread)."""
        skip = set(exclude)
        want = max(limit, CANDIDATES) + len(skip)
        keyword: list[Hit] = []
        if mode == "hybrid":
            keyword = self.by_words(query, limit=want, kind=kind, session=session, exclude=skip)
        semantic = self._semantic(vec, query, want, kind, session, skip)
        notes = []
        done, total = self.vectors.progress()
        if done < total:
            notes.append(f"{total - done} of {total} entries have no embedding yet (found by their words only)")
        if mode == "semantic":
            return SearchResult(semantic[:limit], "semantic", notes)
        strong = self.embedder.strong
        fused = fuse(keyword, semantic, want, semantic_weight=1.0 if strong else WEAK_SEMANTIC_WEIGHT,
                     noise=self.vectors.noise(vec, allowed=self.index.allowed(kind, session)))
        if not strong:  # weak vectors (the offline model): they never displace a keyword match
            return SearchResult(keyword_first(keyword, fused, limit), "hybrid", notes)
        return SearchResult(fused[:limit], "hybrid", notes)

    def by_words(self, query: str, *, limit: int = 20, kind: str | None = None,
                 session: str | None = None, exclude: Iterable[int] = ()) -> list[Hit]:
        """What hybrid search finds by words (:mod:`ranking`): the passages with any of the
        query's content words, by BM25, each read with the messages around it. Keyword
        search alone ANDs every word of a question ("when did Caroline go to the support
        group") and finds nothing or the wrong thing: on the LoCoMo conversations this
        ranks the evidence in the first five for 0.67 of the questions where keyword search
        did for 0.42 (bench/BENCHMARKS.md)."""
        with self._sync_lock:
            self._sync_quietly()
            return Ranker(self.index).hits(query, kind=kind, session=session, limit=limit, exclude=exclude)

    def _has_vectors(self) -> bool:
        """Whether any entry has a vector of the current embedding model."""
        with self._sync_lock:
            self._sync_quietly()
        return self.vectors.model == self.embedder.identity and self.vectors.count() > 0

    def _semantic(self, vec: list[float], query: str, want: int, kind: str | None,
                  session: str | None, skip: set[int]) -> list[Hit]:
        """The nearest passages that are near at all: a cosine :data:`NEAR_SPREAD` standard
        deviations above the query's mean cosine with the history (VectorStore.noise), so
        "zebra quantum" over a history without zebras finds nothing rather than the 20 least
        far messages."""
        self.vectors.use_model(self.embedder.identity)
        allowed = self.index.allowed(kind, session)
        scored = self.vectors.search(vec, limit=want, allowed=allowed)
        mean, spread = self.vectors.noise(vec, allowed=allowed)
        # a few dozen entries give a wide spread: halfway from the mean to the same text is near
        floor = min(mean + NEAR_SPREAD * spread, (mean + 1.0) / 2)
        return semantic_hits(self.index, [(s, c) for s, c in scored if s not in skip and c >= floor], query)

    # --- recall in the turn --------------------------------------------------------

    async def recall(self, session: str, text: str, zone: str = "", limit: int = 3) -> Recall | None:
        """A few past snippets relevant to ``text``, quoted with their dates and sessions,
        or None. What the session's prompt already holds (its unconsolidated tail) is
        left out, and weak semantic matches are not recalled."""
        tail = [int(m["seq"]) for m in self.store.state.session(session).messages if "seq" in m]
        # a conversation the user deleted is not brought back into another one (it stays
        # findable by `history search` until a purge); left out before the ranking's limit, so
        # deleted talk about the same thing does not crowd out what is left
        gone = self.deleted_sessions()
        if gone:
            tail.extend(await asyncio.to_thread(self._seqs_of, gone))
        # Weak vectors (the offline model) could only reorder the keyword matches (they never
        # recall a passage alone), and they reorder them worse: recall is by words then. A
        # message without content words ("how are you?") recalls nothing.
        strong = self.embedder.strong
        try:
            if strong:
                await self.embedder.prepare()  # the turn needs litellm anyway; not part of the time limit
                found = await asyncio.wait_for(
                    self.asearch(text, mode="hybrid", limit=limit * 3, exclude=tail, purpose="recall"),
                    RECALL_TIMEOUT)
            elif content_words(text, fallback=False):
                found = SearchResult(await asyncio.wait_for(asyncio.to_thread(
                    self.by_words, text, limit=limit * 3, exclude=tail), RECALL_TIMEOUT), "keyword")
            else:
                return None
        except (MemtrayError, TimeoutError) as exc:
            log.info("no recall for this turn: %s", exc or "search timed out")
            return None
        # another memory scope's conversations are never brought into this one
        found.hits = self.in_scope(found.hits, scopes.of_session(self.store.state, session))
        # what the words found is recalled, the turns a match lends its rank to included (the
        # answer after a matched question has no words of its own in common: keyword_score None,
        # semantic_score None); a passage found by meaning alone only when it is near
        hits = [h for h in found.hits if h.session not in gone and (
                h.keyword_score is not None or h.semantic_score is None
                or (strong and h.semantic_score >= RECALL_MIN_SIMILARITY))][:limit]
        if not hits:
            return None
        docs = await asyncio.to_thread(self.index.documents, [h.seq for h in hits])
        return Recall(format_recall(hits, docs, zone), [h.seq for h in hits])

    def _seqs_of(self, sessions: Iterable[str]) -> set[int]:
        """The indexed entries of ``sessions``, the index brought up to date first."""
        with self._sync_lock:
            self._sync_quietly()
            return self.index.seqs_of(sessions)

    def deleted_sessions(self) -> frozenset[str]:
        """The conversations the user deleted (core/log/chats.py): recall leaves them out."""
        return frozenset(k for k, st in list(self.store.state.sessions.items()) if st.deleted is not None)

    # --- the tool ------------------------------------------------------------------

    def tool(self) -> Tool:
        return Tool(TOOL_NAME, TOOL_DESCRIPTION, TOOL_PARAMETERS, self._tool_handler)

    async def _tool_handler(self, args: dict[str, Any], ctx: ToolContext) -> str:
        query = str(args["query"])
        limit = min(max(int(args.get("limit") or 8), 1), _TOOL_LIMIT)
        try:
            result = await self.asearch(query, mode="hybrid", limit=limit,
                                        scope=scopes.of_session(self.store.state, ctx.session))
        except MemtrayError as exc:
            raise ToolError(str(exc)) from exc
        return format_hits(result.hits)

    # --- life cycle ----------------------------------------------------------------

    def reconfigure(self, _old: Config | None = None, _new: Config | None = None) -> None:
        """Settings changed (a Settings listener): a new embedding model starts its backfill."""
        if self._embedding:
            self._kick()

    @contextlib.contextmanager
    def detached(self) -> Iterator[None]:
        """Close the index file for the duration (e.g. while ``state/`` is emptied).

        Searches wait meanwhile; afterwards the index is reopened (and rebuilt
        from the log if the file is gone) and brought up to date on next use.
        """
        self._cancel_backfill()
        with self._sync_lock:
            self.index.close()
            try:
                yield
            finally:
                self.index = SearchIndex.open(self.index.path)
                self.vectors = VectorStore(self.index)
        if self._embedding:
            self._kick()

    def _cancel_backfill(self) -> None:
        # Not waited for: this may run on the worker itself (a purge). A batch being
        # stored in a thread finishes under the index lock first; the task then ends
        # at its next await.
        fut = self._backfill
        if fut is not None and not fut.done():
            fut.cancel()

    def close(self) -> None:
        self._stop.set()
        self._cancel_backfill()
        if self._thread is not None:
            self._thread.join()
        self.index.close()


def format_recall(hits: list[Hit], docs: dict[int, tuple[str, str | None, str | None, str, str]], zone: str) -> str:
    """The quoted block a turn is given (``resources/prompts/recall.md``)."""
    try:
        tz: Any = ZoneInfo(zone) if zone else None
    except (ZoneInfoNotFoundError, ValueError):
        tz = None
    item: str = resources.text("prompts/recall_item.txt").strip()
    lines = []
    for h in hits:
        kind, session, role, ts, text = docs.get(h.seq, (h.kind, h.session, h.role, h.ts, h.snippet))
        try:
            date = datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(tz).strftime("%Y-%m-%d %H:%M")
        except ValueError:
            date = ts
        who = {"user": "user", "assistant": "assistant"}.get(role or "", "diary" if kind == "history" else "memory")
        body = " ".join(text.split())
        if len(body) > RECALL_CHARS:
            body = body[: RECALL_CHARS - 1].rstrip() + "…"
        lines.append(item.format(date=date, session=session or "-", who=who, text=body))
    template: str = resources.text("prompts/recall.md").strip()
    return template.format(items="\n".join(lines))


class Recalls(Protocol):
    """What :func:`build` sets on the agent (which is above this room): its recall hook."""

    recall: Callable[[str, str, str, int], Awaitable[Recall | None]] | None


def build(
    home: Home, store: Store, tools: ToolRegistry, *, start: bool,
    settings: Settings | None = None,
    submit: Callable[[Coroutine[Any, Any, Any]], concurrent.futures.Future[Any]] | None = None,
    agent: Recalls | None = None,
) -> SearchService | None:
    """The search service with its ``search_history`` tool, or None when the index cannot
    open (then search is unavailable and the log says why). With ``settings`` and
    ``submit`` (the worker's), embeddings are made in the background; with ``agent``,
    turns can recall past snippets (the ``recall`` setting; the agent is above this
    room, so it is given here and only its ``recall`` hook is set)."""
    try:
        index = SearchIndex.open(index_path(home))
    except SearchError as exc:
        log.error("history search is unavailable: %s", exc)
        return None
    cfg: Callable[[], Config] = (lambda: settings.current) if settings is not None else Config
    svc = SearchService(store, index, Embedder(cfg), submit=submit)
    tools.add(svc.tool())
    if settings is not None:
        settings.subscribe(svc.reconfigure)
    if agent is not None:
        agent.recall = svc.recall
    if start:
        svc.start()
    return svc
