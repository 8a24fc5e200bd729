"""Derived state: ``replay(records) -> State``, a pure fold over the event log.

Everything the app shows (sessions, the consolidation pointer, the current
memory revision, reminders) is a projection of the log. :func:`apply` folds one
record into a state; :func:`replay` folds many into a fresh state. The fold
keeps, per session, only the messages not yet consolidated: older ones are in
the log (read by seq when needed), which keeps both memory use and checkpoints
independent of the log's length.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from memtray.core.base.errors import UnknownEventVersion
from memtray.core.log import promptbase
from memtray.core.log.events import (
    SCHEMA,
    BadPayload,
    ConsolidationCompleted,
    ConsolidationFailed,
    ConsolidationStarted,
    ContextChanged,
    DeviceNamed,
    MemoryPurged,
    MemoryReviewed,
    MemoryWritten,
    Message,
    Record,
    ReminderCancelled,
    ReminderFired,
    ReminderScheduled,
    SessionDeleted,
    SessionModel,
    SessionPinned,
    SessionReset,
    SessionRestored,
    SessionScope,
    SessionTitled,
    SyncPulled,
    TurnFailed,
    Usage,
    UsageRecorded,
)
from memtray.core.log.folded import ConsolidationState, ReminderState
from memtray.core.log.integrations import ImportItem
from memtray.core.log.usage import UsageBook

STATE_VERSION = 11  # 2: consolidations keep their failed attempt and retry delay; 3: only recent ones;
# 4: another device's reminder is dated when its owner scheduled it; 5: early reminder events;
# 6: unfoldable records, purges; 7: sessions' titles, first message time, last words and failed turn;
# 8: sessions deleted, pinned, their own model; 9: device names;
# 10: the usage ledger, prompt layout 3's snapshots and notes; 11: sessions' memory scope
#: Finished (completed or failed) consolidations kept in the state, newest by start: the
#: state (and so the checkpoint and start-up) stays the same size however long the log
#: grows. Older ones are read back from the log when asked for (Store.consolidation).
KEEP_FINISHED = 256
_TRIM_SLACK = 64  # trim in batches: a sort per finished consolidation would slow replay



@dataclass
class SessionState:
    """A session: its unconsolidated messages and the consolidation pointer.

    Indexes are absolute (they count every message the session ever had), so a
    consolidation range ``[start, end)`` names the same messages forever.
    ``messages[0]`` has absolute index ``base``; ``last_consolidated >= base``.
    """

    key: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    base: int = 0
    last_consolidated: int = 0
    resets: int = 0
    last_ts: str | None = None
    #: what the Chats list shows: the title (the first line the user wrote, an imported
    #: conversation's, or one the user set: ``titled`` says which), when it began, the last words
    title: str | None = None
    titled: str = ""  # "" (the first line) | "import" | "user"
    first_ts: str | None = None
    #: the start of the last message's text, as it was said (:attr:`preview` is its first line):
    #: replay only slices, the line is found when the list is shown
    last_words: str | None = None
    #: the turn that failed last, until a reply: {"seq": the user message, "error": why, "kind": its class}
    failed: dict[str, Any] | None = None
    #: when the user deleted it (it is listed under "Recently deleted"), None while it is listed
    deleted: str | None = None
    pinned: bool = False
    #: the model chosen for this conversation (None: the configured one)
    model: str | None = None
    #: prompt layout 3 (core/log/promptbase.py): its history's start (None: the pointer), its memory's seq
    prompt_base: int | None = None
    snapshot_seq: int = 0
    last_seq: int = 0  # the last message's seq: orders sessions whose last messages share a millisecond
    #: the memory scope it belongs to (None: global, core/memory/scopes.py)
    scope: str | None = None

    @property
    def preview(self) -> str | None:
        return first_line(self.last_words, 140) if self.last_words else None

    def said(self, role: str, content: str | None, ts: str, *, reply: bool) -> None:
        """A message's share of the list's line: the title from the first thing the user
        wrote, the last words; a reply ends a failed turn's mark."""
        if self.first_ts is None:
            self.first_ts = ts
        if role not in ("user", "assistant") or not content or content.isspace():
            return
        if role == "user":
            self.deleted = None  # a deleted conversation written in again is back in the list
            if self.title is None:
                self.title = first_line(content, 80)
        self.last_words = content[:_LAST_WORDS]
        if reply and role == "assistant":
            self.failed = None

    @property
    def count(self) -> int:
        """Absolute index of the next message."""
        return self.base + len(self.messages)

    @property
    def unconsolidated(self) -> int:
        return self.count - self.last_consolidated

    def slice(self, start: int, end: int) -> list[dict[str, Any]]:
        """Messages with absolute indexes in [start, end) still held in memory."""
        lo = max(start, self.base) - self.base
        hi = max(min(end, self.count) - self.base, lo)
        return self.messages[lo:hi]

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "messages": self.messages,
            "base": self.base,
            "last_consolidated": self.last_consolidated,
            "resets": self.resets,
            "last_ts": self.last_ts,
            "title": self.title,
            "titled": self.titled,
            "first_ts": self.first_ts,
            "last_words": self.last_words,
            "failed": self.failed,
            "deleted": self.deleted,
            "pinned": self.pinned,
            "model": self.model,
            "prompt_base": self.prompt_base,
            "snapshot_seq": self.snapshot_seq,
            "last_seq": self.last_seq,
            "scope": self.scope,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> SessionState:
        return cls(
            obj["key"], list(obj["messages"]), obj["base"], obj["last_consolidated"],
            obj.get("resets", 0), obj.get("last_ts"), obj.get("title"), obj.get("titled", ""),
            obj.get("first_ts"), obj.get("last_words"), obj.get("failed"),
            obj.get("deleted"), bool(obj.get("pinned", False)), obj.get("model"), obj.get("prompt_base"),
            obj.get("snapshot_seq", 0), obj.get("last_seq", 0), obj.get("scope"),
        )


_FIRED_KEEP = 64


@dataclass
class State:
    """Everything derived from the log up to ``last_seq``."""

    last_seq: int = 0
    sessions: dict[str, SessionState] = field(default_factory=dict)
    consolidations: dict[str, ConsolidationState] = field(default_factory=dict)
    reminders: dict[str, ReminderState] = field(default_factory=dict)
    memory_seq: int = 0  # seq of the last memory.written
    memory_revisions: int = 0
    memory: str = ""  # current MEMORY.md text (the last memory.written)
    #: flagged items waiting for the user: id -> {kind, fact, section, seq, reason, consolidation}
    review: dict[str, dict[str, Any]] = field(default_factory=dict)
    unknown: dict[str, int] = field(default_factory=dict)
    #: digest of the last ``context.changed`` (the agent appends one only when it differs)
    context_digest: str | None = None
    #: sync: per peer device, how far its stream was imported ({"commit", "through"})
    sync: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: a reminder's cancel or firing that came before the reminder itself (another device's
    #: cancel imported before the owner's stream): applied when it comes, whatever the order
    early: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: records the fold could not read (seq -> why), at most KEEP_UNFOLDABLE; see :func:`apply`
    unfoldable: dict[str, str] = field(default_factory=dict)
    unfoldable_count: int = 0
    #: the newest purges (``memory.purged``: this home's and other devices' applied here)
    purges: list[dict[str, Any]] = field(default_factory=list)
    #: the names the user gave devices (``device.named``): device id -> name
    device_names: dict[str, str] = field(default_factory=dict)
    #: tokens and cost of this device's provider calls, per hour, kind and model (core/log/usage.py)
    usage: UsageBook = field(default_factory=UsageBook)
    #: prompt layout 3 (core/log/promptbase.py): snapshots by seq, [seq, note]s complete after ``notes_from``
    snapshots: dict[str, str] = field(default_factory=dict)
    notes: list[list[Any]] = field(default_factory=list)
    notes_from: int = 0

    def session(self, key: str) -> SessionState:
        s = self.sessions.get(key)
        if s is None:
            s = self.sessions[key] = SessionState(key)
        return s

    def to_json(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "last_seq": self.last_seq,
            "sessions": {k: s.to_json() for k, s in sorted(self.sessions.items())},
            "consolidations": {k: c.to_json() for k, c in sorted(self.consolidations.items())},
            "reminders": {k: r.to_json() for k, r in sorted(self.reminders.items())},
            "memory_seq": self.memory_seq,
            "memory_revisions": self.memory_revisions,
            "memory": self.memory,
            "review": dict(sorted(self.review.items())),
            "unknown": dict(sorted(self.unknown.items())),
            "context_digest": self.context_digest,
            "sync": dict(sorted(self.sync.items())),
            "early": dict(sorted(self.early.items())),
            "unfoldable": dict(sorted(self.unfoldable.items())),
            "unfoldable_count": self.unfoldable_count,
            "purges": self.purges,
            "device_names": dict(sorted(self.device_names.items())),
            "usage": self.usage.to_json(),
            "snapshots": dict(sorted(self.snapshots.items())),
            "notes": self.notes,
            "notes_from": self.notes_from,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> State:
        if obj.get("version") != STATE_VERSION:
            raise ValueError(f"checkpoint state version {obj.get('version')} != {STATE_VERSION}")
        return cls(
            last_seq=obj["last_seq"],
            sessions={k: SessionState.from_json(v) for k, v in obj["sessions"].items()},
            consolidations={k: ConsolidationState.from_json(v) for k, v in obj["consolidations"].items()},
            reminders={k: ReminderState.from_json(v) for k, v in obj["reminders"].items()},
            memory_seq=obj["memory_seq"],
            memory_revisions=obj.get("memory_revisions", 0),
            memory=obj.get("memory", ""),
            review=dict(obj.get("review", {})),
            unknown=dict(obj.get("unknown", {})),
            context_digest=obj.get("context_digest"),
            sync=dict(obj.get("sync", {})),
            early=dict(obj.get("early", {})),
            unfoldable=dict(obj.get("unfoldable", {})),
            unfoldable_count=int(obj.get("unfoldable_count", 0)),
            purges=list(obj.get("purges", [])),
            device_names=dict(obj.get("device_names", {})),
            usage=UsageBook.from_json(obj.get("usage", {})),
            snapshots=dict(obj.get("snapshots", {})),
            notes=[list(n) for n in obj.get("notes", [])],
            notes_from=int(obj.get("notes_from", 0)),
        )

    def copy(self) -> State:
        return copy.deepcopy(self)


#: every type this version folds or keeps (one payload class each); others are counted in
#: ``State.unknown``, kept verbatim and skipped
KNOWN_TYPES = frozenset(SCHEMA.types)


def _trim_consolidations(cons: dict[str, ConsolidationState]) -> None:
    """Keep the newest KEEP_FINISHED finished consolidations (by start) and every running one.

    Depends only on the contents, never on dict order, so a state rebuilt from a
    checkpoint trims exactly as the live one did.
    """
    finished = sorted((c for c in cons.values() if c.status != "started"), key=lambda c: c.started_seq)
    for c in finished[: max(0, len(finished) - KEEP_FINISHED)]:
        del cons[c.id]


def apply(state: State, rec: Record) -> State:
    """Fold one record into ``state`` (in place) and return it.

    Reads typed payloads only, and never raises on a record: one of a type or a version
    this memtray does not know (a newer device's) is counted in ``state.unknown`` and
    skipped; one whose payload it cannot read (a log an older version filled before the
    door checked what peers sent: a ``reminder.cancelled`` without its reminder) is named
    in ``state.unfoldable`` and skipped, and ``memtray doctor`` explains and repairs it.
    Every event the door lets in folds without that (``tests/unit/log/test_fold_total.py``).
    """
    seq, _id, ts, t, v, key, d = rec
    try:
        if t == _MESSAGE:  # the hot path of replay (most records are messages): inline
            m = _message_of(d) if v == _MESSAGE_V else Message.of(rec)
            key = key or "default"
            s = state.sessions.get(key) or state.session(key)
            origin = m.origin
            if origin is not None:  # imported from a peer: consolidated there, never part of a tail here
                s.base += 1
                s.last_consolidated = s.base
                said = origin["ts"]
                # when it was said there (origin.said_at: never after it arrived here; same ISO form)
                s.last_ts, s.last_seq = (said if said < ts else ts), seq
                s.said(m.role, m.content, s.last_ts, reply=not m.tool_calls)
            else:
                msg = m.to_session()
                msg["seq"] = seq
                msg["ts"] = ts
                s.messages.append(msg)
                s.last_ts, s.last_seq = ts, seq
                s.said(m.role, m.content, ts, reply=not m.tool_calls)
                if m.usage:
                    state.usage.add(ts, "chat", m.model, m.usage)
                if m.rebase and m.role == "user":
                    promptbase.rebase(state, s)
            state.last_seq = seq
            return state
        fold = _FOLDS.get(t)
        if fold is not None:
            fold(state, rec)
        elif t not in KNOWN_TYPES:
            state.unknown[t] = state.unknown.get(t, 0) + 1
    except _FOLD_ERRORS as exc:
        if isinstance(exc, UnknownEventVersion) and type(v) is int and v > _VERSIONS.get(t, v):
            state.unknown[f"{t} v{v}"] = state.unknown.get(f"{t} v{v}", 0) + 1  # a newer device's: skipped
        else:
            _unfoldable(state, rec, exc)
            return state
    state.last_seq = seq
    return state


#: what a payload the fold cannot read raises (a missing member, a wrong type)
_FOLD_ERRORS = (BadPayload, UnknownEventVersion, KeyError, TypeError, ValueError, AttributeError, IndexError)
#: the schema versions this memtray reads (a live view: types registered later are in it)
_VERSIONS = SCHEMA.versions
#: records the state names as unfoldable (the rest are only counted)
KEEP_UNFOLDABLE = 100
#: purges the state lists (newest)
KEEP_PURGES = 20


def _unfoldable(state: State, rec: Record, exc: Exception) -> None:
    """Name a record the fold could not read (at most KEEP_UNFOLDABLE; the count goes on)."""
    if len(state.unfoldable) < KEEP_UNFOLDABLE:
        kind = rec.type if isinstance(rec.type, str) else "?"
        state.unfoldable[str(rec.seq)] = f"{kind}: {type(exc).__name__}: {str(exc)[:80]}"
    state.unfoldable_count += 1
    if isinstance(rec.seq, int):
        state.last_seq = rec.seq


def _memory_purged(state: State, rec: Record) -> None:
    """Who purged, when, how much: `memory log` and the doctor."""
    p = MemoryPurged.of(rec)
    state.purges.append({"seq": rec.seq, "ts": rec.ts, "by": p.by, "events": p.events})
    del state.purges[:-KEEP_PURGES]


_MESSAGE, _MESSAGE_V = Message.TYPE, Message.VERSION
_message_of = Message.from_data


def _session_reset(state: State, rec: Record) -> None:
    s = state.session(rec.session or "default")
    s.base = s.count
    s.messages = []
    s.last_consolidated = s.base
    s.prompt_base = None  # the next turn starts its prompt over
    s.resets += 1
    s.last_ts = rec.ts


def _turn_failed(state: State, rec: Record) -> None:
    p = TurnFailed.of(rec)
    s = state.session(rec.session or "default")
    user = next((m for m in reversed(s.messages) if m.get("role") == "user"), None)
    if user is not None:
        s.failed = {"seq": user["seq"], "error": p.error, "kind": p.kind}


def _session_titled(state: State, rec: Record) -> None:
    s = state.session(rec.session or "default")
    s.title, s.titled = SessionTitled.of(rec).title, "user"


def _session_deleted(state: State, rec: Record) -> None:
    SessionDeleted.of(rec)
    state.session(rec.session or "default").deleted = rec.ts


def _session_restored(state: State, rec: Record) -> None:
    state.session(rec.session or "default").deleted = None


def _session_pinned(state: State, rec: Record) -> None:
    state.session(rec.session or "default").pinned = SessionPinned.of(rec).pinned


def _session_model(state: State, rec: Record) -> None:
    state.session(rec.session or "default").model = SessionModel.of(rec).model or None


def _session_scope(state: State, rec: Record) -> None:
    scope = SessionScope.of(rec).scope
    state.session(rec.session or "default").scope = None if scope in ("", "global") else scope


def _import_item(state: State, rec: Record) -> None:
    title = ImportItem.of(rec).title
    if rec.session and title:
        s = state.session(rec.session)
        if s.titled != "user":  # an imported conversation keeps its title, unless renamed here
            s.title, s.titled = title, "import"


def _consolidation_started(state: State, rec: Record) -> None:
    p = ConsolidationStarted.of(rec)
    prev = state.consolidations.get(p.consolidation)
    state.consolidations[p.consolidation] = ConsolidationState(
        p.consolidation, rec.session or "default", p.start, p.end, p.model,
        attempts=(prev.attempts if prev else 0) + 1, started_seq=rec.seq,
        first_seq=p.first_seq, last_seq=p.last_seq, redo_of=p.redo_of, ts=rec.ts,
    )


def _consolidation_completed(state: State, rec: Record) -> None:
    p = ConsolidationCompleted.of(rec)
    c = state.consolidations.get(p.consolidation)
    if c is not None:
        c.status = "completed"
        c.reason = None
        c.ts = rec.ts
        c.memory_seq = p.memory_seq
        if c.redo_of is None:
            s = state.session(c.session)
            if p.end > s.last_consolidated:
                _advance(s, p.end)
    _consolidation_usage(state, rec, c, p.usage)
    if len(state.consolidations) > KEEP_FINISHED + _TRIM_SLACK:
        _trim_consolidations(state.consolidations)


def _consolidation_failed(state: State, rec: Record) -> None:
    p = ConsolidationFailed.of(rec)
    c = state.consolidations.get(p.consolidation)
    if c is not None:
        c.status = "failed"
        c.reason = p.reason
        c.ts = rec.ts
        c.failed_attempt = p.attempt
        c.retry_after = p.retry_after
    _consolidation_usage(state, rec, c, p.usage)
    if len(state.consolidations) > KEEP_FINISHED + _TRIM_SLACK:
        _trim_consolidations(state.consolidations)


def _consolidation_usage(state: State, rec: Record, c: ConsolidationState | None, usage: Usage | None) -> None:
    if usage:
        kind = "redo" if c is not None and c.redo_of else "consolidation"
        state.usage.add(rec.ts, kind, c.model if c is not None else None, usage)


def _usage_recorded(state: State, rec: Record) -> None:
    p = UsageRecorded.of(rec)
    state.usage.add(rec.ts, p.kind, p.model, p.usage, max(1, p.calls))


def _memory_written(state: State, rec: Record) -> None:
    p = MemoryWritten.of(rec)
    state.memory_seq = rec.seq
    state.memory_revisions += 1
    state.memory = p.memory
    promptbase.noted(state, rec.seq, p)
    for item in p.flagged or ():
        state.review[item["id"]] = {**item, "seq": rec.seq}


def _context_changed(state: State, rec: Record) -> None:
    state.context_digest = ContextChanged.of(rec).digest


def _memory_reviewed(state: State, rec: Record) -> None:
    state.review.pop(MemoryReviewed.of(rec).item, None)


def _reminder_scheduled(state: State, rec: Record) -> None:
    p = ReminderScheduled.of(rec)
    rid = p.reminder
    origin = p.origin
    # another device's: dated by its owner's clock, as the owner dates it, so every
    # device shows the same schedule and the same next time (the owner fires it)
    state.reminders[rid] = ReminderState(
        rid, p.text, p.kind, p.spec, p.tz, p.mode, rec.seq,
        origin["ts"] if origin is not None else rec.ts, device=origin["device"] if origin is not None else None,
    )
    early = state.early.pop(rid, None)
    if early is not None:
        for occurrence in early.get("fired") or ():
            _fired(state.reminders[rid], occurrence)
        if early.get("cancelled"):
            state.reminders[rid].active = False


def _reminder_fired(state: State, rec: Record) -> None:
    p = ReminderFired.of(rec)
    r = state.reminders.get(p.reminder)
    if r is not None:
        _fired(r, p.occurrence)
    else:
        state.early.setdefault(p.reminder, {}).setdefault("fired", []).append(p.occurrence)


def _reminder_cancelled(state: State, rec: Record) -> None:
    p = ReminderCancelled.of(rec)
    r = state.reminders.get(p.reminder)
    if r is not None:
        r.active = False
    else:
        state.early.setdefault(p.reminder, {})["cancelled"] = True


def _device_named(state: State, rec: Record) -> None:
    p = DeviceNamed.of(rec)
    if p.name:
        state.device_names[p.device] = p.name
    else:
        state.device_names.pop(p.device, None)


def _sync_pulled(state: State, rec: Record) -> None:
    p = SyncPulled.of(rec)
    state.sync[p.device] = {"commit": p.commit, "through": p.through}


#: the fold of each type that changes the state (other known types change only ``last_seq``)
_FOLDS: dict[str, Callable[[State, Record], None]] = {
    MemoryPurged.TYPE: _memory_purged,
    SessionReset.TYPE: _session_reset,
    ConsolidationStarted.TYPE: _consolidation_started,
    ConsolidationCompleted.TYPE: _consolidation_completed,
    ConsolidationFailed.TYPE: _consolidation_failed,
    MemoryWritten.TYPE: _memory_written,
    ContextChanged.TYPE: _context_changed,
    MemoryReviewed.TYPE: _memory_reviewed,
    ReminderScheduled.TYPE: _reminder_scheduled,
    ReminderFired.TYPE: _reminder_fired,
    ReminderCancelled.TYPE: _reminder_cancelled,
    SyncPulled.TYPE: _sync_pulled,
    DeviceNamed.TYPE: _device_named,
    TurnFailed.TYPE: _turn_failed,
    SessionTitled.TYPE: _session_titled,
    SessionDeleted.TYPE: _session_deleted,
    SessionRestored.TYPE: _session_restored,
    SessionPinned.TYPE: _session_pinned,
    SessionModel.TYPE: _session_model,
    SessionScope.TYPE: _session_scope,
    ImportItem.TYPE: _import_item,
    UsageRecorded.TYPE: _usage_recorded,
}

_LAST_WORDS = 400  # characters of the last message kept for the Chats list's preview
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)


def first_line(text: str, limit: int) -> str:
    """The first line of ``text`` that says something (a quoted code block and a line that
    only introduces one skipped), cut to ``limit`` characters: a conversation's title or preview."""
    lines = [" ".join(line.split()) for line in _FENCE.sub("", text).splitlines()]
    every = [" ".join(line.split()) for line in text.splitlines() if not line.lstrip().startswith("```")]
    line = (next((x for x in lines if x and not x.endswith(":")), "") or next((x for x in lines if x), "")
            or next((x for x in every if x), ""))
    return line if len(line) <= limit else line[: limit - 1] + "…"



def _advance(s: SessionState, end: int) -> None:
    """Move the pointer and drop what is now consolidated (it stays in the log), but for what
    the session's prompt still shows (layout 3: from ``prompt_base``, until its next re-base)."""
    end = min(end, s.count)
    drop = max((end if s.prompt_base is None else min(end, s.prompt_base)) - s.base, 0)
    if drop:
        del s.messages[:drop]
        s.base += drop
    s.last_consolidated = end


def replay(records: Iterable[Record], state: State | None = None) -> State:
    """Fold ``records`` into ``state`` (a fresh one by default). Pure for a fresh state."""
    st = State() if state is None else state
    for rec in records:
        apply(st, rec)
    return st


def _fired(r: ReminderState, occurrence: str) -> None:
    if occurrence not in r.fired:
        r.fired.append(occurrence)
        del r.fired[:-_FIRED_KEEP]
    r.last_fired = occurrence
    if r.kind == "at":
        r.active = False
