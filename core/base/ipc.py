"""Talking to the running instance: one private socket per data home, JSON lines.

Whoever holds the data home's writer lock (the desktop app or ``memtray
daemon``) listens on :func:`socket_path`. A CLI command that finds the home
locked forwards its argv here and the instance runs the *same* CLI code
against its open store, streaming the output back; so every command works
while the app runs, with identical output. The desktop serves the same path
and protocol with QLocalServer.

The instance names its socket in the home's lock file (:mod:`.holder`), so a
client finds it from the data home whatever ``XDG_RUNTIME_DIR`` or ``TMPDIR`` the
client itself has (:func:`instance_socket`).

The socket is private: it lives under ``$XDG_RUNTIME_DIR`` or in a 0700
directory of the user's own (checked: owned by the user, not a link, nobody
else may write to it), and both ends check the peer's uid on every connection
(``SO_PEERCRED`` / ``LOCAL_PEERCRED``), so another local user can neither stop
an instance by squatting a predictable path nor reach one.

Protocol: the client sends one JSON object per line
``{"argv": [...], "env": {...}, "cmdenv": {...}}``; the server answers
``{"started": true}`` right before it runs the command, then lines
``{"out": "..."}`` / ``{"err": "..."}`` and finally ``{"exit": N}``. A
connection that ends before ``started`` ran nothing, so the client may send it
again (a full backlog, an instance handing over); one that ends after it may
have run, and is reported, never repeated. ``cmdenv`` is the command's own model
and provider environment (:mod:`.cmdenv`); an instance that cannot run the
command with it answers ``{"declined": "<why>"}`` instead of ``started``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import random
import socket
import socketserver
import stat
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memtray.core.base import cmdenv
from memtray.core.base.errors import EnvironmentProblem
from memtray.core.base.home import Home, announce, current_holder

log = logging.getLogger(__name__)

#: Environment variables forwarded to the running instance (Wayland focus etc.).
FORWARD_ENV = ("XDG_ACTIVATION_TOKEN", "DESKTOP_STARTUP_ID", "MEMTRAY_FORWARDED_CWD")

#: Listen backlog: a burst of commands (a script running 50 `memtray ask` at once)
#: queues here instead of being refused.
BACKLOG = 128

#: How long a client keeps retrying a socket whose backlog is full.
BUSY_WAIT = 30.0

#: What a server says right before it runs a command; ``cmdenv``: it runs it with the
#: command's own environment (an older instance does not say so, see :func:`request`).
STARTED: dict[str, Any] = {"started": True, "cmdenv": True}
OLDER_INSTANCE = ("memtray: note: the running memtray is an older version and answered with its own model "
                  "and keys, not this command's; restart it to use them\n")

#: AF_UNIX paths are limited to 108 bytes on Linux, 104 on macOS.
MAX_SOCKET_PATH = 100


class NoInstance(EnvironmentProblem):
    """Nothing is listening for this data home (or it stopped before running the request)."""


class Interrupted(EnvironmentProblem):
    """The instance started the command and ended the connection before it finished."""

    hint = "Check with `memtray events tail` whether it was done before running it again."


class Declined(EnvironmentProblem):
    """The instance cannot run this command with the command's own environment; it did
    not start it (the reason says which variables differ)."""


class NotPrivate(EnvironmentProblem):
    """The socket or its directory belongs to another user."""

    hint = "Another local user may be interfering; memtray will not talk to that socket."


def _uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else -1


def _private_dir(path: Path, *, create: bool, own: bool) -> bool:
    """Whether ``path`` is a real directory of ours that nobody else can write to.

    ``own``: memtray made it, so it may tighten its mode (a directory of ours that is
    too open was loosened by us; another user cannot create one owned by us).
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # a concurrent command made it: check it below like any other
        except OSError:
            return False
        try:
            st = os.lstat(path)
        except OSError:
            return False
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):  # lstat: a link is not a directory
        return False
    if os.name == "nt":  # pragma: no cover
        return True
    if st.st_uid != _uid():
        return False
    if st.st_mode & 0o022:
        if not own:
            return False
        try:
            os.chmod(path, 0o700)
        except OSError:
            return False
    return True


def runtime_dir(home: Home) -> Path:
    """The private directory that holds this user's sockets (made if needed).

    A directory where the socket's path would pass AF_UNIX's limit (a long ``TMPDIR``) is
    skipped for the next choice: clients find the socket from the home's record, not by
    working out the same directory from their own environment."""
    name = f"{home.socket_name}.sock"

    def fits(d: Path) -> bool:
        return len(os.fsencode(str(d / name))) <= MAX_SOCKET_PATH

    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and fits(Path(xdg)) and _private_dir(Path(xdg), create=False, own=False):
        return Path(xdg)
    uid = _uid()
    base = Path(os.environ.get("TMPDIR") or tempfile.gettempdir())  # read now: tempfile caches it
    bases = [base] if fits(base / f"memtray-{uid}.7") or os.name == "nt" else []
    if Path("/tmp") != base and os.name != "nt":
        bases.append(Path("/tmp"))  # a TMPDIR too long for a socket path
    # a squatter may have made the first name (owned by them): take the next of ours
    for b in bases:
        for n in range(8):
            candidate = b / (f"memtray-{uid}" if n == 0 else f"memtray-{uid}.{n}")
            if _private_dir(candidate, create=True, own=True):
                return candidate
    fallback = home.state / "run"
    if fits(fallback):
        with contextlib.suppress(OSError):
            home.state.mkdir(parents=True, exist_ok=True)
        if _private_dir(fallback, create=True, own=True):
            return fallback
    raise NotPrivate(
        f"no private directory for memtray's socket: {base}/memtray-{uid} and its alternatives belong to "
        "someone else, or their paths are too long for a socket, and $XDG_RUNTIME_DIR is not set",
        hint="Set XDG_RUNTIME_DIR to a directory only you can write to (your session usually does).",
    )


def socket_path(home: Home) -> Path:
    """Where an instance started in this process's environment listens."""
    return runtime_dir(home) / f"{home.socket_name}.sock"


def instance_socket(home: Home) -> Path:
    """Where the instance that holds ``home`` listens: the socket its record names (it may
    have been started with another XDG_RUNTIME_DIR or TMPDIR), else :func:`socket_path`
    (nobody named one: no instance, one still starting, or an older version's)."""
    found = current_holder(home)
    if found is not None and found.socket is not None:
        return Path(found.socket)
    return socket_path(home)


# --- peer credentials ----------------------------------------------------------------


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (None: no way to tell here)."""
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is not None:  # Linux
        raw = sock.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return int(uid)
    if sys.platform == "darwin" or "bsd" in sys.platform:
        # struct xucred { u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]; }
        sol_local, local_peercred = 0, 0x001
        raw = sock.getsockopt(sol_local, local_peercred, 76)
        _version, uid = struct.unpack_from("=II", raw)
        return int(uid)
    return None  # pragma: no cover - other platforms rely on the directory's mode


def peer_allowed(sock: socket.socket) -> bool:
    """Only the user who runs this process may talk to it."""
    try:
        uid = peer_uid(sock)
    except OSError as exc:
        log.warning("could not read the peer's credentials (%s); refusing the connection", exc)
        return False
    if uid is None or uid == _uid():
        return True
    log.warning("refused a connection from uid %s (this instance serves uid %s only)", uid, _uid())
    return False


def peer_allowed_fd(fd: int) -> bool:
    """:func:`peer_allowed` for a descriptor owned by someone else (QLocalSocket's)."""
    try:
        dup = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=os.dup(fd))
    except OSError as exc:
        log.warning("could not check a connection's credentials (%s); refusing it", exc)
        return False
    try:
        return peer_allowed(dup)
    finally:
        dup.close()


# --- client --------------------------------------------------------------------------


def is_running(home: Home) -> bool:
    try:
        request(home, {"argv": ["__ping__"]}, lambda _m: None, timeout=2.0, busy_wait=2.0)
        return True
    except (NoInstance, NotPrivate):
        return False


def _connect(path: Path, busy_wait: float) -> socket.socket:
    """Connect, retrying with bounded backoff while the listen backlog is full."""
    deadline = time.monotonic() + busy_wait
    delay = 0.005
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(5.0)
        try:
            sock.connect(str(path))
            return sock
        except (BlockingIOError, TimeoutError) as exc:
            # EAGAIN (Linux) / timeout: a live instance whose backlog is full
            sock.close()
            if time.monotonic() > deadline:
                raise NoInstance(f"the memtray at {path} is too busy to accept ({exc})") from exc
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EAGAIN and time.monotonic() <= deadline:
                pass
            else:
                raise NoInstance(f"no running memtray is listening at {path} ({exc.strerror or exc})") from exc
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 2, 0.2)


def request(
    home: Home,
    message: dict[str, Any],
    on_message: Callable[[dict[str, Any]], None],
    *,
    timeout: float | None = None,
    busy_wait: float = BUSY_WAIT,
) -> int:
    """Send one request; call ``on_message`` for each reply line; return the exit code.

    :class:`NoInstance` means the request did not run (safe to send again);
    :class:`Interrupted` that it may have.
    """
    path = instance_socket(home)
    sock = _connect(path, busy_wait)
    started = False
    sent_env = message.get("cmdenv")
    carried = isinstance(sent_env, dict) and bool(sent_env.get("set"))
    try:
        if not peer_allowed(sock):
            raise NotPrivate(f"the socket at {path} is served by another user; memtray does not talk to it")
        sock.settimeout(timeout)
        sock.sendall(json.dumps(message).encode() + b"\n")
        with sock.makefile("rb") as fh:
            for raw in fh:
                msg = json.loads(raw)
                if "exit" in msg:
                    return int(msg["exit"])
                if msg.get("started"):
                    started = True
                    if carried and not msg.get("cmdenv"):
                        on_message({"err": OLDER_INSTANCE})  # never a silent substitution
                    continue
                if "declined" in msg and not started:
                    raise Declined(str(msg["declined"]))
                try:
                    on_message(msg)
                except OSError as exc:  # our own output (a reader that closed its pipe), not the socket
                    raise _OutputFailed(exc) from exc
    except _OutputFailed as failed:
        raise failed.error from None
    except (ConnectionError, TimeoutError, ValueError) as exc:
        if not started:
            raise NoInstance(f"the memtray at {path} closed the connection before running the command") from exc
        raise Interrupted("the running memtray ended the connection before the command finished") from exc
    finally:
        sock.close()
    if not started:
        raise NoInstance(f"the memtray at {path} closed the connection before running the command")
    raise Interrupted("the running memtray ended the connection before the command finished")


class _OutputFailed(Exception):
    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def forward_env() -> dict[str, str]:
    return {k: os.environ[k] for k in FORWARD_ENV if k in os.environ}


def screen(req: dict[str, Any], *, strict: bool) -> tuple[cmdenv.CommandEnv, str | None]:
    """The environment a forwarded request brought, and why the instance declines to
    start it (None: it runs). Raises :class:`~.cmdenv.BadCommandEnv` for a malformed one.

    ``strict``: the background instance, whose own environment is only whichever
    command's started it."""
    env = cmdenv.compare(cmdenv.parse(req.get("cmdenv")), strict=strict)
    if env.differs and env.uses_model:
        return env, env.describe_differs()
    return env, None


# --- server --------------------------------------------------------------------------

Handler = Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], int]


def _server_class() -> type[socketserver.ThreadingUnixStreamServer]:
    # built on first use: Windows has no ThreadingUnixStreamServer
    class _UnixServer(socketserver.ThreadingUnixStreamServer):
        request_queue_size = BACKLOG
        daemon_threads = True

        def verify_request(self, request: Any, client_address: Any) -> bool:
            return peer_allowed(request)

    return _UnixServer


class Server:
    """A plain Unix-socket server for headless instances (``memtray daemon``).

    It counts the requests in flight and when the last one ended, so an instance
    can exit when idle and finish what it started before it hands over.
    """

    def __init__(self, home: Home, handler: Handler, *, strict_env: bool = False) -> None:
        self.home = home
        self.path = socket_path(home)
        self.handler = handler
        self.strict_env = strict_env
        self._server: socketserver.ThreadingUnixStreamServer | None = None
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self._active = 0
        self._last = time.monotonic()

    @property
    def active(self) -> int:
        with self._cond:
            return self._active

    def idle_for(self) -> float:
        """Seconds since the last request ended (0 while one runs)."""
        with self._cond:
            return 0.0 if self._active else time.monotonic() - self._last

    def _enter(self) -> None:
        with self._cond:
            self._active += 1

    def _leave(self) -> None:
        with self._cond:
            self._active -= 1
            self._last = time.monotonic()
            self._cond.notify_all()

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
                    with lock, contextlib.suppress(OSError, ValueError):
                        self.wfile.write(json.dumps(msg).encode() + b"\n")
                        self.wfile.flush()

                outer._enter()
                try:
                    try:
                        req = json.loads(line)
                        if not isinstance(req, dict):
                            raise ValueError("not an object")
                        env, declined = screen(req, strict=outer.strict_env)
                    except ValueError as exc:
                        send({"err": f"memtray: error: bad request ({exc})\n"})
                        send({"exit": 2})
                        return
                    if declined is not None:
                        send({"declined": declined})
                        return
                    send(STARTED)
                    try:
                        with cmdenv.scope(env):
                            code = outer.handler(req, send)
                    except Exception as exc:
                        log.exception("forwarded command failed")
                        send({"err": f"memtray: error: {exc}\n"})
                        code = 1
                    send({"exit": code})
                finally:
                    outer._leave()

        old = os.umask(0o077)
        try:
            self._server = _server_class()(str(self.path), _H)
        finally:
            os.umask(old)
        self._thread = threading.Thread(target=self._server.serve_forever, name="memtray-ipc", daemon=True)
        self._thread.start()
        announce(self.home, str(self.path))  # found from the home, whatever a client's environment

    def stop_accepting(self) -> None:
        """Close the socket: queued connections are refused unrun (their clients retry)."""
        if self._server is not None:
            announce(self.home, None)
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def drain(self, timeout: float) -> bool:
        """Wait until the requests in flight have finished; False if some still run."""
        with self._cond:
            return self._cond.wait_for(lambda: self._active == 0, timeout)

    def close(self, drain: float = 0.0) -> None:
        self.stop_accepting()
        if drain:
            self.drain(drain)


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
