"""``memtray usage``: what the provider calls cost, from the usage ledger (core/log/usage.py).

Without ``--json``: today, this month and the last ``--days`` days (default 30), then the
same period by kind of call and by model, and the background budget's state. ``--json``
prints one object: ``{"days", "today", "month", "period", "by_group", "by_kind",
"by_model", "budget"}``; each total is ``{"calls", "prompt_tokens", "completion_tokens",
"cost_usd", "unpriced_calls"}`` (``cost_usd`` sums only the calls whose price litellm
knows; ``unpriced_calls`` counts the others). ``budget`` is ``{"daily_usd", "daily_tokens",
"paused", "halted"}``: the limits (0: none), why background upkeep waits today (or null),
and the conversations whose automatic consolidation stopped, with why.

``--run-now`` is the user's "Run now": background upkeep goes on today past the budget,
and stopped conversations are consolidated again (forwarded to the running instance).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from memtray.core.base.home import Home
from memtray.core.cli.console import app_scope
from memtray.core.cli.console import out as _out
from memtray.core.log.usage import (
    KEEP_DAYS,
    Totals,
    UsageSummary,
    money,
    summarize,
    tokens,
    zone_of,
)

if TYPE_CHECKING:
    from memtray.core.app import App


def add_commands(subparsers: Any) -> None:
    p = subparsers.add_parser("usage", help="tokens and cost of the provider calls: chat and memory upkeep")
    p.add_argument("--days", type=_days, default=30, metavar="N",
                   help=f"the period to break down, in days ending today (1-{KEEP_DAYS}; default 30)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--run-now", action="store_true",
                   help="let background memory upkeep go on today past its budget, and retry stopped conversations")
    p.set_defaults(fn=cmd_usage)


def _days(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= KEEP_DAYS:
        raise argparse.ArgumentTypeError(f"must be 1 to {KEEP_DAYS} (the ledger keeps {KEEP_DAYS} days)")
    return value


def _row(label: str, t: Totals) -> str:
    return (f"{label:<22} {t.calls:>6} call(s)  {tokens(t.prompt_tokens):>8} in  "
            f"{tokens(t.completion_tokens):>8} out  {money(t)}")


def render(s: UsageSummary) -> str:
    lines = [_row("today", s.today), _row("this month", s.month), _row(f"last {s.days} day(s)", s.period)]
    lines += ["", f"by kind (last {s.days} day(s)):"]
    for group, label in (("chat", "chat (you asked)"), ("upkeep", "memory upkeep")):
        lines.append("  " + _row(label, s.by_group[group]))
        lines += ["    " + _row(k, t) for k, t in s.by_kind.items() if (k in ("chat", "recall", "search")) == (group == "chat")]
    lines += ["", f"by model (last {s.days} day(s)):"]
    lines += ["  " + _row(m, t) for m, t in sorted(s.by_model.items())] or ["  (no calls)"]
    return "\n".join(lines)


def budget(app: App) -> dict[str, Any]:
    guard = app.consolidation.upkeep
    return {"daily_usd": app.config.upkeep_daily_usd, "daily_tokens": app.config.upkeep_daily_tokens,
            "paused": guard.over(), "halted": dict(sorted(guard.halted.items()))}


def cmd_usage(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        zone = zone_of(app.config.timezone or app.clock.local_zone_name())

        def read() -> tuple[UsageSummary, dict[str, Any]]:  # on the worker, which folds new calls meanwhile
            if args.run_now:
                app.consolidation.upkeep.run_now()
            return summarize(app.store.state.usage, app.clock.now(), zone, args.days), budget(app)

        summary, limits = app.write(read)
        if args.run_now:
            app.run(app.consolidation.sweep())
    if args.json:
        _out(json.dumps({**summary.to_json(), "budget": limits}, ensure_ascii=False))
        return 0
    _out(render(summary))
    if limits["daily_usd"] or limits["daily_tokens"]:
        _out(f"\nbackground upkeep budget: {money_limit(limits)}"
             + (f"; paused today: {limits['paused']}" if limits["paused"] else ""))
    for session, why in limits["halted"].items():
        _out(f"automatic consolidation of {session!r} stopped: {why}")
    return 0


def money_limit(limits: dict[str, Any]) -> str:
    parts = ([f"${limits['daily_usd']:g} a day"] if limits["daily_usd"] else []) + (
        [f"{tokens(limits['daily_tokens'])} tokens a day"] if limits["daily_tokens"] else [])
    return " or ".join(parts)
