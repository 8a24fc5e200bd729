"""Prompt time travel: the exact request a past assistant turn answered, rebuilt from the log.

A request is ``(model, messages, tools)``; the agent records its sha256 as the
assistant message's ``request_hash``. Everything it was made of is in the log:

* the history and the user message with its runtime-context line are the
  session's state at the message's ``basis_seq`` (the log position the request
  was built from; a consolidation that finished while the model was answering
  does not confuse it);
* the memory is ``MEMORY.md`` as of ``basis_seq``;
* model, tools, identity prompt, bootstrap files and skills -- which are not
  messages -- come from the last ``context.changed`` before the assistant
  message (the agent appends one, in the same write as the message, whenever
  they differ from the last recorded one).

:func:`reconstruct` folds the log once and rebuilds the requests of the turns
asked for, then hashes them; ``match`` says whether the rebuilt request is the
one that was sent, byte for byte. Read-only: works while memtray runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memtray.core.agent.context import (
    PROMPT_FORMAT,
    PROMPT_FORMATS,
    PromptContext,
    Skill,
    build_messages,
    system_prompt,
)
from memtray.core.agent.layout import prompt_messages
from memtray.core.agent.loop import request_hash
from memtray.core.base.clock import parse_ts
from memtray.core.base.errors import MemtrayError
from memtray.core.log.events import ContextChanged, Message, Record
from memtray.core.log.projections import State, apply
from memtray.core.log.sessions import Loader, get_history


class NotATurn(MemtrayError):
    """The seq or time asked for is not an assistant turn with a recorded request."""

    hint = "See `memtray events tail` for seqs; assistant turns are `message` events with role assistant."


@dataclass
class Reconstruction:
    seq: int
    ts: str
    session: str
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    request_hash: str
    rebuilt_hash: str
    basis_seq: int
    memory_seq: int
    context_seq: int | None
    notes: list[str] = field(default_factory=list)

    @property
    def match(self) -> bool:
        return self.request_hash == self.rebuilt_hash

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq, "ts": self.ts, "session": self.session, "model": self.model,
            "request_hash": self.request_hash, "rebuilt_hash": self.rebuilt_hash, "match": self.match,
            "basis_seq": self.basis_seq, "memory_seq": self.memory_seq, "context_seq": self.context_seq,
            "notes": self.notes, "messages": self.messages, "tools": self.tools,
        }


@dataclass
class _Target:
    seq: int
    ts: str
    session: str
    request_hash: str
    basis: int
    context: Record | None
    notes: list[str]


def _is_turn(rec: Record) -> bool:
    return rec.type == Message.TYPE and (m := Message.of(rec)).role == "assistant" and bool(m.request_hash)


def find_turn(records: Iterable[Record], *, seq: int | None = None, when: datetime | None = None,
              session: str | None = None) -> int:
    """The seq of the assistant turn asked for; :class:`NotATurn` with the reason otherwise."""
    best: Record | None = None
    target: Record | None = None
    after_target: Record | None = None
    last = 0
    for rec in records:
        last = rec.seq
        if seq is not None:
            if rec.seq == seq:
                target = rec
            elif target is not None and rec.seq > seq and _is_turn(rec) and rec.session == target.session:
                after_target = rec
                break
            continue
        assert when is not None
        if parse_ts(rec.ts) > when:
            break
        if _is_turn(rec) and (session is None or rec.session == session):
            best = rec
    if seq is None:
        if best is None:
            where = f" in session {session!r}" if session else ""
            raise NotATurn(f"no assistant turn{where} at or before {when.isoformat() if when else '?'}")
        return best.seq
    if target is None:
        raise NotATurn(f"there is no event {seq} (the log ends at seq {last})")
    if session is not None and target.session != session:
        raise NotATurn(f"event {seq} belongs to session {target.session!r}, not {session!r}")
    if _is_turn(target):
        return seq
    if target.type != Message.TYPE:
        raise NotATurn(f"event {seq} is a {target.type} event, not an assistant turn")
    m = Message.of(target)
    role = m.role
    nxt = f"; the assistant turn after it is {after_target.seq}" if after_target is not None else ""
    if role == "assistant":
        why = f"it ended early ({m.stop})" if m.stop else "it predates request recording"
        raise NotATurn(f"event {seq} is an assistant message without a recorded request: {why}")
    raise NotATurn(f"event {seq} is a {role} message, not an assistant turn{nxt}")


def reconstruct(
    records: Sequence[Record] | Callable[[], Iterable[Record]], seqs: Iterable[int] | None = None,
    load: Loader | None = None,
) -> dict[int, Reconstruction]:
    """Rebuild the requests of the assistant turns ``seqs`` (all of them when None).

    ``records`` is the whole log from seq 1: a list, or a function returning a fresh
    iterator (``EventLog.records``), since the log is read twice. ``load`` reads the
    attachments user messages reference (``AttachmentStore.load``).
    """

    def recs_() -> Iterable[Record]:
        return records() if callable(records) else records

    wanted = set(seqs) if seqs is not None else None
    targets: dict[int, list[_Target]] = {}
    ctx: Record | None = None
    for rec in recs_():
        if rec.type == ContextChanged.TYPE:
            ctx = rec
        elif _is_turn(rec) and (wanted is None or rec.seq in wanted):
            m = Message.of(rec)
            notes = []
            basis = m.basis_seq
            if basis is None:
                basis = rec.seq - 1
                notes.append("the turn predates basis recording: rebuilt from the log just before it")
            c = ContextChanged.of(ctx) if ctx is not None else None
            if c is None:
                notes.append("no context.changed before this turn: model, tools, bootstrap files and skills "
                             "are unknown, so the rebuilt request cannot match")
            elif c.redacted:
                notes.append("a bootstrap file or skill held a secret that was redacted in the log: "
                             "the rebuilt system prompt shows it redacted")
            if c is not None and c.format not in PROMPT_FORMATS:
                notes.append(f"recorded with prompt format {c.format}; this memtray renders "
                             f"formats {', '.join(map(str, PROMPT_FORMATS))} (up to {PROMPT_FORMAT})")
            targets.setdefault(basis, []).append(
                _Target(rec.seq, rec.ts, rec.session or "default", m.request_hash or "", basis, ctx, notes))
    out: dict[int, Reconstruction] = {}
    if not targets:
        return out
    state = State()
    pending = sorted(targets)
    i = 0
    if pending[0] == 0:
        _build(state, targets[0], out, load)
        i = 1
    for rec in recs_():
        if i >= len(pending):
            break
        apply(state, rec)
        while i < len(pending) and pending[i] == rec.seq:
            _build(state, targets[rec.seq], out, load)
            i += 1
    return out


def _build(state: State, targets: list[_Target], out: dict[int, Reconstruction], load: Loader | None = None) -> None:
    for t in targets:
        c = ContextChanged.of(t.context) if t.context is not None else None
        model = c.model if c is not None else ""
        tools: list[Any] = list(c.tools) if c is not None else []
        bootstrap = [(n, x) for n, x in c.bootstrap] if c is not None else []
        skills = [Skill(n, x) for n, x in c.skills] if c is not None else []
        fmt = c.format if c is not None else 1  # each turn is rebuilt in the layout it was sent with
        fmt = fmt if fmt in PROMPT_FORMATS else PROMPT_FORMAT
        if c is not None and fmt >= 3:  # a memory snapshot, notes, the history from the re-base
            pctx = PromptContext(model, tools, c.identity, bootstrap, skills)
            messages = prompt_messages(state, t.session, pctx, load, format=fmt)
        else:
            system = system_prompt(state.memory, bootstrap, skills, c.identity if c is not None else None,
                                   format=fmt)
            session = state.sessions.get(t.session)
            history = get_history(session, load=load) if session is not None else []
            messages = build_messages(system, history)
        out[t.seq] = Reconstruction(
            t.seq, t.ts, t.session, model, messages, tools, t.request_hash,
            request_hash(model, messages, tools or None), t.basis, state.memory_seq,
            t.context.seq if t.context is not None else None, t.notes,
        )
