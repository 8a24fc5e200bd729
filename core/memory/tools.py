"""Agent tools for memory: ``remember`` and ``forget`` (immediate, committed edits).

Both write a ``memory.written`` event (reason ``agent``) and so one commit. A
fact that reads like an instruction is held for review, never written. ``remember``
may give the fact a time (``from``, ``until``, ``review_after``: ISO dates), read by the
consolidation's door (:func:`memtray.core.memory.timing.read_members`): a bad date or an
end before the start is an error the model sees, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from memtray.core.base.config import Settings
from memtray.core.llm.tools import Tool, ToolContext, ToolError, ToolRegistry
from memtray.core.log.store import Store
from memtray.core.memory import scopes, timing
from memtray.core.memory.service import MemoryService


def _last_user_seq(store: Store, session: str) -> int | None:
    s = store.state.sessions.get(session)
    if s is None:
        return None
    for m in reversed(s.messages):
        if m.get("role") == "user":
            return int(m["seq"])
    return None


#: the time members of ``remember`` (the consolidation's ``save_memory`` edits have the same)
TIME_PROPERTIES = {
    "from": {"type": "string", "description": "YYYY-MM-DD: the fact holds from this day (\"in July\": the 1st)."},
    "until": {"type": "string", "description": "YYYY-MM-DD: the fact holds until this day (\"this week\": its Sunday)."},
    "review_after": {"type": "string",
                     "description": "YYYY-MM-DD: ask the user then whether it still holds (a fact that may stop "
                                    "being true without a date, like 'training for a marathon')."},
}


def register(tools: ToolRegistry, svc: MemoryService, store: Store, settings: Settings,
             today: Callable[[], date] | None = None) -> None:
    """The memory tools; ``today`` (the user's day, from the injected clock) bounds how far
    ahead a review may be set."""

    async def remember(args: dict[str, Any], ctx: ToolContext) -> str:
        fact = str(args["fact"]).strip()
        if len(fact) > 500:
            raise ToolError("a fact must be one short sentence (at most 500 characters)")
        when, bad = timing.read_members(args, today() if today is not None else None)  # the consolidation's door
        if bad:
            raise ToolError(f"the fact's time: {bad}; nothing was remembered")
        return svc.remember(fact, args.get("section"), model=settings.current.model, source_seq=_last_user_seq(store, ctx.session),
                            scope=scopes.of_session(store.state, ctx.session), when=when)

    async def forget(args: dict[str, Any], ctx: ToolContext) -> str:
        return svc.forget(str(args["fact"]), str(args.get("reason") or ""), model=settings.current.model,
                          scope=scopes.of_session(store.state, ctx.session))  # only what its prompt shows

    tools.add(Tool(
        "remember",
        "Save one durable fact about the user to long-term memory (e.g. name, preferences, projects).",
        {
            "type": "object",
            "properties": {
                "fact": {"type": "string", "description": "The fact, one short sentence."},
                "section": {"type": "string", "description": "Heading to file it under, e.g. 'Preferences'."},
                **TIME_PROPERTIES,
            },
            "required": ["fact"],
        },
        remember,
    ))
    tools.add(Tool(
        "forget",
        "Remove a fact from long-term memory because the user asked or it is no longer true.",
        {
            "type": "object",
            "properties": {
                "fact": {"type": "string", "description": "The fact to remove (its text or id)."},
                "reason": {"type": "string", "description": "Why it is removed."},
            },
            "required": ["fact", "reason"],
        },
        forget,
    ))
