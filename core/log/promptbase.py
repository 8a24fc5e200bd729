"""Prompt layout 3's share of the fold: each session's memory snapshot and history start,
and notes of what memory changed since (docs/ARCHITECTURE.md, "A prompt that survives a
consolidation in the cache").

A user message with ``rebase`` starts its session's prompt over: the system prompt shows
memory as it is at that message (the *snapshot*, kept in :attr:`State.snapshots` by the
seq of its ``memory.written``) and the history starts at the consolidation pointer of that
moment (``SessionState.prompt_base``: messages folded later stay in the state, and in the
prompt, until the next re-base). Every ``memory.written`` leaves a note of its fact diff
(:func:`note_of`, :attr:`State.notes`), which the prompt shows before the first user
message that follows it, so snapshot + notes is memory now while every request stays the
previous one plus the new turn.

Bounded like the rest of the state: :data:`KEEP_SNAPSHOTS` snapshots (the ones sessions
show) and :data:`KEEP_NOTES` notes; a session whose snapshot or notes were trimmed is shown
memory now (and the agent re-bases it at its next turn). Everything here depends only on
the records, so prompt time travel rebuilds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from memtray.core.log.payloads_memory import MemoryWritten


class SessionState(Protocol):
    """What this module reads and moves of a session (projections.SessionState)."""

    messages: list[dict[str, Any]]
    base: int
    last_consolidated: int
    prompt_base: int | None
    snapshot_seq: int
    scope: str | None


class State(Protocol):
    """What this module reads and keeps of the state (projections.State)."""

    @property
    def sessions(self) -> Mapping[str, SessionState]: ...

    memory: str
    memory_seq: int
    snapshots: dict[str, str]
    notes: list[list[Any]]
    notes_from: int

KEEP_SNAPSHOTS = 16
KEEP_NOTES = 200


def _tag(scope: str | None) -> str:
    return "" if not scope or scope == "global" else scope


def shown_to(tag: str, scope: str | None) -> bool:
    """Whether a note tagged ``tag`` ("": every conversation, "work": conversations of
    scope work, "!work": all but those) is told to a conversation of ``scope``."""
    mine = _tag(scope)
    if not tag:
        return True
    if tag.startswith("!"):
        return tag[1:] != mine
    return tag == mine


def notes_of(p: MemoryWritten) -> list[tuple[str, str]]:
    """:func:`note_of` split by who may be told (``(tag, text)``, see :func:`shown_to`): a
    scope's facts are told only to conversations of that scope, and a fact moved between
    scopes comes into sight, or leaves it, where it moved."""
    d = p.diff
    if d is None:
        return [("", note_of(p))]
    by: dict[str, list[str]] = {}
    for f in d["added"]:
        by.setdefault(_tag(f.get("scope")), []).append(f"+ [{f['section']}] {f['text']}")
    for f in d["dropped"]:
        by.setdefault(_tag(f.get("scope")), []).append(
            f"- [{f['section']}] {f['text']}" + (f" (removed: {f['reason']})" if f.get("reason") else " (removed)"))
    for c in d["changed"]:
        by.setdefault(_tag(c["new"].get("scope")), []).append(f"~ [{c['new']['section']}] {c['old']['text']} -> {c['new']['text']}")
    for m in p.moved or ():
        src, dst = _tag(m["source"]), _tag(m["target"])
        gone = f"- [{m['section']}] {m['text']} (moved to another memory scope)"
        came = f"+ [{m['section']}] {m['text']}"
        if not src:  # global -> dst: everyone but dst loses sight of it
            by.setdefault("!" + dst, []).append(gone)
        elif not dst:  # src -> global: everyone but src now sees it
            by.setdefault("!" + src, []).append(came)
        else:
            by.setdefault(src, []).append(gone)
            by.setdefault(dst, []).append(came)
    return [(tag, "\n".join(lines)) for tag, lines in by.items() if lines]


def note_of(p: MemoryWritten) -> str:
    """What one memory revision changed, a line per fact (``+`` added, ``-`` removed and
    why, ``~`` reworded); the whole new text when the revision carries no fact diff."""
    d = p.diff
    if d is None:
        return "memory was rewritten as:\n" + p.memory.strip()
    lines = [f"+ [{f['section']}] {f['text']}" for f in d["added"]]
    lines += [f"- [{f['section']}] {f['text']}" + (f" (removed: {f['reason']})" if f.get("reason") else " (removed)")
              for f in d["dropped"]]
    lines += [f"~ [{c['new']['section']}] {c['old']['text']} -> {c['new']['text']}" for c in d["changed"]]
    return "\n".join(lines)


def noted(state: State, seq: int, p: MemoryWritten) -> None:
    """Fold a ``memory.written``'s note in (a revision that changed no fact leaves none); a
    note for some scopes only carries its tag third (``[seq, text, tag]``)."""
    for tag, text in notes_of(p):
        if text:
            state.notes.append([seq, text, tag] if tag else [seq, text])
    while len(state.notes) > KEEP_NOTES:
        dropped = state.notes.pop(0)
        state.notes_from = max(state.notes_from, int(dropped[0]))


def rebase(state: State, s: SessionState) -> None:
    """Start ``s``'s prompt over at memory now and the consolidation pointer now."""
    s.prompt_base = s.last_consolidated
    s.snapshot_seq = state.memory_seq
    state.snapshots.setdefault(str(state.memory_seq), state.memory)
    drop = max(s.prompt_base - s.base, 0)
    if drop:
        del s.messages[:drop]
        s.base += drop
    shown = {str(o.snapshot_seq) for o in state.sessions.values() if o.prompt_base is not None}
    for key in [k for k in state.snapshots if k not in shown]:
        del state.snapshots[key]
    while len(state.snapshots) > KEEP_SNAPSHOTS:
        del state.snapshots[min(state.snapshots, key=int)]
    oldest = min(int(k) for k in state.snapshots)
    if state.notes and state.notes[0][0] <= oldest:
        state.notes[:] = [n for n in state.notes if n[0] > oldest]
        state.notes_from = max(state.notes_from, oldest)


def view(state: State, s: SessionState) -> tuple[str, list[list[Any]]] | None:
    """``s``'s snapshot and the notes since it, or None when it has none to show (never
    re-based, or trimmed): its prompt then shows memory now from the pointer."""
    if s.prompt_base is None or state.notes_from > s.snapshot_seq:
        return None
    snap = state.snapshots.get(str(s.snapshot_seq))
    if snap is None:
        return None
    return snap, [n[:2] for n in state.notes
                  if int(n[0]) > s.snapshot_seq and shown_to(str(n[2]) if len(n) > 2 else "", s.scope)]
