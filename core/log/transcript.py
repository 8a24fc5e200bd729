"""What a front end shows of the conversations: the session list (titles, dates,
previews), a session's visible messages, pages of its earlier messages from the log,
and naming a conversation.

These are queries, not views: they return plain copies (never the live
:class:`~memtray.core.log.projections.State` objects), so a caller may hand the
result to another thread. They read the live state, so they run where the
state is written (the worker); the desktop calls them through its bridge.

The unconsolidated messages of a session are in the derived state; older ones
live only in the event log and are read from it by seq, newest segment first,
so showing the last screenful never reads the whole history.

:func:`recalled` returns the past entries a reply was given by recall (its
``recalled`` seqs): messages, diary entries and memory edits, from the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memtray.core.log.eventlog import EventLog
from memtray.core.log.events import FactDiffData, MemoryWritten, Message, Record, SessionReset
from memtray.core.log.origin import said_at
from memtray.core.log.projections import State
from memtray.core.log.segments import list_segments, scan_segment

if TYPE_CHECKING:
    from memtray.core.log.store import Store

#: a message dict as shown: the stored fields plus ``seq`` and ``ts``; a reset is ``{"kind": "reset", ...}``
Shown = dict[str, Any]


@dataclass(frozen=True)
class SessionInfo:
    key: str
    last_ts: str | None
    #: the user's first line, an imported conversation's title, or one the user set (``titled``)
    title: str | None = None
    titled: str = ""
    first_ts: str | None = None
    preview: str | None = None  # the first line of the last thing said
    failed: bool = False  # its last turn failed and has no reply yet
    pinned: bool = False
    deleted: str | None = None  # when it was deleted (listed under "Recently deleted")
    model: str | None = None  # the model chosen for it (None: the configured one)
    scope: str | None = None  # the memory scope it belongs to (None: global; core/memory/scopes.py)


@dataclass(frozen=True)
class Snapshot:
    """One session as it stands: its visible unconsolidated messages, oldest first.

    ``base`` and ``count`` are absolute message indexes (``messages`` covers the
    held range ``[base, count)``, tool results left out); ``resets`` counts the
    session's ``/new``; ``next_seq`` is the seq after the newest event, so
    everything before ``start_seq`` is in the log only.
    """

    session: str
    messages: list[Shown] = field(default_factory=list)
    base: int = 0
    count: int = 0
    resets: int = 0
    next_seq: int = 1

    @property
    def start_seq(self) -> int:
        """Read the log before this seq for earlier messages."""
        return int(self.messages[0]["seq"]) if self.messages else self.next_seq


@dataclass(frozen=True)
class Page:
    """Earlier messages of a session, oldest first, ``reset`` markers included."""

    messages: list[Shown] = field(default_factory=list)
    at_start: bool = False  # nothing older exists


def visible(msg: Shown) -> bool:
    """Whether a stored message is shown in a chat (tool results are not)."""
    role = msg.get("role")
    if role == "user":
        return True
    if role == "assistant":
        return bool(msg.get("content")) or bool(msg.get("tool_calls"))
    return msg.get("kind") == "reset"


def sessions(state: State) -> list[SessionInfo]:
    """Every session, deleted ones included (``deleted`` says): the pinned ones first,
    then the most recently active first."""
    listed = sorted(state.sessions.items(), key=lambda kv: (kv[1].last_ts or "", kv[1].last_seq), reverse=True)
    items = [SessionInfo(key, s.last_ts, s.title, s.titled, s.first_ts, s.preview, s.failed is not None,
                         s.pinned, s.deleted, s.model, s.scope) for key, s in listed]
    items.sort(key=lambda i: not i.pinned)  # stable: each group keeps its order by date
    return items


def snapshot(state: State, session: str) -> Snapshot:
    """``session`` as it stands in ``state`` (an empty one if it has no events yet)."""
    s = state.sessions.get(session)
    next_seq = state.last_seq + 1
    if s is None:
        return Snapshot(session, next_seq=next_seq)
    msgs = [dict(m) for m in list(s.messages) if visible(m)]
    if s.failed is not None:  # the message whose turn failed keeps its mark (and Retry) until a reply
        for m in msgs:
            if m["seq"] == s.failed["seq"]:
                m["failed"] = {"error": s.failed["error"], "kind": s.failed.get("kind", "")}
    return Snapshot(session, msgs, s.base, s.count, s.resets, next_seq)


MAX_TITLE = 120


def rename(store: Store, session: str, title: str) -> str:
    """Name conversation ``session`` (``session.titled``): whitespace folded, 1 to
    :data:`MAX_TITLE` characters. Returns the title as stored."""
    from memtray.core.base.errors import MemtrayError
    from memtray.core.log.events import SessionTitled

    title = " ".join(title.split())
    if not title:
        raise MemtrayError("a conversation's name needs some words")
    if len(title) > MAX_TITLE:
        raise MemtrayError(f"a conversation's name is at most {MAX_TITLE} characters")
    store.append(SessionTitled(title=title), session=session)
    return title


def earlier(log: EventLog, session: str, before_seq: int, limit: int = 40) -> Page:
    """Up to ``limit`` visible messages of ``session`` with seq < ``before_seq`` (0: no bound)."""
    found: list[Shown] = []
    exhausted = True
    upcast = log.schema.upcast
    for number, path in reversed(list_segments(log.dir)):
        chunk: list[Shown] = []
        for raw in scan_segment(path, number).records:
            if raw.session != session or (before_seq and raw.seq >= before_seq):
                continue
            if raw.type == Message.TYPE:
                rec = upcast(raw)
                msg: Shown = Message.of(rec).to_data()
                msg["seq"], msg["ts"] = rec.seq, said_at(rec)
                if visible(msg):
                    chunk.append(msg)
            elif raw.type == SessionReset.TYPE:
                chunk.append({"kind": "reset", "seq": raw.seq, "ts": said_at(raw)})
        found = chunk + found
        if len(found) > limit:
            exhausted = False
            break
    return Page(found[-limit:] if len(found) > limit else found, at_start=exhausted)


@dataclass(frozen=True)
class Recalled:
    """One recalled entry: ``role`` is ``user``/``assistant`` for a message, ``diary`` for a
    HISTORY.md entry, ``memory`` for a memory edit; ``missing`` when the log no longer has it."""

    seq: int
    ts: str = ""
    session: str | None = None
    role: str = ""
    text: str = ""
    missing: bool = False


def recalled(log: EventLog, seqs: list[int]) -> list[Recalled]:
    """The entries at ``seqs`` (a reply's ``recalled``), in that order. Reads segments
    newest first and stops once all are found; a seq no longer in the log (purged) is
    returned as ``missing``."""
    wanted = {int(s) for s in seqs}
    found: dict[int, Recalled] = {}
    upcast = log.schema.upcast
    for number, path in reversed(list_segments(log.dir)):
        if len(found) == len(wanted):
            break
        for raw in scan_segment(path, number).records:
            if raw.seq in wanted:
                entry = _entry(upcast(raw))
                if entry is not None:
                    found[raw.seq] = entry
    return [found.get(s, Recalled(s, missing=True)) for s in (int(x) for x in seqs)]


def _entry(rec: Record) -> Recalled | None:
    if rec.type == Message.TYPE:
        m = Message.of(rec)
        return Recalled(rec.seq, said_at(rec), rec.session, m.role, m.content or "")
    if rec.type == MemoryWritten.TYPE:
        w = MemoryWritten.of(rec)
        if w.history_append and w.history_append.strip():
            return Recalled(rec.seq, said_at(rec), rec.session, "diary", w.history_append.strip())
        return Recalled(rec.seq, said_at(rec), rec.session, "memory", diff_text(w.diff))
    return None


def diff_text(diff: FactDiffData | None) -> str:
    """The added and changed facts of a ``memory.written`` diff, one per line (what
    recall shows of a memory edit, and what search indexes of it)."""
    if not diff:
        return ""
    lines = [_fact(item) for item in [*diff["added"], *diff["changed"]]]
    return "\n".join(t for t in lines if t)


def _fact(item: Any) -> str:
    """A fact's text in a memory diff (a string, or ``{"new"|"text"|"fact": ...}``)."""
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, dict):
        for key in ("new", "text", "fact"):
            value = item.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
            if isinstance(value, dict):
                return _fact(value)
    return ""


__all__ = ["Page", "Recalled", "SessionInfo", "Snapshot", "diff_text", "earlier", "recalled", "sessions",
           "snapshot", "visible"]
