"""``memtray history search`` and ``memtray history embed``: the command-line face of
:mod:`memtray.core.search`.

``search --json`` prints one JSON array of hits, each
``{"kind", "seq", "session", "role", "ts", "snippet", "score", "mode",
"keyword_score", "semantic_score"}`` (see :class:`~memtray.core.search.text.Hit`);
without it, one ``[time] (session/role) snippet`` line per hit, or ``no matches``.
Notes on how the search ran (no embedding model, embeddings still being made) go
to stderr, so the JSON on stdout stays one parseable array.

``embed`` runs the embedding backfill in the foreground with progress on stderr
(Ctrl-C stops it; what was embedded is kept and the next run resumes).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from memtray.core.base.home import Home
from memtray.core.cli import scopes as cli_scopes
from memtray.core.cli.console import app_scope, err
from memtray.core.cli.console import out as _out
from memtray.core.search.index import KINDS
from memtray.core.search.service import MODES, format_hits
from memtray.core.search.text import SearchError


def add_commands(subparsers: Any) -> None:
    """Add ``history search`` and ``history embed`` to the top-level ``memtray`` subparsers."""
    h = subparsers.add_parser("history", help="search past conversations and the history diary")
    hs = h.add_subparsers(dest="history_cmd", metavar="SUBCOMMAND", required=True)
    add_search_command(hs)
    e = hs.add_parser("embed", help="make the embeddings for search by meaning now, with progress")
    e.add_argument("--json", action="store_true", help="print the final status as JSON")
    e.add_argument("--status", action="store_true", help="only say how far embedding is")
    e.set_defaults(fn=cmd_history_embed)


def add_search_command(subparsers: Any) -> None:
    """Add ``search`` to an existing ``history`` group's subparsers."""
    s = subparsers.add_parser("search", help="search messages, the diary and memory edits")
    s.add_argument("query", nargs="+", help="words (keyword mode: AND-ed; word* matches a prefix)")
    s.add_argument("--json", action="store_true", help="print a JSON array of hits")
    s.add_argument("--limit", type=_positive_int, default=20, metavar="N")
    s.add_argument("--regex", action="store_true", help="QUERY is a Python regular expression")
    s.add_argument("--session", metavar="KEY", help="only this session")
    s.add_argument("--scope", metavar="NAME", help="only the conversations of this memory scope")
    s.add_argument("--kind", choices=KINDS, help="only diary entries, memory edits or messages")
    s.add_argument("--no-diary", action="store_true",
                   help="no diary entries (what an MCP client limited to one scope searches: the diary spans every scope)")
    s.add_argument("--mode", choices=MODES, default="hybrid",
                   help="keyword (words), semantic (meaning; needs embedding_model or the offline model) or hybrid "
                        "(both, fused; keyword alone without an embedding model). Default: hybrid")
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
        scope = cli_scopes.name_of(args, app)
        svc = app.searcher()
        result = app.run(svc.asearch(query, mode=args.mode, limit=args.limit, kind=args.kind,
                                     session=args.session, regex=args.regex, scope=scope, diary=not args.no_diary))
        for note in result.notes:
            err(f"memtray: note: {note}")
        if args.json:
            _out(json.dumps([h.to_json() for h in result.hits], ensure_ascii=False))
        else:
            _out(format_hits(result.hits))
    return 0


def cmd_history_embed(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        svc = app.searcher()
        if not args.status:
            if not svc.embedder.available:
                from memtray.core.search.embed import SETUP_HINT

                raise SearchError(svc.embedder.keyword_only_reason or "no embedding model is configured",
                                  hint=SETUP_HINT)

            def progress(done: int, total: int) -> None:
                if not args.json:
                    err(f"embedded {done} of {total}")

            try:
                app.run(svc.backfill(progress=progress))
            except KeyboardInterrupt:
                err("memtray: stopped; what was embedded is kept (run it again to go on)")
                return 130
        status = svc.embed_status()
        if args.json:
            _out(json.dumps(status.to_json(), ensure_ascii=False))
        elif not status.model:
            _out(f"{svc.embedder.keyword_only_reason} ({status.total} entries)")
        else:
            _out(f"{status.model}: {status.done} of {status.total} entries embedded"
                 + (f" (last error: {status.error})" if status.error else ""))
    return 0
