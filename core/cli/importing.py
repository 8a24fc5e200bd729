"""``memtray import nanobot|chatgpt``: bring another assistant's memory and conversations in.

Runs against the App (or is forwarded to the running instance, so the import is
written by the one writer). ``--dry-run`` reads everything and prints what would
be added; ``--json`` prints the summary as one object
``{"items", "already_imported", "messages", "facts", "history_entries", "consolidated", "notes", "dry_run"}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.cli.console import app_scope, con
from memtray.core.cli.console import out as _out


def _run(args: argparse.Namespace, home: Home, source: str, path: Path, items: Any) -> int:
    from memtray.core.base.clock import IdGenerator
    from memtray.core.log.door import Quarantine
    from memtray.core.migrate.common import Importer

    with app_scope(home) as app:
        memory = app.memory
        if app.store.readonly:
            raise MemtrayError("the data home is open read-only; nothing can be imported", hint="Run `memtray doctor`.")
        quiet = args.json or args.dry_run
        cons = app.consolidation
        consolidate = None
        if args.consolidate and not app.config.model:
            raise MemtrayError("--consolidate needs a model to consolidate with, and none is configured",
                               hint="Set one (memtray config set model ...), or import without --consolidate.")
        if args.consolidate and not args.dry_run and cons is not None:
            def consolidate(session: str) -> None:
                app.run(cons.archive(session))
        imp = Importer(app.store, memory, source, str(path), dry_run=args.dry_run, new_id=IdGenerator(app.clock).new,
                       quarantine=Quarantine(home.root, app.clock),
                       progress=None if quiet else (lambda t: con().error(f"  {t}")), call=app.worker.call,
                       consolidate=consolidate)
        summary = imp.run(items)
    if args.json:
        _out(json.dumps(summary.to_json() | {"dry_run": bool(args.dry_run)}, ensure_ascii=False))
        return 0
    if args.dry_run:
        _out(f"dry run: nothing was written. Importing {path} would add:")
        for line in summary.lines:
            _out(f"  {line}")
    s = summary
    verb = "would import" if args.dry_run else "imported"
    _out(f"{verb} {s.items} items: {s.messages} messages, {s.facts} facts, {s.entries} history entries"
         + (f"; {s.skipped_items} already imported" if s.skipped_items else "")
         + (f"; {s.consolidated} sessions consolidated into memory" if s.consolidated else ""))
    for note in s.notes:
        _out(f"  note: {note}")
    return 0


def cmd_import_nanobot(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.migrate import nanobot

    ws = Path(args.workspace).expanduser() if args.workspace else nanobot.DEFAULT_WORKSPACE.expanduser()
    sessions = Path(args.sessions).expanduser() if args.sessions else None
    nanobot.check(ws)  # before opening the App: a wrong path costs nothing
    return _run(args, home, "nanobot", ws, nanobot.items(ws, sessions))


def cmd_import_chatgpt(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.migrate import chatgpt

    path = Path(args.export).expanduser()
    return _run(args, home, "chatgpt", path, chatgpt.items(path))


def add_commands(sub: Any) -> None:
    i = sub.add_parser("import", help="import memory and conversations from nanobot or ChatGPT")
    iss = i.add_subparsers(dest="import_cmd", metavar="SOURCE", required=True)
    n = iss.add_parser("nanobot", help="a nanobot workspace: MEMORY.md, the history diary, session files")
    n.add_argument("workspace", nargs="?", help="default: ~/.nanobot/workspace")
    n.add_argument("--sessions", metavar="DIR", help="where its session files are, if not found next to it")
    c = iss.add_parser("chatgpt", help="a ChatGPT data export (the .zip or its conversations.json)")
    c.add_argument("export", help="EXPORT.zip or conversations.json")
    for p in (n, c):
        p.add_argument("--dry-run", action="store_true", help="print what would be added; write nothing")
        p.add_argument("--json", action="store_true", help="print the summary as JSON")
        p.add_argument("--consolidate", action="store_true",
                       help="also consolidate each imported conversation into memory (uses the model)")
    n.set_defaults(fn=cmd_import_nanobot)
    c.set_defaults(fn=cmd_import_chatgpt)
