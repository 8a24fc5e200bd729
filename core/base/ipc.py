"""Talking to the running instance: one socket per data home, JSON lines.

Whoever holds the data home's writer lock (the desktop app or ``memtray
daemon``) listens on :func:`socket_path`. A CLI command that finds the home
locked forwards its argv here and the instance runs the *same* CLI code
against its open store, streaming the output back; so every command works
while the app runs, with identical output. The desktop serves the same path
and protocol with QLocalServer.

Protocol: the client sends one JSON object per line
``{"argv": [...], "env": {...}}``; the server answers with lines
``{"out": "..."}`` / ``{"err": "..."}`` and finally ``{"exit": N}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memtray.core.base.errors import EnvironmentProblem
from memtray.core.base.home import Home

#: Environment variables forwarded to the running instance (Wayland focus etc.).
FORWARD_ENV = ("XDG_ACTIVATION_TOKEN", "DESKTOP_STARTUP_ID", "MEMTRAY_FORWARDED_CWD")


class NoInstance(EnvironmentProblem):
    """Nothing is listening for this data home."""


def socket_path(home: Home) -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"{home.socket_name}.sock"


def is_running(home: Home) -> bool:
    try:
        request(home, {"argv": ["__ping__"]}, lambda _m: None, timeout=2.0)
        return True
    except NoInstance:
        return False


def request(
    home: Home,
    message: dict[str, Any],
    on_message: Callable[[dict[str, Any]], None],
    *,
    timeout: float | None = None,
) -> int:
    """Send one request; call ``on_message`` for each reply line; return the exit code."""
    path = socket_path(home)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout if timeout is not None else 5.0)
    try:
        sock.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError, OSError) as exc:
        sock.close()
        raise NoInstance(f"no running memtray is listening at {path} ({exc.strerror or exc})") from exc
    try:
        sock.settimeout(timeout)
        sock.sendall(json.dumps(message).encode() + b"\n")
        with sock.makefile("rb") as fh:
            for raw in fh:
                msg = json.loads(raw)
                if "exit" in msg:
                    return int(msg["exit"])
                on_message(msg)
        raise NoInstance("the running memtray closed the connection without an answer")
    finally:
        sock.close()


def forward_env() -> dict[str, str]:
    return {k: os.environ[k] for k in FORWARD_ENV if k in os.environ}


Handler = Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], int]


class Server:
    """A plain Unix-socket server for headless instances (``memtray daemon``)."""

    def __init__(self, home: Home, handler: Handler) -> None:
        self.path = socket_path(home)
        self.handler = handler
        self._server: socketserver.ThreadingUnixStreamServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        clear_stale(self.path)
        outer = self

        class _H(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                line = self.rfile.readline()
                if not line:
                    return
                lock = threading.Lock()

                def send(msg: dict[str, Any]) -> None:
                    with lock, contextlib.suppress(OSError):
                        self.wfile.write(json.dumps(msg).encode() + b"\n")
                        self.wfile.flush()

                try:
                    req = json.loads(line)
                    code = outer.handler(req, send)
                except Exception as exc:
                    send({"err": f"memtray: error: {exc}\n"})
                    code = 1
                send({"exit": code})

        old = os.umask(0o077)
        try:
            self._server = socketserver.ThreadingUnixStreamServer(str(self.path), _H)
        finally:
            os.umask(old)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="memtray-ipc", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()


def clear_stale(path: Path) -> None:
    """Remove a socket file left by a crashed instance (call only while holding the lock)."""
    if not path.exists() and not path.is_symlink():
        return
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    else:
        raise EnvironmentProblem(f"another memtray instance is already listening at {path}")
    finally:
        probe.close()
