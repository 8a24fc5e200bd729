"""The data home: where it is, its layout, and the single-writer lock.

``MEMTRAY_HOME`` (default: the platform's user data dir) holds config.toml,
events/, state/, memory/, logs/ and memtray.lock. The home is 0700 and its
files 0600 whatever the umask; links planted inside it are never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from memtray.core.base import holder
from memtray.core.base.errors import AlreadyRunning, EnvironmentProblem, UnsafePath
from memtray.core.base.fsutil import FILE_MODE, ensure_dir, tighten_top


def default_home() -> Path:
    env = os.environ.get("MEMTRAY_HOME")
    if env:
        return Path(env).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_data_dir("memtray", appauthor=False)).absolute()


@dataclass(frozen=True)
class Home:
    """Absolute paths of everything in the data home."""

    root: Path

    @classmethod
    def resolve(cls, root: Path | str | None = None) -> Home:
        path = Path(root).expanduser().absolute() if root is not None else default_home()
        return cls(path)

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def events(self) -> Path:
        return self.root / "events"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def lockfile(self) -> Path:
        return self.root / "memtray.lock"

    @property
    def device_file(self) -> Path:
        return self.root / "device.json"

    @property
    def socket_name(self) -> str:
        """Name of the desktop's single-instance socket: one per data home."""
        import hashlib

        digest = hashlib.sha1(str(self.root).encode()).hexdigest()[:12]
        return f"memtray-{os.getuid() if hasattr(os, 'getuid') else 'u'}-{digest}"

    def create(self) -> Home:
        """Create the layout with private permissions and tighten anything too open.

        The process umask becomes 077, so everything written below the home later
        (git objects by dulwich, the SQLite index, logs) is private whatever the
        user's umask. Only the top level is re-checked here, which keeps start-up
        independent of the number of git objects; `memtray doctor` walks it all.
        """
        if os.name != "nt":
            os.umask(0o077)
        ensure_dir(self.root)
        for sub in (self.events, self.state, self.logs):
            ensure_dir(sub)
        if self.memory.is_symlink():  # git (dulwich) would follow it
            raise UnsafePath(f"{self.memory} is a symbolic link; memtray does not follow links in its data home")
        for sub in (self.root, self.events, self.state, self.logs):
            tighten_top(sub)
        if self.memory.is_dir():
            tighten_top(self.memory)
        return self


class HomeLock:
    """Exclusive, advisory lock on the data home: one writer per home.

    The lock is released by the kernel when the process dies, so a crash never
    leaves a stale lock behind. The holder writes its record into the file
    (:mod:`memtray.core.base.holder`: pid, command, and the socket it serves once
    :func:`announce` says so), so a second process can say who holds the home and
    find the instance whatever its own environment.
    """

    def __init__(self, home: Home) -> None:
        self.home = home
        self._fd: int | None = None

    def acquire(self) -> HomeLock:
        ensure_dir(self.home.root)
        path = self.home.lockfile
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(f"{path} is a symbolic link; memtray does not follow links in its data home") from None
            raise EnvironmentProblem(f"could not open {path}: {exc.strerror}") from exc
        try:
            _lock_fd(fd)
        except BlockingIOError:
            os.close(fd)
            raise AlreadyRunning(f"another memtray process{held_by(self.home)} is using {self.home.root}") from None
        except OSError as exc:
            os.close(fd)
            raise EnvironmentProblem(f"could not lock {path}: {exc.strerror}") from exc
        self._fd = fd
        self._write(holder.encode())
        with _held_lock:
            _held[str(self.home.root)] = self
        return self

    def _write(self, record: bytes) -> None:
        # The record only lets other processes say who holds the home and find its socket:
        # on a full disk the lock (which needs no space) is still ours, so a failed write
        # is not fatal (they fall back to the socket their own environment names).
        # Written over the old text, then cut to length: a reader sees the whole old or new
        # record, or one it cannot decode and reads again.
        fd = self._fd
        if fd is None:
            return
        try:
            os.pwrite(fd, record, 0)
            os.ftruncate(fd, len(record))
        except OSError as exc:
            import logging

            logging.getLogger(__name__).info("could not write the holder's record into %s: %s",
                                             self.home.lockfile, exc.strerror)

    def release(self) -> None:
        if self._fd is not None:
            with _held_lock:
                if _held.get(str(self.home.root)) is self:
                    del _held[str(self.home.root)]
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> HomeLock:
        return self.acquire()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


_held: dict[str, HomeLock] = {}
_held_lock = threading.Lock()


def announce(home: Home, socket: str | None) -> bool:
    """Say in this process's record of ``home`` that it serves at ``socket`` (None: it has
    stopped accepting). False when this process does not hold the home."""
    with _held_lock:
        lock = _held.get(str(home.root))
        if lock is None:
            return False
        lock._write(holder.encode(socket))
    return True


def current_holder(home: Home) -> holder.Holder | None:
    """The live process that holds ``home``, as its record names it (None: nobody named)."""
    return holder.read(home.lockfile)


def held_by(home: Home) -> str:
    """`` (pid 4242: memtray memory log)`` for a message, or "" when nobody is named."""
    found = current_holder(home)
    return f" ({found.describe()})" if found is not None else ""


def _lock_fd(fd: int) -> None:
    if os.name == "nt":  # pragma: no cover - exercised on Windows only
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EDEADLK):
                raise BlockingIOError from exc
            raise
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def device_id(home: Home) -> str:
    """This data home's device id (``d`` + 12 hex digits), chosen at first use.

    Sync keeps one log per device: the id names this device's stream on a remote
    and in a fact id or event that must say where it was made. It lives in
    ``device.json`` beside the log (not in config.toml, which a user may copy to
    another machine); a damaged file is replaced by a new id, which only makes the
    device look new to its peers.
    """
    import json
    import secrets
    import socket

    from memtray.core.base.fsutil import atomic_write

    path = home.device_file
    try:
        ident = json.loads(path.read_text(encoding="utf-8"))["id"]
        if isinstance(ident, str) and len(ident) == 13 and ident[0] == "d" and all(c in "0123456789abcdef" for c in ident[1:]):
            return ident
    except (OSError, ValueError, KeyError, TypeError):
        pass
    ident = "d" + secrets.token_hex(6)
    body = {"id": ident, "name": socket.gethostname()}
    atomic_write(path, json.dumps(body) + "\n")
    return ident


def new_device_id(home: Home) -> str:
    """A fresh device id, not the one ``home`` has now (``memtray sync --new-device``)."""
    import secrets

    old = device_id(home)
    while True:
        ident = "d" + secrets.token_hex(6)
        if ident != old:
            return ident


def set_device_id(home: Home, ident: str) -> None:
    """Give ``home`` the device id ``ident`` (a copied home becoming a device of its own)."""
    import json
    import socket

    from memtray.core.base.fsutil import atomic_write

    atomic_write(home.device_file, json.dumps({"id": ident, "name": socket.gethostname()}) + "\n")


class DeviceId:
    """:func:`device_id` for a long-running holder, read again when ``device.json`` changes.

    A running desktop or daemon must notice ``memtray sync --new-device`` made in
    another process (or forwarded to it and handled by another service): the id is
    cached with the file's identity (inode, size, mtime), which one ``stat`` checks,
    and read again whenever that differs. ``device.json`` is only ever replaced whole
    (an atomic write), so a new id always comes with a new inode.
    """

    def __init__(self, home: Home) -> None:
        self.home = home
        self._id: str | None = None
        self._key: tuple[int, int, int] | None = None

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.home.device_file)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def get(self) -> str:
        key = self._stat()
        if self._id is None or key is None or key != self._key:
            self._id = device_id(self.home)
            self._key = self._stat()
        return self._id
