"""Single instance: the desktop serves the core IPC socket with QLocalServer.

Same path (:func:`memtray.core.base.ipc.socket_path`, named in the home's lock file
once it listens, so a command finds it whatever its own environment) and same
JSON-lines protocol as ``memtray daemon``: a request ``{"argv": [...], "env": {...}, "tty": bool}``
is answered with ``{"started": true}``, ``{"out": ...}`` / ``{"err": ...}`` lines
and a final ``{"exit": N}``. Connections from another uid are dropped unread
(peer credentials, as the daemon checks them), and the backlog holds a burst.
CLI commands run through the ``serve`` the CLI handed the desktop (:data:`Serve`) on a thread-pool
thread (they call ``app.run``, which blocks on the worker); their output comes
back to the socket (which lives on the GUI thread) by queued signal. The desktop's own commands (``toggle``, ``show``, ``quit``, ...) are
handled on the GUI thread by :attr:`InstanceServer.local_commands`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memtray.core.base import cmdenv, ipc
from memtray.core.base.home import Home, announce

from .qt import QLocalServer, QLocalSocket, QObject, Signal

log = logging.getLogger(__name__)

#: ``serve(app, request, send) -> exit code``: runs a forwarded command against the App. The CLI
#: hands it to the desktop when it starts it (``memtray.core.cli.frontend.Serve``), so the
#: desktop runs console commands without importing the console front end.
Serve = Callable[[Any, dict[str, Any], Callable[[dict[str, Any]], None]], int]

#: ``handler(argv, env) -> exit code``, run on the GUI thread.
LocalCommand = Callable[[list[str], dict[str, str]], int]

MAX_REQUEST_BYTES = 8 * 1024 * 1024


class _Relay(QObject):
    """Carries output from pool threads to the GUI thread (queued connection)."""

    message = Signal(object, object)  # (connection id, message dict)


class InstanceServer(QObject):
    """Listens on the data home's socket; one connection = one request."""

    #: emitted on the GUI thread after a local command ran: (argv[0], env)
    command = Signal(str, object)

    def __init__(
        self,
        path: Path,
        serve: Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], int],
        parent: QObject | None = None,
        *,
        home: Home | None = None,
    ) -> None:
        super().__init__(parent)
        self.path = path
        self.home = home  # whose lock file names this socket once it listens
        self._serve = serve
        self.local_commands: dict[str, LocalCommand] = {}
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.setMaxPendingConnections(ipc.BACKLOG)
        if hasattr(self._server, "setListenBacklogSize"):  # Qt 6.3+: the kernel's queue
            self._server.setListenBacklogSize(ipc.BACKLOG)
        self._server.newConnection.connect(self._accept)
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memtray-ipc")
        self._relay = _Relay(self)
        self._relay.message.connect(self._deliver)
        self._conns: dict[int, QLocalSocket] = {}
        self._buffers: dict[int, bytes] = {}
        self._next = 0

    def listen(self) -> None:
        """Clear a stale socket (we hold the data-home lock) and listen on the full path."""
        from memtray.core.base.errors import EnvironmentProblem

        ipc.clear_stale(self.path)
        old = os.umask(0o077)
        try:
            ok = self._server.listen(str(self.path))
        finally:
            os.umask(old)
        if not ok:
            raise EnvironmentProblem(
                f"cannot listen on {self.path}: {self._server.errorString()}",
                hint="Check that $XDG_RUNTIME_DIR is writable; `memtray toggle` will not work until then.",
            )
        if self.home is not None:
            announce(self.home, str(self.path))

    @property
    def listening(self) -> bool:
        return self._server.isListening()

    def close(self) -> None:
        if self.home is not None and self._server.isListening():
            announce(self.home, None)
        self._server.close()
        for sock in list(self._conns.values()):
            sock.abort()
        self._conns.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
        with contextlib.suppress(FileNotFoundError):
            if self.path.is_socket():
                self.path.unlink()

    # --- connections ------------------------------------------------------------------

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            sock = self._server.nextPendingConnection()
            if not ipc.peer_allowed_fd(int(sock.socketDescriptor())):
                sock.abort()  # another user: not a byte is read or answered
                sock.deleteLater()
                continue
            cid = self._next
            self._next += 1
            self._conns[cid] = sock
            self._buffers[cid] = b""
            sock.readyRead.connect(lambda cid=cid: self._read(cid))
            sock.disconnected.connect(lambda cid=cid: self._drop(cid))
            if sock.bytesAvailable():
                self._read(cid)

    def _drop(self, cid: int) -> None:
        sock = self._conns.pop(cid, None)
        self._buffers.pop(cid, None)
        if sock is not None:
            sock.deleteLater()

    def _read(self, cid: int) -> None:
        sock = self._conns.get(cid)
        if sock is None or cid not in self._buffers:
            return
        buf = self._buffers[cid] + bytes(sock.readAll().data())
        if b"\n" not in buf:
            if len(buf) > MAX_REQUEST_BYTES:
                self._send(cid, {"err": "memtray: error: request too large\n"})
                self._send(cid, {"exit": 2})
                self._finish(cid)
                return
            self._buffers[cid] = buf
            return
        line = buf.split(b"\n", 1)[0]
        del self._buffers[cid]  # one request per connection
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            self._send(cid, {"err": f"memtray: error: bad request ({exc})\n"})
            self._send(cid, {"exit": 2})
            self._finish(cid)
            return
        argv = [str(a) for a in req.get("argv") or []]
        env = {str(k): str(v) for k, v in (req.get("env") or {}).items()}
        handler = self.local_commands.get(argv[0]) if argv else None
        try:
            command_env, declined = ipc.screen(req, strict=False)
        except ValueError as exc:
            self._send(cid, {"err": f"memtray: error: bad request ({exc})\n"})
            self._send(cid, {"exit": 2})
            self._finish(cid)
            return
        if declined is not None:  # not started: the client says why
            self._send(cid, {"declined": declined})
            self._finish(cid)
            return
        # from here the command may run: a client must not send it again (see ipc)
        self._send(cid, ipc.STARTED)
        if handler is not None:
            try:
                code = handler(argv, env)
            except Exception as exc:
                log.exception("local command %s failed", argv[0])
                self._send(cid, {"err": f"memtray: error: {exc}\n"})
                code = 1
            self._send(cid, {"exit": int(code)})
            self._finish(cid)
            self.command.emit(argv[0], env)
            return
        self._pool.submit(self._run, cid, req, command_env)

    def _run(self, cid: int, req: dict[str, Any], env: cmdenv.CommandEnv) -> None:
        # on a pool thread: core CLI code blocks on the worker here, never on the GUI thread
        def send(msg: dict[str, Any]) -> None:
            self._relay.message.emit(cid, msg)

        try:
            with cmdenv.scope(env):  # the command's own model and keys, for this command only
                code = self._serve(req, send)
        except Exception as exc:
            log.exception("forwarded command failed")
            send({"err": f"memtray: error: {exc}\n"})
            code = 1
        send({"exit": int(code)})

    def _deliver(self, cid: int, msg: dict[str, Any]) -> None:
        self._send(cid, msg)
        if "exit" in msg:
            self._finish(cid)

    def _send(self, cid: int, msg: dict[str, Any]) -> None:
        sock = self._conns.get(cid)
        if sock is None:
            return
        sock.write(json.dumps(msg).encode() + b"\n")
        sock.flush()

    def _finish(self, cid: int) -> None:
        sock = self._conns.get(cid)
        if sock is not None:
            sock.disconnectFromServer()
