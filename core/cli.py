"""The ``memtray`` command line. Command names and flags are a contract: keep them.

Every command honours ``MEMTRAY_HOME``. Failures print one line
``memtray: error: <reason>`` (plus a hint line) on stderr and exit non-zero.
``memtray`` with no arguments starts the desktop app when PySide6 is present.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import __version__
from .errors import MemtrayError
from .home import Home

Handler = Callable[[argparse.Namespace, Home], int]


class Console:
    """Where a command's output goes: the terminal, or a forwarding socket."""

    def __init__(
        self,
        out: Callable[[str], None] | None = None,
        err: Callable[[str], None] | None = None,
        tty: bool | None = None,
    ) -> None:
        self._out = out or _writer("stdout")
        self._err = err or _writer("stderr")
        self._tty = tty

    @property
    def tty(self) -> bool:
        if self._tty is not None:
            return self._tty
        try:
            return sys.stdout.isatty()
        except ValueError:
            return False

    def write(self, text: str) -> None:
        self._out(text)

    def line(self, text: str = "") -> None:
        self._out(text + "\n")

    def error(self, text: str) -> None:
        self._err(text + "\n")


def _writer(name: str) -> Callable[[str], None]:
    def write(text: str) -> None:
        stream = getattr(sys, name)  # looked up each time: tests and pagers swap it
        stream.write(text)
        stream.flush()

    return write


_local = threading.local()


def con() -> Console:
    c: Console | None = getattr(_local, "console", None)
    if c is None:
        c = _local.console = Console()
    return c


def _out(text: str = "") -> None:
    con().line(text)


def _err(text: str) -> None:
    con().error(text)


class _Forward(Exception):
    """The data home is locked by a running instance: forward the command to it."""


@contextlib.contextmanager
def app_scope(home: Home) -> Iterator[Any]:
    """The App to run a command against: the serving instance's, or a fresh one."""
    served = getattr(_local, "app", None)
    if served is not None:
        yield served
        return
    from . import logsetup
    from .app import App
    from .errors import AlreadyRunning

    logsetup.setup(home)
    try:
        app = App.open(home)
    except AlreadyRunning:
        raise _Forward from None
    try:
        yield app
    finally:
        app.close()


_open_app = app_scope


# --- conversation ------------------------------------------------------------------------


def cmd_ask(args: argparse.Namespace, home: Home) -> int:
    text = " ".join(args.text)
    if text == "-":
        text = sys.stdin.read()
    if not text.strip():
        raise MemtrayError("nothing to ask", hint='Usage: memtray ask "your question"')
    c = con()
    with _open_app(home) as app:
        _offline_notice(app)
        streaming = c.tty
        result = app.run(
            app.agent.turn(args.session, text, on_delta=c.write if streaming else None, stream=streaming)
        )
        if streaming:
            _out()
        else:
            _out(result.reply)
    return 0


def cmd_chat(args: argparse.Namespace, home: Home) -> int:
    """Terminal chat. With a running instance, each line is forwarded as `ask`."""
    from .errors import LLMError

    if getattr(_local, "app", None) is not None:
        raise MemtrayError("`memtray chat` is interactive; it cannot run inside another instance")
    try:
        with app_scope(home) as app:
            _offline_notice(app)

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
    except _Forward:
        def remote_turn(line: str) -> None:
            _forward(home, ["ask", "--session", args.session, line])

        def remote_new() -> None:
            if _forward(home, ["new", "--session", args.session]) != 0:
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


def _offline_notice(app: Any) -> None:
    """Say once that the small offline model answers because no provider is configured."""
    from . import localmodel

    if not app.config.model and localmodel.is_local(app.llm.model):
        notice = localmodel.take_notice(app.home.state)
        if notice:
            _err(notice)


def _new_session(app: Any, session: str) -> None:
    cons = app.services.get("consolidation")
    if cons is not None:
        app.run(cons.archive(session))  # raises (and keeps the session) if archiving fails
    app.agent.new_session(session)


def cmd_new(args: argparse.Namespace, home: Home) -> int:
    with _open_app(home) as app:
        _new_session(app, args.session)
        _out(f"new session started for {args.session!r}")
    return 0


# --- events ------------------------------------------------------------------------------


def cmd_events_tail(args: argparse.Namespace, home: Home) -> int:
    from .eventlog import EventLog

    elog = EventLog.open(home.events, readonly=True)
    for rec in elog.tail(args.n):
        if args.json:
            _out(json.dumps(rec.to_json(), ensure_ascii=False))
        else:
            _out(_summarise(rec))
    return 0


def _summarise(rec: Any) -> str:
    d = rec.data
    if rec.type == "message":
        body = d.get("content") or ""
        if d.get("tool_calls"):
            body = "calls " + ", ".join(tc.get("function", {}).get("name", "?") for tc in d["tool_calls"])
        what = f"{d.get('role')}: {body}"
    else:
        what = ", ".join(f"{k}={str(v)[:40]}" for k, v in d.items() if k not in ("memory", "diff"))
    what = " ".join(what.split())
    if len(what) > 100:
        what = what[:99] + "…"
    return f"{rec.seq:>6}  {rec.ts}  {rec.type:<24} {rec.session or '-':<10} {what}"


def cmd_events_verify(args: argparse.Namespace, home: Home) -> int:
    from .eventlog import verify

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

    from . import config as cfgmod

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
    from . import config as cfgmod

    cfgmod.set_value(home, args.key, args.value)
    _out(f"{args.key} = {json.dumps(getattr(cfgmod.load(home, env=False), args.key))}")
    return 0


def cmd_key_set(args: argparse.Namespace, home: Home) -> int:
    from . import keys

    if sys.stdin.isatty():
        secret = getpass.getpass(f"API key for {args.provider} (input hidden): ")
    else:
        secret = sys.stdin.readline()
    keys.set_key(args.provider, secret)
    _out(f"stored the {args.provider} key in the keyring ({keys.backend_name()})")
    return 0


def cmd_key_delete(args: argparse.Namespace, home: Home) -> int:
    from . import keys

    if keys.delete_key(args.provider):
        _out(f"deleted the {args.provider} key from the keyring")
    else:
        _out(f"no {args.provider} key was stored")
    return 0


# --- doctor ------------------------------------------------------------------------------


def cmd_doctor(args: argparse.Namespace, home: Home) -> int:
    from .doctor import run_doctor

    return run_doctor(home, repair=args.repair, assume_yes=args.yes, out=_out)


# --- desktop -----------------------------------------------------------------------------


def cmd_desktop(args: argparse.Namespace, home: Home) -> int:
    try:
        from memtray.desktop.main import run
    except ImportError as exc:
        raise MemtrayError(
            f"the desktop app is not available ({exc})",
            hint="Install PySide6 (pip install memtray installs it), or use `memtray chat`.",
        ) from exc
    return int(run(home, list(getattr(args, "argv", []) or [])))


# --- parser ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memtray", description="A tray assistant that remembers you.")
    p.add_argument("--version", action="version", version=f"memtray {__version__}")
    p.add_argument("--home", help="data home (default: $MEMTRAY_HOME or the platform data dir)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    a = sub.add_parser("ask", help="one turn: print the reply")
    a.add_argument("--session", default="cli")
    a.add_argument("text", nargs="+", help='the message ("-" reads stdin)')
    a.set_defaults(fn=cmd_ask)

    c = sub.add_parser("chat", help="terminal chat (/new, /quit)")
    c.add_argument("--session", default="cli")
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
    from . import cli_audit, cli_memory, cli_remind, desktop_entry, purge, search

    cli_memory.add_commands(sub)
    cli_audit.add_commands(sub)  # after cli_memory: adds memory rebuild/compare/adopt
    search.add_commands(sub)
    cli_remind.add_commands(sub)
    desktop_entry.add_commands(sub)
    purge.add_commands(sub)
    try:
        from memtray.desktop import cli_commands
    except ImportError:
        pass  # desktop not installed: toggle/show/quit are unavailable
    else:
        cli_commands.add_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # fast path: no feature modules imported
        _out(f"memtray {__version__}")
        return 0
    if os.name != "nt":
        # Files memtray does not open itself (git objects and refs through dulwich, the
        # search index through sqlite) must be private too, whatever the user's umask.
        os.umask(0o077)
    if not argv and not os.environ.get("MEMTRAY_NO_DESKTOP"):
        # bare `memtray` starts the desktop: skip building the parser, which imports
        # every feature module (the instance builds it when a command is forwarded)
        parser, args = None, argparse.Namespace(home=None, argv=[])
    else:
        parser = build_parser()
        args = parser.parse_args(argv)
    home = Home.resolve(args.home) if args.home else Home.resolve()
    fn: Handler | None = getattr(args, "fn", None)
    try:
        if fn is None:
            if parser is not None and os.environ.get("MEMTRAY_NO_DESKTOP"):
                parser.print_help()
                return 0
            return cmd_desktop(args, home)
        try:
            return fn(args, home)
        except _Forward:
            return _forward(home, argv)
    except MemtrayError as exc:
        _err(f"memtray: error: {exc}")
        if exc.hint:
            _err(f"  {exc.hint}")
        return exc.exit_code
    except KeyboardInterrupt:
        _err("memtray: interrupted")
        return 130
    except BrokenPipeError:
        return 0


def _forward(home: Home, argv: list[str]) -> int:
    """Run ``argv`` inside the instance that holds the data home, relaying its output."""
    from . import ipc
    from .errors import AlreadyRunning

    c = con()

    def relay(msg: dict[str, Any]) -> None:
        if "out" in msg:
            c.write(msg["out"])
        if "err" in msg:
            c._err(msg["err"])

    try:
        return ipc.request(home, {"argv": argv, "env": ipc.forward_env(), "tty": c.tty}, relay)
    except ipc.NoInstance:
        raise AlreadyRunning(f"another memtray process is using {home.root} and does not accept commands") from None


def serve(app: Any, request: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> int:
    """Execute a forwarded command against ``app`` (in the running instance)."""
    argv = [str(a) for a in request.get("argv", [])]
    if argv == ["__ping__"]:
        return 0
    _local.app = app
    _local.console = Console(lambda t: send({"out": t}), lambda t: send({"err": t}), bool(request.get("tty")))
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            return int(exc.code or 0)
        fn: Handler | None = getattr(args, "fn", None)
        if fn is None:
            return 0
        try:
            return fn(args, app.home)
        except MemtrayError as exc:
            _err(f"memtray: error: {exc}")
            if exc.hint:
                _err(f"  {exc.hint}")
            return exc.exit_code
    finally:
        _local.app = None
        _local.console = None


if __name__ == "__main__":  # pragma: no cover
    # Run the canonical module, not this __main__ copy, so feature modules that import
    # from memtray.core.cli share one _Forward class and one console.
    from memtray.core.cli import main as _main

    sys.exit(_main())
