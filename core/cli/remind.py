"""CLI commands for reminders (names and flags are a contract).

``memtray remind add TEXT (--at DATETIME | --every DURATION | --cron EXPR) [--tz ZONE] [--agent]``,
``memtray remind list [--json] [--all]``, ``memtray remind snooze ID [--for WHEN]`` and
``memtray remind cancel ID``. The ``remind`` commands run through ``cli.app_scope``, so
while the desktop or the daemon holds the data home they are forwarded to it
and act on its live scheduler. One-shot commands never deliver reminders;
only the daemon and the desktop start delivery.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from memtray.core.base.home import Home
from memtray.core.cli.console import app_scope
from memtray.core.cli.console import out as _out


def cmd_remind_add(args: argparse.Namespace, home: Home) -> int:
    text = " ".join(args.text)
    with app_scope(home) as app:
        svc = app.reminders
        r = app.worker.call(
            lambda: svc.schedule(
                text, at=args.at, every=args.every, cron=args.cron, tz=args.tz,
                mode="agent" if args.agent else "notify",
            )
        )
        if args.json:
            _out(json.dumps(svc.as_json(r), ensure_ascii=False))
        else:
            info = svc.as_json(r)
            _out(f"scheduled {r.id}: {svc.describe(r)}; next {info['next'] or 'never'}")
    return 0


def cmd_remind_list(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        svc = app.reminders
        rows = [svc.as_json(r) for r in svc.reminders(include_inactive=args.all)]
        if args.json:
            _out(json.dumps(rows, ensure_ascii=False))
            return 0
        if not rows:
            _out("no reminders" if args.all else "no active reminders")
            return 0
        for row, r in zip(rows, svc.reminders(include_inactive=args.all), strict=True):
            flags = [] if row["status"] == "active" else [row["status"]]
            if row["mode"] == "agent":
                flags.append("agent")
            extra = f" [{', '.join(flags)}]" if flags else ""
            nxt = row["next"] or "-"
            _out(f"{r.id}  next {nxt:<25}  {svc.describe(r)}{extra}  {' '.join(r.text.split())}")
    return 0


def cmd_remind_cancel(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        svc = app.reminders
        r = app.worker.call(lambda: svc.cancel(args.id))
        _out(f"cancelled {r.id}: {' '.join(r.text.split())}")
    return 0


def cmd_remind_snooze(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        svc = app.reminders
        r = app.worker.call(lambda: svc.snooze(args.id, args.delay))
        info = svc.as_json(r)
        if args.json:
            _out(json.dumps(info, ensure_ascii=False))
        else:
            _out(f"snoozed: {r.id} reminds you again {info['next'] or 'never'}: {' '.join(r.text.split())}")
    return 0


def add_commands(sub: Any) -> None:
    """Add ``remind`` to the top-level subparsers of ``cli.build_parser``."""
    r = sub.add_parser("remind", help="schedule, list and cancel reminders")
    rs = r.add_subparsers(dest="remind_cmd", metavar="SUBCOMMAND", required=True)

    a = rs.add_parser("add", help="schedule a reminder")
    a.add_argument("text", nargs="+", help="what to remind you of")
    when = a.add_mutually_exclusive_group(required=True)
    when.add_argument(
        "--at", metavar="DATETIME",
        help="once: 'in 2 minutes', 'tomorrow at noon', 'friday 9am', HH:MM, or ISO 8601 (no offset = in --tz)",
    )
    when.add_argument("--every", metavar="REPEAT",
                      help="repeat: 30m, 2h, 1d, 1h30m (minimum 1m), or 'weekday at 9', 'monday and thursday at 18:00'")
    when.add_argument("--cron", metavar="EXPR", help="cron: 'MIN HOUR DOM MON DOW', e.g. '30 9 * * mon-fri'")
    a.add_argument("--tz", metavar="ZONE", help="IANA time zone (default: config timezone, else the system's)")
    a.add_argument("--agent", action="store_true", help="run the assistant then; its reply is the notification")
    a.add_argument("--json", action="store_true", help="print the new reminder as JSON")
    a.set_defaults(fn=cmd_remind_add)

    ls = rs.add_parser("list", help="list reminders")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--all", action="store_true", help="include fired and cancelled ones")
    ls.set_defaults(fn=cmd_remind_list)

    sn = rs.add_parser("snooze", help="remind again later (a one-shot that has not fired moves)")
    sn.add_argument("id", help="the reminder id (or a unique prefix of it)")
    sn.add_argument("--for", dest="delay", metavar="WHEN", default="10m",
                    help="a delay (10m, '1 hour') or a time ('tomorrow at 9'); default 10m")
    sn.add_argument("--json", action="store_true", help="print the new reminder as JSON")
    sn.set_defaults(fn=cmd_remind_snooze)

    c = rs.add_parser("cancel", help="cancel a reminder")
    c.add_argument("id", help="the reminder id (or a unique prefix of it)")
    c.set_defaults(fn=cmd_remind_cancel)

