"""Facts with a time from the command line: ``memory dated``, ``memory review-due``,
``memory check ID --yes|--no-longer|--edit TEXT`` and ``memory expire``.

The day is the user's (the injected clock in the configured zone); every answer is a
revision (see :mod:`memtray.core.memory.dated`). Names and ``--json`` shapes are in
docs/CLI.md.
"""

from __future__ import annotations

import argparse
from datetime import date
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.cli import scopes as cli_scopes
from memtray.core.cli.console import app_scope, listing
from memtray.core.cli.console import dumps as _dumps
from memtray.core.cli.console import out as _out
from memtray.core.memory import scopes
from memtray.core.memory.dated import local_day
from memtray.core.memory.facts import id_key


def _today(app: Any) -> date:
    return local_day(app.clock.now(), app.agent.zone())


def _line(f: dict[str, Any]) -> str:
    t = f["time"]
    when = "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in t.items())
    state = f["status"] or "always"
    due = "  ← due for a check" if f["due"] else ""
    scope = f"{f['scope']:<12} " if "scope" in f else ""
    return f"{f['id']:<6} {scope}{f['words']}\n       {state}: {when}{due}"


def cmd_dated(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        scope = cli_scopes.name_of(args, app)
        rows = app.memory.dated(_today(app))
        if scope is not None or scopes.known(app.store.state):  # a home without scopes: the shape as it was
            where = scopes.scope_map(app.memory.ledger(), app.store.state.memory)
            rows = [{**r, "scope": where.get(r["id"], scopes.GLOBAL)} for r in rows]
            rows = [r for r in rows if scope is None or r["scope"] == scope]
        empty = "no fact in memory has a time" if scope is None else f"no fact of the scope {scope} has a time"
        return listing(rows, args.json, empty, _line)


def cmd_review_due(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        rows = app.memory.review_due(_today(app))
        return listing(rows, args.json, "no fact is due for a check",
                       lambda f: f"{f['id']:<6} {f['question']}\n       answer: memtray memory check {f['id']} "
                                 "--yes | --no-longer | --edit TEXT")


def cmd_check(args: argparse.Namespace, home: Home) -> int:
    answer = "yes" if args.yes else "no-longer" if args.no_longer else "edit"
    with app_scope(home) as app:
        today = _today(app)
        fid = id_key(args.id) or args.id.strip()
        before = app.memory.ledger().get(fid)
        rev = app.memory.check_fact(args.id, answer, today, " ".join(args.edit) if args.edit else None)
        after = app.memory.ledger().get(fid)
        # a check always writes a new check date, unless the fact was checked today already
        already = answer == "yes" and before is not None and after is not None and before.text == after.text
        row = {"id": fid, "answer": answer, "revision": rev.to_json(),
               "before": before.text if before else None, "after": after.text if after else None,
               "already_checked": already}
        if args.json:
            _out(_dumps(row))
            return 0
        if already:
            _out(f"already checked today {row['id']}: {row['before']}; no new revision")
            return 0
        did = {"yes": "checked", "no-longer": "removed (no longer true)", "edit": "edited"}[answer]
        _out(f"{did} {row['id']}: {row['before']}" + (f" → {row['after']}" if row["after"] else "")
             + f"; new revision {rev.short}")
    return 0


def cmd_expire(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        gone = app.memory.expire_ended(_today(app))
        if args.json:
            _out(_dumps(gone or {"rev": None, "removed": []}))
            return 0
        if gone is None:
            _out("no fact is past its end")
            return 0
        for f in gone["removed"]:
            _out(f"removed {f['id']}: {f['text']}" + (f"; {f['reason']}" if f["reason"] else ""))
        _out(f"new revision {gone['rev'][:8]} (undo: memtray memory undo {gone['rev'][:8]})")
    return 0


def _memory_subcommands(sub: Any) -> Any:
    parser = sub.choices["memory"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise MemtrayError("the memory command has no subcommands")  # pragma: no cover


def add_commands(sub: Any) -> None:
    """Under ``memory``; call after :func:`memtray.core.cli.memory.add_commands`."""
    ms = _memory_subcommands(sub)
    d = ms.add_parser("dated", help="the facts with a time: upcoming, current or past today, and their check dates")
    d.add_argument("--json", action="store_true")
    d.add_argument("--scope", metavar="NAME", help=cli_scopes.SCOPE_HELP)
    d.set_defaults(fn=cmd_dated)
    r = ms.add_parser("review-due", help="the facts whose check date has come (answer with `memory check`)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(fn=cmd_review_due)
    c = ms.add_parser("check", help="answer 'still true?' for one fact (a new revision)")
    c.add_argument("id", metavar="ID")
    how = c.add_mutually_exclusive_group(required=True)
    how.add_argument("--yes", action="store_true", help="still true: the check is recorded, the next one moved")
    how.add_argument("--no-longer", action="store_true", help="no longer true: the fact is removed with that reason")
    how.add_argument("--edit", nargs="+", metavar="TEXT", help="true in other words: the fact reworded, checked")
    c.add_argument("--json", action="store_true")
    c.set_defaults(fn=cmd_check)
    e = ms.add_parser("expire", help="remove the facts past their end now (one revision, undoable)")
    e.add_argument("--json", action="store_true")
    e.set_defaults(fn=cmd_expire)
