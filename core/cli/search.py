"""``memtray history search``: the command-line face of :mod:`search`.

``--json`` prints one JSON array of hits, each
``{"kind", "seq", "session", "role", "ts", "snippet", "score"}`` (see
:class:`search.Hit`); without it, one ``[time] (session/role) snippet`` line per
hit, or ``no matches``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from memtray.core.base.home import Home
from memtray.core.cli.console import app_scope
from memtray.core.cli.console import out as _out
from memtray.core.search.index import KINDS, SearchError, SearchService, format_hits


def add_commands(subparsers: Any) -> None:
    """Add ``history search`` to the top-level ``memtray`` subparsers."""
    h = subparsers.add_parser("history", help="search past conversations and the history diary")
    hs = h.add_subparsers(dest="history_cmd", metavar="SUBCOMMAND", required=True)
    add_search_command(hs)


def add_search_command(subparsers: Any) -> None:
    """Add ``search`` to an existing ``history`` group's subparsers."""
    s = subparsers.add_parser("search", help="full-text search of messages and the diary")
    s.add_argument("query", nargs="+", help="words (AND-ed; word* matches a prefix)")
    s.add_argument("--json", action="store_true", help="print a JSON array of hits")
    s.add_argument("--limit", type=_positive_int, default=20, metavar="N")
    s.add_argument("--regex", action="store_true", help="QUERY is a Python regular expression")
    s.add_argument("--session", metavar="KEY", help="only this session")
    s.add_argument("--kind", choices=KINDS, help="only diary entries or only messages")
    s.set_defaults(fn=cmd_history_search)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def cmd_history_search(args: argparse.Namespace, home: Home) -> int:

    query = " ".join(args.query)
    with app_scope(home) as app:
        svc: SearchService | None = app.services.get("search")
        if svc is None:
            raise SearchError(
                "history search is unavailable", hint=f"See the log in {home.logs} for why."
            )
        hits = svc.search(query, limit=args.limit, kind=args.kind, session=args.session, regex=args.regex)
        if args.json:
            _out(json.dumps([h.to_json() for h in hits], ensure_ascii=False))
        else:
            _out(format_hits(hits))
    return 0
