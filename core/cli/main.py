"""The ``memtray`` command line. Command names and flags are a contract: keep them.

Every command honours ``MEMTRAY_HOME``. Failures print one line
``memtray: error: <reason>`` (plus a hint line) on stderr and exit non-zero.
``memtray`` with no arguments starts the desktop app when PySide6 is present.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memtray.core import __version__
from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.cli.console import (
    Console,
    Forward,
    app_scope,
    con,
    forward,
    forward_if_served,
    served_app,
    serving,
)
from memtray.core.cli.console import err as _err
from memtray.core.cli.console import out as _out
from memtray.core.cli.frontend import Frontend, frontend, set_frontend

if TYPE_CHECKING:
    from memtray.core.app import App
    from memtray.core.log.events import Record

Handler = Callable[[argparse.Namespace, Home], int]




# --- conversation ------------------------------------------------------------------------


def cmd_ask(args: argparse.Namespace, home: Home) -> int:
    text = " ".join(args.text)
    if text == "-" and not args.literal:
        text = sys.stdin.read()
        args.text, args.literal = [text], True  # read once: a retry or a forward keeps it
    attach = [os.path.abspath(f) for f in args.attach or []]
    if attach:
        from memtray.core.log.attachments import from_file

        files = [from_file(f) for f in attach]  # a bad file is said before anything is logged
        for f in files:
            if f.note:
                con().error(f"note: {f.note}")
    else:
        files = []
    if not text.strip():
        raise MemtrayError("nothing to ask", hint='Usage: memtray ask "your question"')
    c = con()
    try:
        with app_scope(home, warm=True) as app:
            _offline_notice(app)
            _choose_scope(app, args.session, args.scope)
            streaming = c.tty
            result = app.run(
                app.agent.turn(args.session, text, on_delta=c.write if streaming else None, stream=streaming,
                               attachments=files)
            )
            if streaming:
                _out()
            else:
                _out(result.reply)
            _recalled_note(result.records)
    except Forward:
        # what the instance runs: the text itself, whatever this process read it from
        raise Forward(["ask", "--session", args.session, *(["--scope", args.scope] if args.scope is not None else []), "--literal",
                       *[x for f in attach for x in ("--attach", f)], "--", text], model=True) from None
    return 0


def _choose_scope(app: Any, session: str, scope: str | None) -> None:
    """``--scope``: the conversation belongs to that memory scope from now on (remembered)."""
    if scope is not None:
        from memtray.core.memory import scopes

        name = scopes.typed(scope)  # a bad or empty name is said before anything is logged
        app.worker.call(lambda: scopes.choose(app.store, session, name))


def _recalled_note(records: Sequence[Any]) -> None:
    """One stderr line when the reply was given past messages (recall); stdout stays the reply."""
    from memtray.core.log.events import Message

    seqs = next((m.recalled for r in reversed(records)
                 if r.type == Message.TYPE and (m := Message.of(r)).role == "assistant"), None)
    if seqs:
        n = len(seqs)
        _err(f"recalled: {n} past message{'s' if n != 1 else ''} (seq {', '.join(str(s) for s in seqs)})")


def cmd_chat(args: argparse.Namespace, home: Home) -> int:
    """Terminal chat. With a running instance, each line is forwarded as `ask`."""
    from memtray.core.base.errors import LLMError

    if served_app() is not None:
        raise MemtrayError("`memtray chat` is interactive; it cannot run inside another instance")
    try:
        with app_scope(home, warm=True) as app:
            _offline_notice(app)
            _choose_scope(app, args.session, args.scope)

            def turn(line: str) -> None:
                con().write("memtray> ")
                try:
                    app.run(app.agent.turn(args.session, line, on_delta=con().write))
                    _out()
                except LLMError as exc:
                    _out()
                    _err(f"memtray: error: {exc}")
                    if exc.hint:
                        _err(f"  {exc.hint}")

            return _chat_loop(args.session, turn, lambda: _new_session(app, args.session))
    except Forward:
        # each line goes to the instance; if it has left meanwhile (idle, quit), the line
        # starts a new one or runs here, as `memtray ask` would
        def remote_turn(line: str) -> None:
            ask = argparse.Namespace(session=args.session, text=[line], literal=True, scope=args.scope, attach=None)
            forward(home, ["ask", "--session", args.session, *(["--scope", args.scope] if args.scope is not None else []),
                           "--literal", "--", line],
                    run_here=lambda: cmd_ask(ask, home), model=True)

        def remote_new() -> None:
            ns = argparse.Namespace(session=args.session)
            if forward(home, ["new", "--session", args.session], run_here=lambda: cmd_new(ns, home)) != 0:
                raise MemtrayError("the session was not cleared")

        return _chat_loop(args.session, remote_turn, remote_new)


def _chat_loop(session: str, turn: Callable[[str], None], new: Callable[[], None]) -> int:
    _out(f"memtray chat — session {session!r}. /new starts over, /quit leaves.")
    while True:
        try:
            line = input("you> ")
        except EOFError:
            _out()
            return 0
        cmd = line.strip()
        if not cmd:
            continue
        if cmd in ("/quit", "/exit"):
            return 0
        if cmd == "/new":
            try:
                new()
                _out("(new session started)")
            except MemtrayError as exc:
                _err(f"memtray: error: {exc}")
            continue
        turn(line)


def _offline_notice(app: App) -> None:
    """Say once that the small offline model answers because no provider is configured."""
    from memtray.core.llm import localmodel

    if not app.config.model and localmodel.is_local(app.llm.model):
        notice = localmodel.take_notice(app.home.state)
        if notice:
            _err(notice)


def _new_session(app: App, session: str) -> None:
    from memtray.core.agent.reset import new_session

    app.run(new_session(app.agent, app.consolidation, session))  # raises (and keeps the session) if archiving fails


def cmd_new(args: argparse.Namespace, home: Home) -> int:
    with app_scope(home) as app:
        _new_session(app, args.session)
        _out(f"new session started for {args.session!r}")
    return 0


# --- events ------------------------------------------------------------------------------


def cmd_events_tail(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.log.eventlog import EventLog

    elog = EventLog.open(home.events, readonly=True)
    for rec in elog.tail(args.n):
        if args.json:
            _out(json.dumps(rec.to_json(), ensure_ascii=False))
        else:
            _out(_summarise(rec))
    return 0


def _summarise(rec: Record) -> str:
    from memtray.core.log.events import Message

    if rec.type == Message.TYPE:
        m = Message.of(rec)
        body = m.content or ""
        if m.tool_calls:
            body = "calls " + ", ".join(tc["function"]["name"] for tc in m.tool_calls)
        what = f"{m.role}: {body}"
    else:  # any type, one this version does not know included: its members as they are
        what = ", ".join(f"{k}={str(v)[:40]}" for k, v in rec.data.items() if k not in ("memory", "diff"))
    what = " ".join(what.split())
    if len(what) > 100:
        what = what[:99] + "…"
    return f"{rec.seq:>6}  {rec.ts}  {rec.type:<24} {rec.session or '-':<10} {what}"


def cmd_events_verify(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.log.segments import verify

    count, damages = verify(home.events)
    if not damages:
        _out(f"ok: {count} records checked, no damage")
        return 0
    _out(f"DAMAGED: {count} good records, {len(damages)} damaged:")
    for d in damages:
        _out(f"  - {d.describe()}")
    _out("Run `memtray doctor` for what to do.")
    return 1


# --- config and keys ---------------------------------------------------------------------


def cmd_config_get(args: argparse.Namespace, home: Home) -> int:
    from dataclasses import asdict

    from memtray.core.base import config as cfgmod

    cfg = asdict(cfgmod.load(home))
    if args.key:
        if args.key not in cfg:
            raise MemtrayError(f"unknown setting {args.key!r}", hint=f"Known settings: {', '.join(cfg)}")
        value = cfg[args.key]
        _out(json.dumps(value) if not isinstance(value, str) else value)
        return 0
    for k, v in cfg.items():
        _out(f"{k} = {json.dumps(v)}")
    return 0


def cmd_config_set(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.base import config as cfgmod

    cfgmod.set_value(home, args.key, args.value)
    _out(f"{args.key} = {json.dumps(getattr(cfgmod.load(home, env=False), args.key))}")
    app = served_app()
    if app is not None:  # forwarded: the running instance applies it now
        app.refresh_settings()
    if args.key in cfgmod.RESTART_NEEDED:
        _err(f"note: {args.key} takes effect when memtray is restarted")
    return 0


def cmd_key_set(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.base import keys

    if sys.stdin.isatty():
        secret = getpass.getpass(f"API key for {args.provider} (input hidden): ")
    else:
        secret = sys.stdin.readline()
    keys.set_key(args.provider, secret)
    _out(f"stored the {args.provider} key in the keyring ({keys.backend_name()})")
    return 0


def cmd_key_delete(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.base import keys

    if keys.delete_key(args.provider):
        _out(f"deleted the {args.provider} key from the keyring")
    else:
        _out(f"no {args.provider} key was stored")
    return 0


# --- doctor ------------------------------------------------------------------------------


def cmd_doctor(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.admin.doctor import run_doctor

    return run_doctor(home, repair=args.repair, assume_yes=args.yes, out=_out)


# --- desktop -----------------------------------------------------------------------------


def cmd_desktop(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.base.holder import set_role

    fe = frontend()
    if fe is None:
        raise MemtrayError(
            "the desktop app is not available (no front end is installed)",
            hint="Install PySide6 (pip install memtray installs it), or use `memtray chat`.",
        )
    set_role("memtray (the desktop app)", serves=True)
    return int(fe.run(home, list(args.argv), serve))


# --- parser ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memtray", description="A tray assistant that remembers you.")
    p.add_argument("--version", action="version", version=f"memtray {__version__}")
    p.add_argument("--home", help="data home (default: $MEMTRAY_HOME or the platform data dir)")
    p.add_argument("--no-daemon", action="store_true",
                   help="never start the background instance that keeps the model warm")
    p.set_defaults(fn=None, argv=[])  # no command: the desktop (each command sets its fn)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    a = sub.add_parser("ask", help="one turn: print the reply")
    a.add_argument("--session", default="cli")
    a.add_argument("--scope", metavar="NAME",
                   help="the memory scope of the conversation (remembered for the session; 'global' again: none)")
    a.add_argument("--attach", action="append", metavar="FILE",
                   help="attach an image (for a model that reads images), a PDF or a text file; repeatable")
    a.add_argument("--literal", action="store_true", help=argparse.SUPPRESS)  # "-" is the text itself
    a.add_argument("text", nargs="+", help='the message ("-" reads stdin)')
    a.set_defaults(fn=cmd_ask)

    c = sub.add_parser("chat", help="terminal chat (/new, /quit)")
    c.add_argument("--session", default="cli")
    c.add_argument("--scope", metavar="NAME",
                   help="the memory scope of the conversation (remembered for the session; 'global' again: none)")
    c.set_defaults(fn=cmd_chat)

    n = sub.add_parser("new", help="archive the session and start a fresh one")
    n.add_argument("--session", default="cli")
    n.set_defaults(fn=cmd_new)

    ev = sub.add_parser("events", help="inspect the event log")
    evs = ev.add_subparsers(dest="events_cmd", metavar="SUBCOMMAND", required=True)
    t = evs.add_parser("tail", help="the last events")
    t.add_argument("-n", type=int, default=20)
    t.add_argument("--json", action="store_true")
    t.set_defaults(fn=cmd_events_tail)
    v = evs.add_parser("verify", help="check every record's checksum and sequence")
    v.set_defaults(fn=cmd_events_verify)

    d = sub.add_parser("doctor", help="check the data home and explain what it finds")
    d.add_argument("--repair", action="store_true", help="fix what can be fixed (asks first)")
    d.add_argument("--yes", action="store_true", help="with --repair: do not ask")
    d.set_defaults(fn=cmd_doctor)

    cf = sub.add_parser("config", help="read or change settings")
    cfs = cf.add_subparsers(dest="config_cmd", metavar="SUBCOMMAND", required=True)
    g = cfs.add_parser("get")
    g.add_argument("key", nargs="?")
    g.set_defaults(fn=cmd_config_get)
    s = cfs.add_parser("set")
    s.add_argument("key")
    s.add_argument("value")
    s.set_defaults(fn=cmd_config_set)

    k = sub.add_parser("key", help="store API keys in the OS keyring")
    ks = k.add_subparsers(dest="key_cmd", metavar="SUBCOMMAND", required=True)
    kset = ks.add_parser("set", help="store a key (read without echo)")
    kset.add_argument("provider")
    kset.set_defaults(fn=cmd_key_set)
    kdel = ks.add_parser("delete", help="remove a stored key")
    kdel.add_argument("provider")
    kdel.set_defaults(fn=cmd_key_delete)

    # Feature modules add their own commands (imported here, not at module import,
    # so `memtray --version` stays fast).
    from memtray.core.cli import admin as cli_admin
    from memtray.core.cli import audit as cli_audit
    from memtray.core.cli import chats as cli_chats
    from memtray.core.cli import daemon as cli_daemon
    from memtray.core.cli import dated as cli_dated
    from memtray.core.cli import importing as cli_importing
    from memtray.core.cli import mcp as cli_mcp
    from memtray.core.cli import memory as cli_memory
    from memtray.core.cli import model as cli_model
    from memtray.core.cli import remind as cli_remind
    from memtray.core.cli import search as cli_search
    from memtray.core.cli import sync as cli_sync
    from memtray.core.cli import usage as cli_usage

    cli_memory.add_commands(sub)
    cli_audit.add_commands(sub)  # after cli_memory: adds memory rebuild/compare/adopt
    cli_dated.add_commands(sub)  # after cli_memory: adds memory dated/review-due/check/expire
    cli_search.add_commands(sub)
    cli_remind.add_commands(sub)
    cli_chats.add_commands(sub)
    cli_admin.add_commands(sub)
    cli_daemon.add_commands(sub, serve)
    cli_mcp.add_commands(sub, entry=main)
    cli_importing.add_commands(sub)
    cli_sync.add_commands(sub)
    cli_model.add_commands(sub)
    cli_usage.add_commands(sub)
    if frontend() is not None:  # desktop not installed: toggle/show/quit are unavailable
        from memtray.core.cli import instance as cli_instance

        cli_instance.add_commands(sub)
    return p


def main(argv: Sequence[str] | None = None, *, desktop: Frontend | None = None) -> int:
    if desktop is not None:
        set_frontend(desktop)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # fast path: no feature modules imported
        _out(f"memtray {__version__}")
        return 0
    if os.name != "nt":
        # Files memtray does not open itself (git objects and refs through dulwich, the
        # search index through sqlite) must be private too, whatever the user's umask.
        os.umask(0o077)
    if argv[:1] == ["ask"] and not {"-", "-h", "--help"} & set(argv[1:]) and not any(
        a.startswith("--a") for a in argv[1:]  # --attach (or its abbreviation): paths are made absolute first
    ):
        # a running instance is asked first, before building the parser (which imports
        # every feature module): it parses the argv itself, as it does for any forward
        try:
            served = forward_if_served(Home.resolve(), argv, model=True)
        except MemtrayError as exc:
            return _report(exc)
        except BrokenPipeError:
            return _reader_gone()
        if served is not None:
            return served
    if not argv and not os.environ.get("MEMTRAY_NO_DESKTOP"):
        # bare `memtray` starts the desktop: skip building the parser, which imports
        # every feature module (the instance builds it when a command is forwarded)
        parser, args = None, argparse.Namespace(home=None, argv=[], fn=None)
    else:
        parser = build_parser()
        args = parser.parse_args(argv)
    home = Home.resolve(args.home) if args.home else Home.resolve()
    fn: Handler | None = args.fn
    try:
        if fn is None:
            if parser is not None and os.environ.get("MEMTRAY_NO_DESKTOP"):
                parser.print_help()
                return 0
            return cmd_desktop(args, home)
        if args.no_daemon:
            from memtray.core.cli import warm

            warm.disable()
        from memtray.core.base.holder import set_role

        set_role(command_words(args), serves=False)  # what another command waiting for this home is told
        try:
            return fn(args, home)
        except Forward as fwd:
            return forward(home, fwd.argv or argv, run_here=lambda: fn(args, home), model=fwd.model)
    except MemtrayError as exc:
        return _report(exc)
    except KeyboardInterrupt:
        _err("memtray: interrupted")
        return 130
    except BrokenPipeError:
        return _reader_gone()


def command_words(args: argparse.Namespace) -> str:
    """``memtray memory log``: the command and subcommand chosen, without its arguments
    (which may hold what the user asked)."""
    words = [str(args.command)] + [str(v) for k, v in vars(args).items() if k.endswith("_cmd") and v]
    return " ".join(["memtray", *words])


def _reader_gone() -> int:
    """The reader of our output closed its end (``memtray memory log | head -1``): end
    quietly, as other Unix tools do. What is still buffered for stdout goes nowhere, so
    the interpreter's last flush cannot complain either."""
    import contextlib

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 0


def _report(exc: MemtrayError) -> int:
    _err(f"memtray: error: {exc}")
    if exc.hint:
        _err(f"  {exc.hint}")
    return exc.exit_code


def serve(app: App, request: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> int:
    """Execute a forwarded command against ``app`` (in the running instance)."""
    argv = [str(a) for a in request.get("argv", [])]
    if argv[:1] and argv[0].startswith("__"):  # the instance protocol's own requests
        return 0 if argv == ["__ping__"] else 1  # a front end that does not hand over, etc.
    console = Console(lambda t: send({"out": t}), lambda t: send({"err": t}), bool(request.get("tty")))
    app.refresh_settings()  # a `config set` or hand edit since the last command counts now
    with serving(app, console):
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            return int(exc.code or 0)
        fn: Handler | None = args.fn
        if fn is None:
            return 0
        try:
            return fn(args, app.home)
        except MemtrayError as exc:
            _err(f"memtray: error: {exc}")
            if exc.hint:
                _err(f"  {exc.hint}")
            return exc.exit_code
