"""Reading a file the user names (an attachment, an import): regular files only, bounded.

A path from outside may name anything: a FIFO (``open`` blocks until a writer comes,
forever), ``/dev/zero`` or ``/dev/urandom`` (reading never ends), a directory, a socket,
a 1 GiB file (sparse or not). :func:`open_regular` refuses all but a regular file
before a byte is read: the path is ``stat``-ed first, then opened with ``O_NONBLOCK``
(a FIFO swapped in meanwhile does not block the open) and the open descriptor is
``fstat``-ed again, so what is read is the regular file that was checked. The size is
checked before reading and :func:`read_capped` never reads past its cap, so a file
that grows while it is read is refused too. A symbolic link is followed and the file
it resolves to is named (:attr:`Opened.link`), so the user sees what was read.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from memtray.core.base.errors import MemtrayError
from memtray.core.base.fsutil import describe_oserror

__all__ = ["FileRefused", "Opened", "capped_lines", "open_regular", "read_capped"]

_CHUNK = 1 << 20
# O_NONBLOCK: opening a FIFO swapped in after the stat returns at once instead of waiting
# for a writer (Windows has no FIFOs to open this way, nor the flag).
if sys.platform == "win32":
    _FLAGS = os.O_RDONLY | os.O_BINARY | os.O_NOINHERIT
else:
    _FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class FileRefused(MemtrayError):
    """A file that is not read: missing, not a regular file, too large, unreadable."""

    hint = "Give the path of an ordinary file."


@dataclass(frozen=True)
class Opened:
    """A regular file opened for reading: the stream, the file it is, and its size."""

    stream: BinaryIO
    path: Path  # the file read (a symlink resolved)
    size: int
    link: Path | None = None  # the path given, when it was a symbolic link

    def note(self) -> str:
        """One line that says a link was followed ("" when none was)."""
        return f"{self.link} is a link to {self.path}; read {self.path}" if self.link is not None else ""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _why(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno == errno.ELOOP:  # (fsutil's words are about the data home's own links)
        return "a loop of symbolic links"
    return describe_oserror(exc)


def open_regular(path: Path | str, *, limit: int, what: str = "file") -> Opened:
    """Open ``path`` for reading if it is a regular file of at most ``limit`` bytes.

    Raises :class:`FileRefused` (never blocks, never reads) for anything else. The
    caller closes :attr:`Opened.stream` (it is a context manager).
    """
    given = Path(path).expanduser()
    try:
        link = given if given.is_symlink() else None
        real = given.resolve(strict=True) if link is not None else given
        st = os.stat(real)
    except OSError as exc:
        raise FileRefused(f"cannot read the {what} {given}: {_why(exc)}") from None
    except RuntimeError:  # a symlink loop on older Pythons
        raise FileRefused(f"cannot read the {what} {given}: a loop of symbolic links") from None
    shown = f"{given}" + (f" (a link to {real})" if link is not None else "")
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"the {what} {shown} is {_kind(st.st_mode)}, not a regular file; it is not read")
    if st.st_size > limit:
        raise FileRefused(f"the {what} {shown} is {st.st_size:,} bytes; the limit is {limit:,}",
                          hint="Give a smaller file (or the part that matters).")
    try:
        fd = os.open(real, _FLAGS)
    except OSError as exc:
        raise FileRefused(f"cannot read the {what} {shown}: {_why(exc)}") from None
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):  # swapped for something else between the stat and the open
            raise FileRefused(f"the {what} {shown} is {_kind(fst.st_mode)}, not a regular file; it is not read")
        if fst.st_size > limit:
            raise FileRefused(f"the {what} {shown} is {fst.st_size:,} bytes; the limit is {limit:,}",
                              hint="Give a smaller file (or the part that matters).")
        if sys.platform != "win32":
            os.set_blocking(fd, True)  # a regular file: reads never wait anyway
        stream = open(fd, "rb", closefd=True)  # noqa: SIM115 - returned to the caller, who closes it
    except BaseException:
        os.close(fd)
        raise
    return Opened(stream, real, fst.st_size, link)


def read_capped(opened: Opened, *, limit: int, what: str = "file") -> bytes:
    """The whole content of ``opened`` (then closed), refused if it passes ``limit`` bytes
    while being read (a file that grew since it was checked)."""
    with opened.stream as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"the {what} {opened.path} grew past {limit:,} bytes while it was read; it is not read")
    return data


def capped_lines(stream: BinaryIO, *, max_line: int, skipped: list[int]) -> Iterator[bytes]:
    """The lines of ``stream`` (a file's bytes), each at most ``max_line`` bytes: a longer
    line is read past in chunks, never whole, and its number is added to ``skipped``."""
    n = 0
    while True:
        line = stream.readline(max_line + 1)
        if not line:
            return
        n += 1
        if len(line) > max_line and not line.endswith(b"\n"):
            skipped.append(n)
            while True:  # the rest of the long line, chunk by chunk
                rest = stream.readline(_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            continue
        yield line
