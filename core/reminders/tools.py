"""Agent tools for reminders: ``schedule_reminder``, ``list_reminders``, ``cancel_reminder``.

They call :class:`~memtray.core.reminders.service.ReminderService` like the CLI does; a
reminder's own agent run may not schedule more. ``at`` and ``every`` take the user's
words too ("tomorrow at noon", "weekday at 9": :mod:`.natural`).
"""

from __future__ import annotations

from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.llm.tools import Tool, ToolContext, ToolError, ToolRegistry
from memtray.core.reminders.service import ReminderService
from memtray.core.reminders.spec import MODES, describe_time


def _tool_error(exc: MemtrayError) -> ToolError:
    return ToolError(f"{exc}" + (f" ({exc.hint})" if exc.hint else ""))


def _opt_str(args: dict[str, Any], key: str) -> str | None:
    v = args.get(key)
    return str(v) if v not in (None, "") else None


def register_tools(tools: ToolRegistry, svc: ReminderService) -> None:
    async def schedule_reminder(args: dict[str, Any], ctx: ToolContext) -> str:
        if ctx.in_reminder:
            raise ToolError("a reminder's own run cannot schedule new reminders")
        try:
            r = svc.schedule(
                str(args["text"]), at=_opt_str(args, "at"), every=_opt_str(args, "every"),
                cron=_opt_str(args, "cron"), tz=_opt_str(args, "tz"), mode=_opt_str(args, "mode") or "notify",
                session=ctx.session,
            )
        except MemtrayError as exc:
            raise _tool_error(exc) from None
        nxt = svc.next_fire(r)
        when = describe_time(nxt, r.tz) if nxt is not None else "never"
        return f"scheduled reminder {r.id}: {r.text!r}, {svc.describe(r)}; next: {when}"

    async def list_reminders(args: dict[str, Any], ctx: ToolContext) -> str:
        rs = svc.reminders()
        if not rs:
            return "no active reminders"
        lines = []
        for r in rs:
            nxt = svc.next_fire(r)
            when = describe_time(nxt, r.tz) if nxt is not None else "-"
            lines.append(f"- {r.id}: {r.text!r}, {svc.describe(r)}, mode {r.mode}, next {when}")
        return "\n".join(lines)

    async def cancel_reminder(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            r = svc.cancel(str(args["id"]), reason="agent")
        except MemtrayError as exc:
            raise _tool_error(exc) from None
        return f"cancelled reminder {r.id}: {r.text!r}"

    tools.add(Tool(
        "schedule_reminder",
        "Schedule a reminder for the user. Give exactly one of `at` (one time: ISO 8601 with offset, or "
        "the user's words like 'in 2 minutes', 'tomorrow at noon', 'friday 9am'), `every` (a repetition: "
        "30m, 2h, or words like 'weekday at 9', 'monday and thursday at 18:00') or `cron` (5-field cron). "
        "mode 'agent' runs you at that time and shows your reply instead of the text.",
        {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "What to remind the user of."},
                "at": {"type": "string", "description": "One-off time: ISO 8601 (2026-12-01T09:30:00+01:00), "
                       "'in 2 minutes', 'tomorrow at noon', 'friday 9am', '18:30'."},
                "every": {"type": "string", "description": "Repetition: an interval (90m, 2h, 1d; minimum 1m) or "
                          "days and a time ('weekday at 9', 'day at 8:30', 'monday and thursday at 18:00')."},
                "cron": {"type": "string", "description": "Cron expression, e.g. '30 9 * * mon-fri'."},
                "tz": {"type": "string", "description": "IANA time zone; default: the user's."},
                "mode": {"type": "string", "enum": list(MODES), "description": "notify (default) or agent."},
            },
            "required": ["text"],
            "additionalProperties": False,
        },
        schedule_reminder,
    ))
    tools.add(Tool(
        "list_reminders",
        "List the user's active reminders with their ids and next times.",
        {"type": "object", "properties": {}, "additionalProperties": False},
        list_reminders,
    ))
    tools.add(Tool(
        "cancel_reminder",
        "Cancel a reminder by its id (from list_reminders).",
        {
            "type": "object",
            "properties": {"id": {"type": "string", "description": "The reminder id."}},
            "required": ["id"],
            "additionalProperties": False,
        },
        cancel_reminder,
    ))
