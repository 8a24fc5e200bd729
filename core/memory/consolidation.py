"""Consolidation: fold old messages into MEMORY.md and HISTORY.md, never forgetting silently.

Trigger: a session's unconsolidated messages reach ``memory_window`` (the
newest ``memory_window // 2`` stay), the prompt would pass the model's token
budget, the session went idle, or ``/new`` (archive everything). It runs in
the background on the worker, never blocking a reply, one per session at a
time; the message range is fixed when it starts.

The model must call ``save_memory(history_entry, memory_update,
removed_facts)``. The result is validated, redacted and fact-diffed against the
current memory; a fact that disappeared without being listed in
``removed_facts`` is a *silent drop*: put back (policy ``keep``) or held for
review (policy ``review``). Instruction-like facts are held for review. Then
``memory.written`` + ``consolidation.completed`` are appended in one write and
git follows. A model too small to judge facts (:mod:`memtray.core.llm.capability`)
writes nothing: its proposal is held for review (:mod:`memtray.core.memory.hold`). Any failure appends ``consolidation.failed``; the pointer does
not move and it is retried later with backoff.

A fact the fact diff pairs with a new wording counts as the same fact reworded
only if the new wording keeps every content word of the old one
(:func:`same_fact`); "works on Beacon with Greta" -> "works on Beacon with Mia"
is a different fact, so unless ``removed_facts`` lists it the old one is a
silent drop like any other.
Memory may change while the model works (an agent ``remember``, a hand edit, a
sync's merge that renumbers ids): the model's answer is put on the ids of now
(:func:`undo.translate`) and rebased onto the memory of that moment (:func:`undo.carry`),
so no change is undone.

:meth:`ConsolidationService.sweep` (``idle_sweep``), run periodically by the
app's maintenance job (see ``core/app.py``), picks up hand edits of the work
tree, idle sessions and failed consolidations whose backoff has passed.

``crash_point`` (from :mod:`gitrepo`) is a test hook: the crash tests set
``MEMTRAY_TEST_CRASH_AT`` to stop the process at a named step.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from memtray.core.base.clock import Clock, parse_ts
from memtray.core.base.config import Settings
from memtray.core.base.errors import LLMError, MemtrayError
from memtray.core.base.faults import crash_point
from memtray.core.base.notify import NotifierSlot
from memtray.core.base.redact import redact
from memtray.core.base.worker import Worker
from memtray.core.llm.capability import judge
from memtray.core.llm.client import LLMClient, context_window
from memtray.core.log.events import (
    ConsolidationCompleted,
    ConsolidationFailed,
    ConsolidationStarted,
    MemoryWritten,
    Message,
    Usage,
)
from memtray.core.log.folded import ConsolidationState
from memtray.core.log.store import Store
from memtray.core.log.usage import as_usage
from memtray.core.memory import facts, scopereply, scopes
from memtray.core.memory.ask import NEAR_BUDGET, request_save_memory
from memtray.core.memory.facts import Ledger, read_markers
from memtray.core.memory.guard import (
    Reply,
    hold_history,
    parse_reply,
    shown_messages,
)
from memtray.core.memory.hold import hold
from memtray.core.memory.items import review_item
from memtray.core.memory.ledgers import diff_by_id
from memtray.core.memory.proposal import apply_reply, with_seqs
from memtray.core.memory.relative import anchor_times, message_days
from memtray.core.memory.service import MemoryService
from memtray.core.memory.undo import Translated, carry, translate
from memtray.core.memory.unsaid import account, headline, keepers
from memtray.core.memory.upkeep import UpkeepGuard

log = logging.getLogger(__name__)

BACKOFF = (60.0, 300.0, 1800.0, 7200.0)
IDLE_KEEP = 2  # messages an idle consolidation leaves unconsolidated


class ConsolidationFailedError(MemtrayError):
    """A consolidation did not produce a memory revision (memory and pointer unchanged)."""

    hint = "Nothing was lost; it will be retried. See `memtray memory log` for the reason."


class RedoFailedError(ConsolidationFailedError):
    """A redo was refused or failed: memory is unchanged and the failure is in the log."""

    hint = ("Memory is unchanged; the failed redo is listed in `memtray memory log`. "
            "Run it again, perhaps with another --model.")

    def __init__(self, message: str, consolidation: str, redo_of: str, reason: str) -> None:
        super().__init__(message)
        self.consolidation = consolidation
        self.redo_of = redo_of
        self.reason = reason


@dataclass
class Outcome:
    consolidation: str
    session: str
    start: int
    end: int
    added: int = 0
    removed: int = 0
    changed: int = 0
    kept: int = 0
    flagged: int = 0
    nothing_to_do: bool = False
    memory_seq: int | None = None
    notes: list[str] = field(default_factory=list)
    not_remembered: int = 0  # things the user said that nothing kept (review items)

    def summary(self) -> str:
        if self.nothing_to_do:
            return "nothing to consolidate"
        parts = [f"{self.added} fact(s) added", f"{self.removed} removed", f"{self.changed} changed"]
        if self.kept:
            parts.append(f"{self.kept} silently dropped fact(s) kept")
        if self.flagged:
            parts.append(f"{self.flagged} flagged for review")
        return ", ".join(parts + ([headline(self.not_remembered)] if self.not_remembered else []))


@dataclass
class IdGuarded:
    """A reply after the guard: the text to write, its ids, and what the guard did."""

    memory: str
    flagged: list[dict[str, Any]]
    kept: int  # silent drops put back
    reasons: dict[str, str]
    notes: list[str]
    ledger: Ledger
    merged: dict[str, list[str]]
    provenance: dict[str, Any]


class PromptSize(Protocol):
    """How big a session's prompt is (the agent knows): for the token-budget trigger."""

    def request_chars(self, session: str) -> int | None: ...

    def messages_for(self, session: str) -> list[dict[str, Any]]: ...


class ConsolidationService:
    def __init__(
        self,
        store: Store,
        memory: MemoryService,
        llm: LLMClient,
        settings: Settings,
        clock: Clock,
        worker: Worker,
        notifier: NotifierSlot,
        prompt_size: PromptSize,
        upkeep: UpkeepGuard | None = None,
    ) -> None:
        self.store = store
        self.memory = memory
        self.llm = llm
        self.settings = settings
        self.clock = clock
        self.worker = worker
        self.notifier = notifier
        self.prompt_size = prompt_size
        #: the daily budget of background upkeep and the loop stop (upkeep.py)
        self.upkeep = upkeep or UpkeepGuard(store, settings, clock, notifier)
        #: the embedding model's similarity of text pairs, when one is configured (the app sets
        #: the search service's): the receipt check weighs a reworded fact by meaning too
        self.similarities: Callable[[list[tuple[str, str]]], Awaitable[dict[tuple[str, str], float]]] | None = None
        self.in_flight: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._retry_at: dict[str, datetime] = {}
        self._failures: dict[str, int] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        #: test-only switch (never exposed in config): run without the no-silent-forgetting guard
        self.guard_enabled = True

    # --- triggers ---------------------------------------------------------------------

    def after_turn(self, session: str) -> None:
        """Called after each turn (on the worker): start a background consolidation if due."""
        trigger = self.trigger(session)
        if trigger is not None and session not in self.in_flight and self.upkeep.may_start(session, trigger):
            self._start(session, trigger)

    def _start(self, session: str, trigger: str) -> asyncio.Future[Any]:
        # Claimed before the task first runs, so a second trigger in the meantime is a no-op.
        self.in_flight.add(session)
        task = asyncio.ensure_future(self._background(session, trigger))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def due(self, session: str) -> bool:
        return self.trigger(session) is not None

    def trigger(self, session: str) -> str | None:
        """``window`` or ``budget`` if the session should be consolidated now, else None."""
        s = self.store.state.sessions.get(session)
        if s is None or self.store.readonly:
            return None
        retry = self._retry_at.get(session)
        if retry is not None and self.clock.now() < retry:
            return None
        if s.unconsolidated >= self.settings.current.memory_window:
            return "window"
        if s.unconsolidated >= 2 and self._over_budget(session):
            return "budget"
        return None

    def idle_due(self, session: str, now: datetime) -> bool:
        s = self.store.state.sessions.get(session)
        minutes = self.settings.current.idle_consolidate_minutes
        if s is None or not minutes or s.last_ts is None or s.unconsolidated < 4:
            return False
        retry = self._retry_at.get(session)
        if retry is not None and now < retry:
            return False
        return now - parse_ts(s.last_ts) >= timedelta(minutes=minutes)

    def _over_budget(self, session: str) -> bool:
        budget = self.settings.current.context_tokens or context_window(self.settings.current.model or self.llm.model)
        chars = self.prompt_size.request_chars(session)
        if chars is None:  # no turn yet in this process: build the prompt once to measure it
            chars = sum(len(m.get("content") or "") for m in self.prompt_size.messages_for(session))
        return chars / 4 > 0.75 * budget

    async def _background(self, session: str, trigger: str) -> None:
        try:
            await self.consolidate(session, trigger=trigger)
        except ConsolidationFailedError as exc:
            log.warning("background consolidation of %s failed: %s", session, exc)
        except Exception:
            log.exception("background consolidation of %s crashed", session)
        finally:
            self.in_flight.discard(session)

    async def sweep(self) -> None:
        """The periodic check: record a hand edit of the work tree, then consolidate every
        session that is due (window, budget), idle, or whose failed attempt's backoff is over."""
        if self.store.readonly:
            return
        try:
            self.memory.check_worktree()
        except MemtrayError as exc:
            log.warning("could not check the memory work tree: %s", exc)
        now = self.clock.now()
        started = []
        for key in list(self.store.state.sessions):
            if key in self.in_flight:
                continue
            trigger = self.trigger(key) or ("idle" if self.idle_due(key, now) else None)
            if trigger is not None and self.upkeep.may_start(key, trigger):
                started.append(self._start(key, trigger))
        if started:
            await asyncio.gather(*started, return_exceptions=True)

    idle_sweep = sweep

    # --- the work ---------------------------------------------------------------------

    def _lock(self, session: str) -> asyncio.Lock:
        if session not in self._locks:
            self._locks[session] = asyncio.Lock()
        return self._locks[session]

    async def archive(self, session: str) -> Outcome:
        """``/new``: consolidate everything. Raises if that fails (the session is then kept)."""
        return await self.consolidate(session, archive_all=True, trigger="new")

    async def consolidate(
        self,
        session: str,
        *,
        archive_all: bool = False,
        trigger: str = "manual",
        model: str | None = None,
    ) -> Outcome:
        async with self._lock(session):
            self.in_flight.add(session)
            if trigger in ("manual", "new"):
                self.upkeep.asked(session)  # the user asked: a loop stop on the session is lifted
            try:
                state = self.store.state
                s = state.sessions.get(session)
                if s is None:  # never create a session the log does not have
                    return Outcome(self.store.new_id(), session, 0, 0, nothing_to_do=True)
                start = s.last_consolidated
                window = self.settings.current.memory_window
                if archive_all:
                    keep = 0
                elif trigger == "budget":
                    # the prompt is too long even below the window: fold the older half
                    keep = min(window // 2, (s.count - start) // 2)
                elif trigger == "idle":
                    # the conversation went quiet: fold it, keeping the last exchange for context
                    keep = min(window // 2, IDLE_KEEP)
                else:
                    keep = window // 2
                end = max(start, s.count - keep)
                if trigger == "manual" and end == start and s.count > start:
                    end = s.count
                cid = self.store.new_id()
                if end <= start:
                    return Outcome(cid, session, start, end, nothing_to_do=True)
                messages = s.slice(start, end)
                return await self._run(cid, session, start, end, messages, model, trigger, redo_of=None)
            finally:
                self.in_flight.discard(session)

    async def redo(self, consolidation: str, model: str | None = None) -> Outcome:
        """Re-run a consolidation's message range on the memory as it was before it."""
        c = self.store.consolidation(consolidation, prefix=True)
        if c is None:
            raise ConsolidationFailedError(f"unknown consolidation {consolidation!r} (or the prefix is not unique)",
                                           hint="See `memtray memory log` for consolidation ids.")
        if c.first_seq is None or c.last_seq is None:
            raise ConsolidationFailedError(f"consolidation {c.id} has no recorded message range",
                                           hint="It cannot be redone; memory is unchanged.")
        messages = []
        for rec in self.store.log.records(c.first_seq - 1):
            if rec.seq > c.last_seq:
                break
            if rec.type == Message.TYPE and rec.session == c.session:
                messages.append({**Message.of(rec).to_session(), "seq": rec.seq, "ts": rec.ts})
        base: str | None = None  # a consolidation that never completed is simply run again
        base_rev: str | None = None
        if c.memory_seq:
            sha = self.memory.resolve(f"seq:{c.memory_seq}")
            parents = self.memory.git.info(sha).parents
            base = self.memory.git.read_memory(parents[0]) if parents else ""
            base_rev = parents[0] if parents else None
        cid = self.store.new_id()
        async with self._lock(c.session):
            return await self._run(cid, c.session, c.start, c.end, messages, model, "redo", redo_of=c.id, base=base,
                                   base_rev=base_rev)

    async def _run(
        self,
        cid: str,
        session: str,
        start: int,
        end: int,
        messages: list[dict[str, Any]],
        model: str | None,
        trigger: str,
        *,
        redo_of: str | None,
        base: str | None = None,
        base_rev: str | None = None,
    ) -> Outcome:
        use_model = model or self.settings.current.model
        scope = scopes.of_session(self.store.state, session)
        seqs = [m["seq"] for m in messages if "seq" in m]
        self.store.append(
            ConsolidationStarted(
                consolidation=cid, start=start, end=end, model=use_model,
                first_seq=min(seqs) if seqs else None, last_seq=max(seqs) if seqs else None,
                trigger=trigger, redo_of=redo_of, scope=scope,
            ),
            session=session,
        )
        crash_point("consolidation.started")
        usage = None
        try:
            self.memory.check_worktree()  # a hand edit made before this started is what the model sees
            # the model sees the global memory and the conversation's scope, never another scope's
            see = scopereply.shown(scope)
            snapshot, read_seq = self.store.state.memory, self.store.state.memory_seq
            snap_ids = scopes.sub_ledger(self.memory.ledger(), snapshot, see)
            snapshot = scopes.restrict(snapshot, see)
            prompt_memory = snapshot if base is None else scopes.restrict(base, see)
            prompt_ids = snap_ids if base is None else scopes.sub_ledger(
                self.memory.ledger_at(base_rev), base, see) if base_rev else Ledger(())
            budget = self.settings.current.memory_budget
            result = await request_save_memory(self.llm, self.settings.current.consolidation_timeout, prompt_memory,
                                               messages, model, ledger=prompt_ids, budget=budget, scope=scope)
            usage = as_usage(result.usage)
            crash_point("consolidation.replied")
            call = next((tc for tc in result.tool_calls if tc.name == "save_memory"), None)
            if call is None:
                raise ValueError("the model answered without calling save_memory")
            scoped = scopereply.plan(parse_reply(call.arguments), scope, snap_ids)
            reply = scoped.reply
            # Memory may have changed while the model worked (agent tools, a hand edit):
            # keep those changes rather than undo them with a proposal made before them.
            self.memory.check_worktree()
            full, full_ids = self.store.state.memory, self.memory.ledger()
            now = scopes.sub_ledger(full_ids, full, see)
            asked: list[tuple[str, str]] = []  # the pairs the receipt check would weigh by meaning
            g = self._guard(reply, snapshot, snap_ids, now, prompt_ids, messages, cid, read_seq,
                            lambda a, b: asked.append((a, b)))
            if asked and self.similarities is not None and (scores := await self.similarities(asked)):
                g = self._guard(reply, snapshot, snap_ids, now, prompt_ids, messages, cid, read_seq,
                                lambda a, b: scores.get((a, b)))
            text, led = scopes.merge_back(full, full_ids, see, g.memory, g.ledger)  # beside the unseen scopes
            g = dataclasses.replace(g, memory=text, ledger=led)
            placed = scopereply.placed(scoped, scopes.scope_map(full_ids, full), g.ledger)
            entry = hold_history(redact(reply.history_entry), g.flagged)
            verdict = judge(use_model or self.llm.model, self.settings.current.hold_consolidations)
            if not verdict.unattended:  # too small to judge facts: the proposal waits for the user (hold.py)
                held, now, placed = hold(self.memory.ledger(), g.ledger, entry, g.flagged, verdict.reason), \
                    self.memory.ledger(), {}
                g, entry = IdGuarded(self.store.state.memory, held.flagged, 0, {}, g.notes + held.notes, now, {}, {}), ""
            d = diff_by_id(self.memory.ledger(), g.ledger)
            acc = account(reply.skipped, messages, keepers(g.ledger, g.flagged, entry, g.reasons, snap_ids), g.notes)
            if len(g.memory) > budget:
                g.notes.append(f"memory is {len(g.memory):,} characters, past its budget of {budget:,}; "
                               "the next consolidation is asked to merge facts")
            recs = self.memory.write(
                g.memory,
                reason="redo" if redo_of else "consolidation",
                source="model",
                model=use_model,
                consolidation=cid,
                history_append=entry,
                flagged=scopereply.with_scope(g.flagged + acc.items, scoped, scopes.scope_map(full_ids, full)),
                dropped_reasons=g.reasons,
                provenance=g.provenance or None,
                session=session,
                facts=g.ledger,
                merged=g.merged or None, placed=placed, moved_reasons=scoped.why,
                extra=[(
                    ConsolidationCompleted(
                        consolidation=cid, end=end, memory_seq=0,  # write() fills in the real seq
                        added=len(d.added), removed=len(d.dropped), changed=len(d.changed),
                        kept=g.kept, flagged=len(g.flagged), usage=usage, skipped=acc.skipped or None,
                        not_remembered=len(acc.items),
                    ),
                    session,
                )],
            )
        except asyncio.CancelledError:
            if not self._completed(cid):
                self._fail(cid, session, "cancelled", redo_of=redo_of, usage=usage)
            raise
        except Exception as exc:
            if self._completed(cid):
                raise  # the revision is durable; only something that follows the log failed
            if isinstance(exc, TimeoutError):
                reason = f"timed out after {self.settings.current.consolidation_timeout:g}s"
            elif isinstance(exc, LLMError | ValueError | MemtrayError):
                reason = str(exc)
            else:
                log.exception("consolidation %s crashed", cid)
                reason = f"internal error: {type(exc).__name__}: {exc}"
            self._fail(cid, session, reason, redo_of=redo_of, usage=usage)
            if redo_of:
                raise RedoFailedError(f"redo of consolidation {redo_of[:10]} failed: {reason}", cid, redo_of,
                                      reason) from None
            raise ConsolidationFailedError(f"consolidation failed: {reason}") from None
        self._failures.pop(session, None)
        self._retry_at.pop(session, None)
        self.upkeep.completed(session, bool(d.added or d.dropped or d.changed or entry or g.flagged))
        out = Outcome(cid, session, start, end, len(d.added), len(d.dropped), len(d.changed), g.kept,
                      len(g.flagged), memory_seq=recs[0].seq, notes=g.notes, not_remembered=len(acc.items))
        self._notify(out)
        return out

    def _guard(self, reply: Reply, snap_text: str, snap: Ledger, current: Ledger, shown: Ledger,
               messages: list[dict[str, Any]], cid: str, read_seq: int,
               similarity: Callable[[str, str], float | None] | None = None) -> IdGuarded:
        """The reply applied on ids (:func:`proposal.apply_reply`) to what the model was shown,
        put on the ids of now (:func:`undo.translate`: a sync's merge since ``read_seq`` may have
        renumbered them), then the changes made meanwhile carried onto it (:func:`undo.carry`)."""
        texts = [str(m.get("content") or "") for m in shown_messages(messages)]
        roles = [str(m.get("role") or "") for m in shown_messages(messages)]
        seq_of = [m.get("seq") for m in shown_messages(messages)]
        update = redact(reply.memory_update) if reply.memory_update is not None else None
        edits = [{k: redact(v) if isinstance(v, str) else v for k, v in e.items()} for e in reply.edits or []]
        policy = self.settings.current.drop_policy
        if not self.guard_enabled and update is not None:  # test-only: the text as the model wrote it
            text = read_markers(update).text
            led = facts.attach(snap, text)
            return IdGuarded(text, [], 0, {}, [], led, {}, {})
        gone = [f for f in shown.facts if snap.get(f.id) is None]  # a redo's base facts no longer in memory
        a = apply_reply(snap, snap_text, memory_update=update, edits=edits if reply.edits is not None else None, removed=reply.removed, messages=texts,
                        policy=policy, also=gone, roles=roles, receipts=reply.receipts,
                        inferred=self.settings.current.inferred_facts, similarity=similarity)
        zone = self.settings.current.timezone or self.clock.local_zone_name()  # "this week" is the message's week
        anchor_times(a, snap, message_days(shown_messages(messages), zone))
        a.notes += reply.notes
        a.flagged = [with_seqs(item, seq_of) for item in a.flagged]
        text, led = a.memory, a.ledger
        renames: dict[str, str] = {}
        if [(f.id, f.norm) for f in snap.facts] != [(f.id, f.norm) for f in current.facts]:
            since = self.store.log.tail(max(0, self.store.log.last_seq - read_seq))
            if since and since[0].seq > read_seq + 1:  # seqs with gaps: read from the seq itself
                since = list(self.store.log.records(read_seq))
            renumbered = [w.relabeled for r in since if r.seq > read_seq and r.type == MemoryWritten.TYPE
                          and (w := MemoryWritten.of(r)).relabeled is not None]
            t = translate(snap, text, led, renumbered, current)
            a.flagged += _unmapped(snap, t, a.reasons)
            text, led, moved = carry(t.base, current, t.text, t.proposed)
            renames = {k: moved.get(v, v) for k, v in t.ids.items()}
            a.reasons = {renames.get(k, k): v for k, v in a.reasons.items() if k not in t.lost}
            a.merged = {renames.get(k, k): [renames.get(i, i) for i in v if i not in t.lost]
                        for k, v in a.merged.items() if k not in t.lost}
            a.flagged = [{**i, "fact_id": renames.get(str(i.get("fact_id")), i.get("fact_id"))} for i in a.flagged]
        prov: dict[str, Any] = {}
        live = {f.id: f for f in led.facts}
        for fid, nums in a.sources.items():
            got = a.receipts.get(fid)
            fid = renames.get(fid, fid)
            if fid in live:
                prov[fid] = {"consolidation": cid, "source_seqs": [s for n in nums if (s := seq_of[n - 1]) is not None],
                             "text": live[fid].text}
                if got is not None and got.quote:
                    prov[fid] |= {"quote": redact(got.quote), "stated": got.kind == "stated"}
        for v in a.verdicts:
            fid = renames.get(v.id or "", v.id or "")
            if v.kind in ("reworded", "split") and fid in live and fid not in prov:
                prov[fid] = {"consolidation": cid, "text": live[fid].text}
        return IdGuarded(text, a.flagged, len(a.of("silent-kept")), a.reasons, a.notes, led, a.merged, prov)

    def restore_backoff(self) -> None:
        """Pick up where the backoff was: a session whose last consolidation failed is not
        retried before its recorded delay is over, and the next delay keeps growing, across
        restarts (a provider that is down is not hit again at every start)."""
        last: dict[str, ConsolidationState] = {}
        for c in self.store.state.consolidations.values():
            if c.redo_of is None and (c.session not in last or c.started_seq > last[c.session].started_seq):
                last[c.session] = c
        for session, c in last.items():
            if c.status != "failed" or c.ts is None:
                continue
            self._failures[session] = c.failed_attempt or 1
            self.upkeep.restore(session, c.failed_attempt or 1)
            if c.retry_after is not None:
                self._retry_at[session] = parse_ts(c.ts) + timedelta(seconds=c.retry_after)

    def _completed(self, cid: str) -> bool:
        c = self.store.state.consolidations.get(cid)
        return c is not None and c.status == "completed"

    def _fail(self, cid: str, session: str, reason: str, *, redo_of: str | None = None,
              usage: Usage | None = None) -> None:
        if redo_of:
            # a redo is the user's request, never retried: it leaves the session's backoff alone,
            # and the failure stays in the log (`memory log`, the memory browser) with its reason
            self.store.append(ConsolidationFailed(
                consolidation=cid, reason=redact(reason), usage=usage), session=session)
            if self.notifier.installed:
                self.notifier.notify("Redo failed", f"The redo of consolidation {redo_of[:8]} failed: {reason}. "
                                     "Memory is unchanged.", kind="failure", target=f"consolidation:{redo_of}")
            return
        n = self._failures.get(session, 0) + 1
        self._failures[session] = n
        delay = BACKOFF[min(n - 1, len(BACKOFF) - 1)]
        self._retry_at[session] = self.clock.now() + timedelta(seconds=delay)
        halted = self.upkeep.failed(session, n, redact(reason))  # the last automatic try: it told the user
        self.store.append(ConsolidationFailed(consolidation=cid, reason=redact(reason), attempt=n, retry_after=delay,
                                              usage=usage, halted="loop" if halted else None), session=session)
        if self.notifier.installed and not halted:
            self.notifier.notify("Memory consolidation failed", f"{reason}. Nothing was lost; it will be retried.",
                            kind="failure", target=f"consolidation:{cid}")

    def _notify(self, out: Outcome) -> None:
        notifier = self.notifier
        if not notifier.installed:
            return
        if out.added or out.removed or out.changed or out.flagged or out.kept or out.not_remembered:
            body = out.summary()
            if out.flagged or out.removed or out.not_remembered:
                body += " — review"
            notifier.notify("Memory updated", body, kind="memory", target=f"consolidation:{out.consolidation}")
        size, budget = len(self.store.state.memory), self.settings.current.memory_budget
        if budget and size > NEAR_BUDGET * budget:
            # never truncated: the next consolidations are asked to merge facts; the user decides the rest
            notifier.notify(
                "Memory is near its size budget",
                f"MEMORY.md is {size:,} of {budget:,} characters. Consolidations now merge facts to make room; "
                "raise memory_budget in Settings, or remove facts you no longer need in the memory browser.",
                kind="memory", target="memory",
            )

    def close(self, timeout: float = 120.0) -> None:
        """Let background consolidations finish (bounded) before the app stops."""
        if not self._tasks or self.worker.in_worker:
            return

        async def wait() -> None:
            await asyncio.wait(set(self._tasks), timeout=timeout)

        try:
            self.worker.run(wait())
        except Exception:
            log.warning("background consolidation still running at exit; it will be retried")

    def recover(self) -> None:
        """After a crash between ``memory.written`` and ``consolidation.completed``: complete it."""
        state = self.store.state
        for c in list(state.consolidations.values()):
            if c.status != "started":
                continue
            written: tuple[int, MemoryWritten] | None = None
            for rec in self.store.log.records(c.started_seq):
                if rec.type == MemoryWritten.TYPE and (w := MemoryWritten.of(rec)).consolidation == c.id:
                    written = rec.seq, w
                    break
            if written is not None:
                seq, diff = written[0], written[1].diff
                self.store.append(
                    ConsolidationCompleted(consolidation=c.id, end=c.end, memory_seq=seq,
                                           added=len(diff["added"]) if diff else 0,
                                           removed=len(diff["dropped"]) if diff else 0,
                                           changed=len(diff["changed"]) if diff else 0),
                    session=c.session,
                )
            else:
                # counts as a failed attempt: quitting while a provider hangs must not reset the backoff
                before = [o for o in state.consolidations.values()
                          if o.session == c.session and o.redo_of is None and o.started_seq < c.started_seq]
                last = max(before, key=lambda o: o.started_seq, default=None)
                n = (last.failed_attempt or 1) + 1 if last is not None and last.status == "failed" else 1
                self.store.append(
                    ConsolidationFailed(consolidation=c.id, reason="interrupted (memtray stopped while it ran)",
                                        attempt=n, retry_after=BACKOFF[min(n - 1, len(BACKOFF) - 1)]),
                    session=c.session,
                )


def _unmapped(snap: Ledger, t: Translated, reasons: dict[str, str]) -> list[dict[str, Any]]:
    """Review items for what a reply did to facts whose ids a sync renumbered past following
    (memory keeps them as they are now): the model's words, or its removal."""
    why = "memory was renumbered by a sync while the model worked, and this fact's id could not be followed"
    out = [review_item("rebase", f.text, f.section, None, f"the model's words, not written: {why}") for f in t.unmapped]
    for f in snap.facts:
        if f.id in t.lost and f.id not in {u.id for u in t.unmapped}:
            out.append(review_item("rebase", f.text, f.section, None,
                                   f"the model removed it ({reasons.get(f.id, 'no reason')}), not done: {why}"))
    return out
