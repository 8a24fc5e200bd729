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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memtray.core.log.events import Record

STATE_VERSION = 6  # 2: consolidations keep their failed attempt and retry delay; 3: only recent ones;
# 4: another device's reminder is dated when its owner scheduled it; 5: early reminder events;
# 6: sessions' titles, first message time, preview and failed turn
#: Finished (completed or failed) consolidations kept in the state, newest by start: the
#: state (and so the checkpoint and start-up) stays the same size however long the log
#: grows. Older ones are read back from the log when asked for (Store.consolidation).
KEEP_FINISHED = 256
_TRIM_SLACK = 64  # trim in batches: a sort per finished consolidation would slow replay

# The message fields that are replayed into sessions (and sent to the model).
_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name", "context", "stop", "recall", "recalled",
                 "attachments")
_MESSAGE_KEYSET = frozenset(_MESSAGE_KEYS)


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
    preview: str | None = None
    #: the turn that failed last, until a reply: {"seq": the user message, "error": why, "kind": its class}
    failed: dict[str, Any] | None = None

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
            "preview": self.preview,
            "failed": self.failed,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> SessionState:
        return cls(
            obj["key"], list(obj["messages"]), obj["base"], obj["last_consolidated"],
            obj.get("resets", 0), obj.get("last_ts"), obj.get("title"), obj.get("titled", ""),
            obj.get("first_ts"), obj.get("preview"), obj.get("failed"),
        )

    def said(self, role: Any, content: Any, ts: str, seq: int, *, reply: bool) -> None:
        """A message's share of the list's line: the title from the first thing the user
        wrote, the preview from the last words; a reply ends a failed turn's mark."""
        if self.first_ts is None:
            self.first_ts = ts
        if role not in ("user", "assistant") or not isinstance(content, str) or not content.strip():
            return
        if role == "user" and self.title is None:
            self.title = first_line(content, 80)
        self.preview = first_line(content, 140)
        if role == "assistant" and reply:
            self.failed = None


@dataclass
class ConsolidationState:
    id: str
    session: str
    start: int
    end: int
    model: str
    status: str = "started"  # started | completed | failed
    reason: str | None = None
    attempts: int = 0
    started_seq: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    redo_of: str | None = None
    memory_seq: int | None = None
    ts: str | None = None  # when it last changed status
    #: of a failure: the session's consecutive failed attempt and the backoff before the next
    failed_attempt: int | None = None
    retry_after: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ConsolidationState:
        return cls(**obj)


@dataclass
class ReminderState:
    id: str
    text: str
    kind: str
    spec: str
    tz: str
    mode: str
    scheduled_seq: int
    scheduled_ts: str
    active: bool = True
    fired: list[str] = field(default_factory=list)  # occurrence keys, newest last (bounded)
    last_fired: str | None = None
    #: the device that owns it when it was imported from a peer (only the owner fires it)
    device: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ReminderState:
        return cls(**obj)


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
        )

    def copy(self) -> State:
        return copy.deepcopy(self)


KNOWN_TYPES = frozenset(
    {
        "message",
        "session.reset",
        "session.titled",
        "turn.failed",
        "consolidation.started",
        "consolidation.completed",
        "consolidation.failed",
        "memory.written",
        "memory.rolled_back",
        "memory.reviewed",
        "log.damaged",
        "memory.purged",
        "memory.peer",
        "reminder.scheduled",
        "reminder.fired",
        "reminder.cancelled",
        "index.rebuilt",
        "context.changed",
        "rebuild.started",
        "rebuild.progress",
        "rebuild.completed",
        "rebuild.failed",
        "rebuild.discarded",
        "rebuild.adopted",
        "import.started",
        "import.item",
        "import.completed",
        "import.failed",
        "mcp.write",
        "mcp.call",
        "sync.pulled",
        "sync.purge",
    }
)


def _trim_consolidations(cons: dict[str, ConsolidationState]) -> None:
    """Keep the newest KEEP_FINISHED finished consolidations (by start) and every running one.

    Depends only on the contents, never on dict order, so a state rebuilt from a
    checkpoint trims exactly as the live one did.
    """
    finished = sorted((c for c in cons.values() if c.status != "started"), key=lambda c: c.started_seq)
    for c in finished[: max(0, len(finished) - KEEP_FINISHED)]:
        del cons[c.id]


def apply(state: State, rec: Record) -> State:
    """Fold one record into ``state`` (in place) and return it."""
    t = rec.type
    d = rec.data
    if t == "message":  # the hot path of replay: most records are messages
        seq, _id, ts, _t, _v, key, _d = rec
        key = key or "default"
        s = state.sessions.get(key) or state.session(key)
        if "origin" in d:  # imported from a peer: consolidated there, never part of a tail here
            s.base += 1
            s.last_consolidated = s.base
            said = d["origin"].get("ts") if isinstance(d["origin"], dict) else None
            # when it was said there (origin.said_at: never after it arrived here; same ISO form)
            s.last_ts = said if isinstance(said, str) and said < ts else ts
            s.said(d.get("role"), d.get("content"), s.last_ts, seq, reply=not d.get("tool_calls"))
            state.last_seq = seq
            return state
        msg = {k: v for k, v in d.items() if k in _MESSAGE_KEYSET and v is not None}
        msg["seq"] = seq
        msg["ts"] = ts
        s.messages.append(msg)
        s.last_ts = ts
        s.said(d.get("role"), d.get("content"), ts, seq, reply=not d.get("tool_calls"))
        state.last_seq = seq
        return state
    elif t == "turn.failed":
        s = state.session(rec.session or "default")
        user = next((m for m in reversed(s.messages) if m.get("role") == "user"), None)
        if user is not None:
            s.failed = {"seq": user["seq"], "error": str(d.get("error") or ""), "kind": str(d.get("kind") or "")}
    elif t == "session.titled":
        s = state.session(rec.session or "default")
        s.title, s.titled = str(d["title"]), "user"
    elif t == "import.item" and rec.session and d.get("title"):
        s = state.session(rec.session)
        if s.titled != "user":  # an imported conversation keeps its title, unless renamed here
            s.title, s.titled = str(d["title"]), "import"
    elif t == "session.reset":
        s = state.session(rec.session or "default")
        s.base = s.count
        s.messages = []
        s.last_consolidated = s.base
        s.resets += 1
        s.last_ts = rec.ts
    elif t == "consolidation.started":
        cid = d["consolidation"]
        prev = state.consolidations.get(cid)
        state.consolidations[cid] = ConsolidationState(
            cid, rec.session or "default", d["start"], d["end"], d["model"],
            attempts=(prev.attempts if prev else 0) + 1, started_seq=rec.seq,
            first_seq=d.get("first_seq"), last_seq=d.get("last_seq"), redo_of=d.get("redo_of"), ts=rec.ts,
        )
    elif t == "consolidation.completed":
        c = state.consolidations.get(d["consolidation"])
        if c is not None:
            c.status = "completed"
            c.reason = None
            c.ts = rec.ts
            c.memory_seq = d.get("memory_seq")
            if c.redo_of is None:
                s = state.session(c.session)
                if d["end"] > s.last_consolidated:
                    _advance(s, d["end"])
        if len(state.consolidations) > KEEP_FINISHED + _TRIM_SLACK:
            _trim_consolidations(state.consolidations)
    elif t == "consolidation.failed":
        c = state.consolidations.get(d["consolidation"])
        if c is not None:
            c.status = "failed"
            c.reason = d.get("reason")
            c.ts = rec.ts
            c.failed_attempt = d.get("attempt")
            c.retry_after = d.get("retry_after")
        if len(state.consolidations) > KEEP_FINISHED + _TRIM_SLACK:
            _trim_consolidations(state.consolidations)
    elif t == "memory.written":
        state.memory_seq = rec.seq
        state.memory_revisions += 1
        state.memory = d["memory"]
        for item in d.get("flagged") or ():
            state.review[item["id"]] = {**item, "seq": rec.seq}
    elif t == "context.changed":
        state.context_digest = d["digest"]
    elif t == "memory.reviewed":
        state.review.pop(d["item"], None)
    elif t == "reminder.scheduled":
        rid = d["reminder"]
        origin = d.get("origin") or {}
        # another device's: dated by its owner's clock, as the owner dates it, so every
        # device shows the same schedule and the same next time (the owner fires it)
        state.reminders[rid] = ReminderState(
            rid, d["text"], d["kind"], d["spec"], d["tz"], d.get("mode", "notify"), rec.seq,
            str(origin.get("ts") or rec.ts), device=origin.get("device"),
        )
        early = state.early.pop(rid, None)
        if early is not None:
            for occurrence in early.get("fired") or ():
                _fired(state.reminders[rid], occurrence)
            if early.get("cancelled"):
                state.reminders[rid].active = False
    elif t == "reminder.fired":
        r = state.reminders.get(d["reminder"])
        if r is not None:
            _fired(r, d["occurrence"])
        else:
            state.early.setdefault(d["reminder"], {}).setdefault("fired", []).append(d["occurrence"])
    elif t == "reminder.cancelled":
        r = state.reminders.get(d["reminder"])
        if r is not None:
            r.active = False
        else:
            state.early.setdefault(d["reminder"], {})["cancelled"] = True
    elif t == "sync.pulled":
        state.sync[d["device"]] = {"commit": d["commit"], "through": d["through"]}
    elif t not in KNOWN_TYPES:
        state.unknown[t] = state.unknown.get(t, 0) + 1
    state.last_seq = rec.seq
    return state


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
    """Move the pointer and drop what is now consolidated (it stays in the log)."""
    end = min(end, s.count)
    drop = max(end - s.base, 0)
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
