"""File-system primitives every save goes through: atomic write, dir fsync, safe modes.

One helper for every file save (temp file in the same directory, fsync,
``os.replace``, fsync the directory) so a crash leaves either the old or the new
file, never half of one. Files memtray creates are 0600 and directories 0700
whatever the umask.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from memtray.core.base.errors import EnvironmentProblem, LogWriteError, UnsafePath

FILE_MODE = 0o600
DIR_MODE = 0o700
LINK_HINT = "Run `memtray doctor --repair`: it removes links planted in the data home (never what they point to)."


class DiskError(EnvironmentProblem):
    """Saving a file failed (disk full, I/O error, read-only file system)."""


class FsOps:
    """The OS calls behind :func:`atomic_write` and :func:`fsync_dir`.

    :mod:`memtray.core.base.faults` swaps in a subclass that fails (ENOSPC, EIO) on
    write, fsync or rename, so the fault tests reach every save through one door.
    """

    def write(self, fd: int, data: memoryview) -> int:
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def replace(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)


#: The layer in use (module global so tests can substitute it for the whole process).
OPS = FsOps()


def describe_oserror(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    if exc.errno == getattr(errno, "EDQUOT", -1):
        return "the disk quota is used up"
    if exc.errno == errno.EFBIG:
        return "the file would be larger than the file system allows"
    if exc.errno == errno.EIO:
        return "an I/O error occurred (the disk may be failing)"
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link, and memtray never follows links inside its data home"
    return exc.strerror or str(exc)


def fsync_dir(path: Path) -> None:
    """Make a directory entry (create/rename) durable. No-op where unsupported."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        OPS.fsync(fd)
    finally:
        os.close(fd)


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and parents) as 0700; refuse a symlink in its place."""
    if path.is_symlink():
        raise UnsafePath(f"{path} is a symbolic link; memtray does not follow links in its data home")
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if os.name != "nt":
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode != DIR_MODE:
            os.chmod(path, DIR_MODE)
    return path


def atomic_write(path: Path, data: bytes | str, *, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path = Path(path)
    if path.is_symlink():
        raise UnsafePath(f"{path} is a symbolic link; refusing to write through it")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _nofollow(), mode)
        try:
            view = memoryview(data)
            while view:
                n = OPS.write(fd, view)
                view = view[n:]
            OPS.fsync(fd)
        finally:
            os.close(fd)
        if os.name != "nt":
            os.chmod(tmp, mode)
        OPS.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise DiskError(f"could not save {path}: {describe_oserror(exc)}") from exc


def _nofollow() -> int:
    return getattr(os, "O_NOFOLLOW", 0)


def open_append(path: Path) -> int:
    """Open ``path`` for appending (created 0600); never through a symlink."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _nofollow(), FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"{path} is a symbolic link; refusing to write through it") from exc
        raise LogWriteError(f"could not open {path}: {describe_oserror(exc)}") from exc
    return fd


def check_private(path: Path) -> list[str]:
    """Return problems with the permissions of ``path`` and everything below it."""
    problems: list[str] = []
    if os.name == "nt" or not path.exists():
        return problems
    for root, dirs, files in os.walk(path, followlinks=False):
        rootp = Path(root)
        for name in dirs + files:
            p = rootp / name
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                problems.append(f"{p} is a symbolic link")
                continue
            want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
            if stat.S_IMODE(st.st_mode) & 0o077:
                problems.append(f"{p} is readable by others (mode {stat.S_IMODE(st.st_mode):o}, want {want:o})")
    return problems


def fix_private(path: Path) -> None:
    """Tighten permissions below ``path`` (symlinks are left alone, never followed)."""
    if os.name == "nt" or not path.exists():
        return
    os.chmod(path, DIR_MODE)
    for root, dirs, files in os.walk(path, followlinks=False):
        rootp = Path(root)
        for name in dirs + files:
            p = rootp / name
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
            if stat.S_IMODE(st.st_mode) != want and stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(p, want)


def tighten_top(path: Path) -> None:
    """Make ``path`` and its direct entries private (no recursion; links untouched)."""
    if os.name == "nt" or not path.exists():
        return
    os.chmod(path, DIR_MODE)
    with os.scandir(path) as it:
        for entry in it:
            if entry.is_symlink():
                continue
            st = entry.stat(follow_symlinks=False)
            want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
            if stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(entry.path, want)


class FileOps:
    """The OS calls the log makes; tests substitute a fault-injecting subclass."""

    def open_append(self, path: Path) -> int:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)

    def write(self, fd: int, data: bytes) -> int:
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def close(self, fd: int) -> None:
        os.close(fd)

    def fsync_dir(self, path: Path) -> None:
        fsync_dir(path)
