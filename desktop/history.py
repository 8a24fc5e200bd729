"""Scroll-back and session actions shared by the quick chat and the main window.

The unconsolidated messages of a session are in the derived state; older ones
live only in the event log and are read from it by seq (newest segment first,
so showing the last screenful never reads the whole history). Functions that
read files or append events run on the worker (through the bridge).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memtray.core.log.eventlog import list_segments, scan_segment


@dataclass
class Page:
    messages: list[dict[str, Any]] = field(default_factory=list)  # oldest first; "reset" markers included
    at_start: bool = False  # nothing older exists


def visible(msg: dict[str, Any]) -> bool:
    """Whether a stored message is shown in the chat (tool results are not)."""
    role = msg.get("role")
    if role == "user":
        return True
    if role == "assistant":
        return bool(msg.get("content")) or bool(msg.get("tool_calls"))
    return msg.get("kind") == "reset"


def current(state: Any, session: str) -> list[dict[str, Any]]:
    """The session's messages held in the live state (a snapshot; list copy is atomic)."""
    s = state.sessions.get(session)
    if s is None:
        return []
    return [m for m in list(s.messages) if visible(m)]


def older(log: Any, session: str, before_seq: int, limit: int = 40) -> Page:
    """Up to ``limit`` visible messages of ``session`` with seq < ``before_seq`` (reads the log)."""
    found: list[dict[str, Any]] = []
    segments = list_segments(log.dir)
    exhausted = True
    for number, path in reversed(segments):
        scan = scan_segment(path, number)
        chunk: list[dict[str, Any]] = []
        for item in scan.records:
            rec = item if hasattr(item, "seq") else item[0]  # (record, position) in older cores
            if rec.session != session or (before_seq and rec.seq >= before_seq):
                continue
            if rec.type == "message":
                msg = {k: v for k, v in rec.data.items()}
                msg["seq"], msg["ts"] = rec.seq, rec.ts
                if visible(msg):
                    chunk.append(msg)
            elif rec.type == "session.reset":
                chunk.append({"kind": "reset", "seq": rec.seq, "ts": rec.ts})
        found = chunk + found
        if len(found) > limit:
            exhausted = False
            break
    if len(found) > limit:
        found = found[-limit:]
    return Page(found, at_start=exhausted)


async def new_session(app: Any, session: str) -> None:
    """``/new``: the same path as the CLI (archive through consolidation, then reset)."""
    cons = app.services.get("consolidation")
    if cons is not None:
        await cons.archive(session)  # raises (and keeps the session) if archiving fails
    app.agent.new_session(session)
