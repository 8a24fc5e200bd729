"""``memtray daemon``: the headless instance, and the warm one started on demand.

``memtray daemon`` holds the data home, delivers reminders and serves forwarded
commands until SIGINT/SIGTERM, ``memtray quit`` or ``memtray daemon stop``.
``memtray daemon --warm`` is the background instance CLI commands start (see
:mod:`memtray.core.cli.warm`): it delivers nothing, imports litellm (or loads an offline model) while idle,
exits after ``warm_instance_idle_minutes`` without a request, and hands the home
over to the desktop app or a plain daemon that starts; when every command it served
failed (no model, no key), it leaves as soon as it is idle. ``memtray daemon status``
says what holds the home.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home, current_holder
from memtray.core.cli.console import con, served_app
from memtray.core.cli.console import out as _out
from memtray.core.cli.frontend import Serve

if TYPE_CHECKING:
    from memtray.core.app import App

#: How long a stopping instance lets the commands it started finish.
DRAIN_SECONDS = 300.0


def add_commands(sub: Any, serve: Serve) -> None:
    dm = sub.add_parser("daemon", help="run headless: deliver reminders, accept forwarded commands")
    dm.add_argument("action", nargs="?", default="run", choices=("run", "status", "stop"),
                    help="run (default), status: what holds the data home, stop: end the running instance")
    dm.add_argument("--json", action="store_true", help="with status: one JSON object")
    dm.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)  # started on demand
    dm.set_defaults(fn=cmd_daemon, serve=serve)


def cmd_daemon(args: argparse.Namespace, home: Home) -> int:
    if args.action == "status":
        return _status(home, as_json=args.json)
    if args.action == "stop":
        return _stop(home)
    return _run(home, args.serve, warm=args.warm)


class _Instance:
    """What the serving loop needs to know: why to stop, and since when it is idle."""

    def __init__(self, warm: bool, idle_seconds: float) -> None:
        self.warm = warm
        self.idle_seconds = idle_seconds
        self.stop_reason = ""
        self.started = time.time()
        self.served = 0  # commands run (not the protocol's own requests)
        self.succeeded = 0
        self._lock = threading.Lock()

    def ran(self, code: int) -> None:
        with self._lock:
            self.served += 1
            self.succeeded += code == 0

    @property
    def only_failures(self) -> bool:
        """Every command it ran failed: nothing to keep warm for (a missing model or key)."""
        with self._lock:
            return self.served > 0 and self.succeeded == 0

    def stop(self, reason: str) -> None:
        with self._lock:
            self.stop_reason = self.stop_reason or reason

    def status(self, home: Home) -> dict[str, Any]:
        return {"running": True, "kind": "warm" if self.warm else "daemon", "pid": os.getpid(),
                "home": str(home.root), "since": int(self.started),
                "idle_exit_seconds": self.idle_seconds if self.warm else None}


def _run(home: Home, serve: Serve, *, warm: bool) -> int:
    from memtray.core.app import App
    from memtray.core.base import handover, ipc, logsetup
    from memtray.core.base.errors import AlreadyRunning
    from memtray.core.base.notify import StdoutNotifier

    if served_app() is not None:
        raise MemtrayError("memtray is already running for this data home (this command was forwarded to it)")
    from memtray.core.base.holder import set_role

    set_role("memtray daemon --warm" if warm else "memtray daemon", serves=True)
    logsetup.setup(home)
    # The handler only flips a flag: taking a lock (Event.set) inside a signal handler
    # can deadlock against the main thread that the signal interrupted.
    signals: list[int] = []
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in handlers:
        signal.signal(s, lambda sig, _frame: signals.append(sig))
    try:
        try:
            app = App.open(home)
        except AlreadyRunning:
            if warm:
                raise  # another instance or command has the home: the caller uses or waits for it
            taken = handover.take_over(home, lambda: App.open(home))  # a warm instance leaves for us
            if taken is None:
                raise
            app = taken
        app.start_background()  # long-lived: the history is embedded meanwhile
        from memtray.core.admin.tombstones import follow_tombstones

        follow_tombstones(app)  # its automatic sync applies purges made on other devices
        me = _Instance(warm, float(app.config.warm_instance_idle_minutes) * 60.0)
        server = None
        try:
            app.notifier.set(StdoutNotifier())

            def handle(req: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> int:
                argv = [str(a) for a in req.get("argv") or []]
                if argv == ["__status__"]:
                    send({"out": json.dumps(me.status(home)) + "\n"})
                    return 0
                if argv == ["__handover__"]:
                    if not warm:
                        send({"err": "memtray: error: this instance does not hand over\n"})
                        return 1
                    me.stop("handing the data home over to the app that started")
                    return 0
                if argv[:1] == ["quit"]:
                    me.stop("asked to quit")
                    send({"err": f"memtray: the {'background instance' if warm else 'daemon'} "
                                 f"(pid {os.getpid()}) is stopping\n"})
                    return 0
                code = serve(app, req, send)
                if not argv[:1] or not argv[0].startswith("__"):  # a command, not a ping
                    me.ran(code)
                return code

            server = ipc.Server(home, handle, strict_env=warm)
            server.start()
            if warm:
                from memtray.core.llm.client import load_litellm

                # get the model ready while idle: the command that started us is coming. An
                # offline model is loaded (it runs without litellm, whose import would only take
                # the cores from it); any other needs litellm imported
                ready = app.llm.preload if app.llm.runs_here else load_litellm
                threading.Thread(target=_quietly, args=(ready,), name="memtray-warm-up", daemon=True).start()
                state = f"warm, exits after {me.idle_seconds:g}s idle, not delivering reminders"
            else:

                delivering = app.reminders.start()
                state = "delivering reminders" if delivering else "NOT delivering reminders (see the log)"
            con().error(f"memtray daemon: ready, {state}; serving {home.root} (pid {os.getpid()})")
            while not signals and not me.stop_reason:
                time.sleep(0.2)
                if warm and server.idle_for() > me.idle_seconds and not _busy(app):
                    me.stop(f"idle for {me.idle_seconds:g}s")
                elif warm and me.only_failures and server.active == 0 and not _busy(app):
                    me.stop("every command it ran failed")
            con().error(f"memtray daemon: stopping ({me.stop_reason or 'signal'})")
        finally:
            if server is not None:
                server.stop_accepting()  # queued commands are refused unrun: their clients retry
                if not server.drain(DRAIN_SECONDS):
                    con().error("memtray daemon: a forwarded command did not finish; stopping anyway")
            app.close()
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    return 0


def _busy(app: App) -> bool:
    return bool(app.consolidation.in_flight)


def _quietly(fn: Callable[[], Any]) -> None:
    import logging

    try:
        fn()
    except Exception as exc:  # the command that needs it will say what is wrong
        logging.getLogger(__name__).warning("warming up the model client failed: %s", exc)


def _status(home: Home, *, as_json: bool) -> int:
    from memtray.core.base import handover, ipc
    from memtray.core.cli import warm as warm_mod

    info: dict[str, Any]
    got: list[str] = []
    try:
        code = ipc.request(home, {"argv": ["__status__"], "env": {}, "tty": False},
                           lambda m: got.append(m.get("out", "")), timeout=10.0, busy_wait=5.0)
        try:
            info = json.loads("".join(got)) if code == 0 else {}
        except ValueError:
            info = {}
        if not info:  # the desktop app answers commands but not this question
            info = {"running": True, "kind": "app", "pid": _lock_pid(home), "home": str(home.root)}
    except (ipc.NoInstance, ipc.NotPrivate):
        found = current_holder(home)
        free = handover.home_free(home)
        info = {"running": False, "kind": None if free else "command",
                "pid": found.pid if found is not None and not free else None, "home": str(home.root)}
        if found is not None and not free:
            info["command"] = found.command or None
    info["socket"] = str(ipc.instance_socket(home))
    info["log"] = str(warm_mod.log_path(home))
    info["warm_instance"] = warm_mod.enabled(home)
    if as_json:
        _out(json.dumps(info))
        return 0
    kind = info.get("kind")
    if info["running"]:
        what = {"warm": "the background instance started by a command",
                "daemon": "memtray daemon", "app": "the desktop app"}.get(str(kind), str(kind))
        _out(f"running: {what} (pid {info.get('pid') or '?'}) serves {home.root}")
        if kind == "warm":
            _out(f"  exits after {info.get('idle_exit_seconds'):g}s without a request; `memtray quit` ends it now")
    elif kind == "command":
        what = f"pid {info.get('pid') or '?'}" + (f": {info['command']}" if info.get("command") else "")
        _out(f"not serving: another memtray command ({what}) is using {home.root}")
    else:
        state = "on" if info["warm_instance"] else "off"
        _out(f"not running for {home.root} (a background instance starts on demand: {state})")
    _out(f"  socket: {info['socket']}")
    _out(f"  instance log: {info['log']}")
    return 0


def _lock_pid(home: Home) -> int | None:
    found = current_holder(home)
    return found.pid if found is not None else None


def _stop(home: Home) -> int:
    from memtray.core.base import ipc

    try:
        return ipc.request(home, {"argv": ["quit"], "env": {}, "tty": False},
                           lambda m: con().write_err(m.get("err", "")), timeout=30.0)
    except ipc.NoInstance:
        con().error("memtray is not running")
        return 0
