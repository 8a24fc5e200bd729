"""``memtray mcp``: serve memory to MCP clients; ``mcp remember/forget`` (the writes it runs);
``mcp servers/allow/deny`` (consent for the MCP servers memtray itself uses).

The server runs every tool as a memtray command through :func:`runner`: the same
:func:`~memtray.core.cli.main.main` a terminal runs, so a free data home is opened
for the one command and released, and a home held by the desktop app or daemon
gets the command forwarded (one writer). Commands run one at a time.
"""

from __future__ import annotations

import argparse
import os
import secrets
import threading
from collections.abc import Callable
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.cli.console import Console, app_scope, using
from memtray.core.cli.console import err as _err
from memtray.core.cli.console import out as _out


def runner(home: Home, entry: Callable[[list[str]], int]) -> Any:
    """A :data:`~memtray.core.mcp.server.Runner` for ``home`` over ``entry`` (the CLI's ``main``)."""
    from memtray.core.mcp.server import Ran

    lock = threading.Lock()

    def run(argv: list[str]) -> Ran:
        outs: list[str] = []
        errs: list[str] = []
        with lock, using(Console(outs.append, errs.append, tty=False)):
            try:
                code = entry(["--home", str(home.root), *argv])
            except SystemExit as exc:  # argparse refused the arguments
                code = int(exc.code or 2) if not isinstance(exc.code, str) else 2
            except Exception as exc:  # a bug: the client gets one line, the log the rest
                import logging

                logging.getLogger(__name__).exception("mcp command %s failed", argv[:2])
                code, errs = 1, [f"memtray: error: internal error ({type(exc).__name__}); see the log"]
        return Ran(code, "".join(outs), "".join(errs))

    return run


def cmd_mcp(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.cli.console import served_app

    if served_app() is not None:
        raise MemtrayError("`memtray mcp` talks to its client over stdin/stdout; it cannot run inside another instance")
    from memtray.core.mcp import server as mcpserver

    scope = None
    if args.scope is not None:
        from memtray.core.memory import scopes

        scope = scopes.typed(args.scope)  # a bad name is said before a client connects
    srv = mcpserver.build(runner(home, args.mcp_entry), read_only=args.read_only, undo=not args.read_only, scope=scope)
    if args.http is None:
        _err("memtray mcp: serving " + str(home.root) + " over stdio" + (" (read-only)" if args.read_only else "")
             + (f" (scope {scope} only)" if scope else ""))
        srv.run("stdio")
        return 0
    token = os.environ.get("MEMTRAY_MCP_TOKEN") or _token(home)
    from memtray.core.mcp import http as mcphttp

    _err(f"memtray mcp: serving {home.root} on http://127.0.0.1:{args.http}/mcp"
         + (" (read-only)" if args.read_only else ""))
    _err(f"  send the header  Authorization: Bearer {token}  (the token is in {home.state / 'mcp-token'})")
    mcphttp.serve(srv, port=args.http, token=token)
    return 0


def _token(home: Home) -> str:
    """The HTTP token, made once and kept private in state/mcp-token."""
    from memtray.core.base.fsutil import atomic_write

    path = home.state / "mcp-token"
    try:
        text = path.read_text(encoding="utf-8").strip()
        if len(text) >= 32:
            return text
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    atomic_write(path, (token + "\n").encode())
    return token


def cmd_remember(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.mcp import writes
    from memtray.core.memory import scopes
    from memtray.core.memory.dated import local_day

    with app_scope(home) as app:
        mem = app.memory
        raw = {"from": args.start, "until": args.until, "review_after": args.review_after}
        when = writes.read_time(raw, local_day(app.clock.now(), app.agent.zone()))  # before anything is written
        scope = None if args.scope is None else scopes.typed(args.scope)
        _out(app.worker.call(lambda: writes.remember(mem, " ".join(args.fact), args.section, args.client,
                                                     scope=scope, when=when)))
    return 0


def cmd_forget(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.mcp import writes
    from memtray.core.memory import scopes

    with app_scope(home) as app:
        mem = app.memory
        scope = None if args.scope is None else scopes.typed(args.scope)
        _out(app.worker.call(lambda: writes.forget(mem, " ".join(args.fact), args.reason or "", args.client,
                                                   scope=scope)))
    return 0


def cmd_servers(args: argparse.Namespace, home: Home) -> int:
    import json

    from memtray.core.mcp import servers

    specs = servers.load(home)
    rows = [{"name": s.name, "target": s.describe(), "allowed": s.allowed, "timeout": s.timeout} for s in specs]
    if args.json:
        _out(json.dumps(rows, ensure_ascii=False))
        return 0
    if not rows:
        _out(f"no MCP servers are listed (add [servers.NAME] tables to {servers.path(home)})")
    for r in rows:
        _out(f"{r['name']:<16} {'allowed' if r['allowed'] else 'not allowed':<12} {r['target']}")
    return 0


def cmd_allow(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.mcp import servers

    spec = servers.set_allowed(home, args.name, args.allowed)
    if args.allowed:
        _out(f"the agent may now use the tools of {spec.name!r} ({spec.describe()})")
    else:
        _out(f"the agent may no longer use the tools of {spec.name!r}")
    return 0


def add_commands(sub: Any, *, entry: Callable[[list[str]], int]) -> None:
    """Add ``mcp``; the server runs its tools through ``entry`` (the CLI's ``main``)."""
    m = sub.add_parser("mcp", help="serve memory to MCP clients (Claude Desktop, Cursor, VS Code)")
    m.add_argument("--read-only", action="store_true", help="offer no tool that changes memory")
    m.add_argument("--scope", metavar="NAME",
                   help="the client sees and writes this memory scope only ('global': the global memory only)")
    m.add_argument("--http", type=_port, metavar="PORT", nargs="?", const=8765, default=None,
                   help="streamable HTTP on 127.0.0.1:PORT (default 8765) with a token, instead of stdio")
    m.set_defaults(fn=cmd_mcp, mcp_entry=entry)
    ms = m.add_subparsers(dest="mcp_cmd", metavar="SUBCOMMAND")
    r = ms.add_parser("remember", help="add a fact as an MCP client (Source: mcp)")
    r.add_argument("--client", required=True, help="the client's name, recorded with the change")
    r.add_argument("--section")
    r.add_argument("--scope", metavar="NAME", help="write into this memory scope (default: global)")
    r.add_argument("--from", dest="start", metavar="YYYY-MM-DD", help="the fact holds from this day")
    r.add_argument("--until", metavar="YYYY-MM-DD", help="the fact holds until this day")
    r.add_argument("--review-after", metavar="YYYY-MM-DD", help="ask the user whether it still holds after this day")
    r.add_argument("fact", nargs="+")
    r.set_defaults(fn=cmd_remember)
    f = ms.add_parser("forget", help="remove a fact as an MCP client (Source: mcp)")
    f.add_argument("--client", required=True)
    f.add_argument("--reason", required=True)
    f.add_argument("--scope", metavar="NAME", help="only a fact of this memory scope")
    f.add_argument("fact", nargs="+")
    f.set_defaults(fn=cmd_forget)
    ls = ms.add_parser("servers", help="the MCP servers memtray may use (mcp.toml) and whether each is allowed")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_servers)
    al = ms.add_parser("allow", help="let the agent use the tools of MCP server NAME")
    al.add_argument("name")
    al.set_defaults(fn=cmd_allow, allowed=True)
    dn = ms.add_parser("deny", help="stop the agent from using the tools of MCP server NAME")
    dn.add_argument("name")
    dn.set_defaults(fn=cmd_allow, allowed=False)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError("a port is 1..65535")
    return port
