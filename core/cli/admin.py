"""Commands that look after the data home: ``purge`` and ``install-desktop``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from memtray.core.admin.desktop_entry import (
    DesktopIntegrationError,
    install,
    launch_command,
    uninstall,
)
from memtray.core.admin.purge import Matcher, PurgeError, preview, purge
from memtray.core.base.home import Home
from memtray.core.cli.console import Forward, app_scope, err, forward, out, served_app


def add_commands(sub: Any) -> None:
    add_install_desktop(sub)
    add_purge(sub)


def add_install_desktop(subparsers: Any) -> None:
    p = subparsers.add_parser("install-desktop", help="add memtray to the application menu (Linux, this user)")
    p.add_argument("--uninstall", action="store_true", help="remove the menu entry and icon again")
    p.set_defaults(fn=cmd_install_desktop)


def cmd_install_desktop(args: Any, home: Any) -> int:
    if sys.platform == "darwin" or os.name == "nt":
        raise DesktopIntegrationError(
            "install-desktop is for Linux desktops",
            hint="On macOS drag memtray.app to Applications; on Windows the installer adds the Start menu entry.",
        )
    if args.uninstall:
        removed = uninstall()
        out("removed " + ", ".join(map(str, removed)) if removed else "nothing to remove")
        return 0
    cmd = launch_command()
    paths = install(cmd=cmd)
    out(f"installed {paths.desktop}")
    out(f"installed {paths.icon}")
    out(f"it starts: {' '.join(cmd)}")
    return 0


def add_purge(sub: Any) -> None:
    p = sub.add_parser(
        "purge",
        help="remove a secret or a fact for good: from the log, every memory revision and the logs",
        description="Remove every occurrence of PATTERN from the event log, every memory revision, "
        "side files and logs, leaving a memory.purged tombstone (a salted hash and counts). "
        "The one exception to append-only; it cannot be undone.",
    )
    p.add_argument("pattern", help="the exact text to remove (case-sensitive)")
    p.add_argument("--regex", action="store_true", help="PATTERN is a Python regular expression")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="only say what would be purged")
    p.set_defaults(fn=cmd_purge)


def cmd_purge(args: argparse.Namespace, home: Home) -> int:
    m = Matcher(args.pattern, regex=args.regex)
    served = served_app() is not None
    plan, traces = preview(home, m)
    other = {k: v for k, v in traces.items() if not k.startswith("events/") or k.endswith((".torn", ".damaged"))}
    out(f"found {plan.occurrences} occurrence(s) in {plan.events} event(s) "
             f"({plan.revisions} memory revision(s)); files holding it: {len(traces)}")
    if not traces and not plan.events:
        out("nothing to purge")
        return 0
    for name, count in sorted(other.items()):
        out(f"  {name}: {count}")
    if args.dry_run:
        return 0
    if not args.yes:
        if served:
            raise PurgeError("purging through the running memtray needs --yes (it cannot ask from here)")
        out("This rewrites the event log and every memory revision. It cannot be undone.")
        try:
            answer = input('Type "purge" to confirm: ')
        except EOFError:
            answer = ""
        if answer.strip().lower() != "purge":
            out("not purged")
            return 1
    try:
        with app_scope(home) as app:
            rep = purge(app, m)
    except Forward:
        argv = ["purge", args.pattern, "--yes"] + (["--regex"] if args.regex else [])
        return forward(home, argv)
    out(f"purged {rep.occurrences} occurrence(s) from {rep.events} event(s) and "
             f"{rep.revisions} memory revision(s); {rep.files} file(s) scrubbed or removed; state/ cleared")
    out(f"tombstone: event {rep.tombstone_seq} (memory.purged, salted sha256 {rep.digest[:16]}…)")
    for ref in rep.dropped_refs:
        out(f"  note: {ref} could not be made again from the log and is gone")
    if rep.left:
        err("memtray: error: the pattern is still in files memtray does not own; edit them yourself:")
        for name, count in sorted(rep.left.items()):
            err(f"  {name}: {count}")
        return 1
    out(f"verified: no trace left in {home.root}")
    return 0
