"""Fault injection for the storage layer: failing writes, fsyncs and renames; power cuts.

Test and benchmark support, kept in core because it plugs into core's two
file-system doors: :class:`~memtray.core.log.eventlog.FileOps` (the event log) and
:data:`memtray.core.base.fsutil.OPS` (every atomic save: checkpoints, work tree,
config). Nothing in memtray uses it unless a test or ``bench/crash_soak.py``
passes it in.

* :class:`Fault` says which call fails, after how many successes, how often,
  with which errno, and (for writes) how many bytes reach the file first.
* :class:`FaultyFileOps` applies faults to the log and remembers how far each
  file was fsynced, so :meth:`FaultyFileOps.power_cut` can drop what the page
  cache held but the disk never got (optionally keeping a prefix of it: disks
  persist unsynced data in arbitrary pieces).
* :class:`SplitWriteFileOps` writes each append in several ``write`` calls, so a
  SIGKILL can land between them and leave a torn record behind.
* :func:`fs_faults` swaps a :class:`FaultyFsOps` into :mod:`fsutil` for a block.
"""

from __future__ import annotations

import contextlib
import errno as errno_mod
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memtray.core.base import fsutil
from memtray.core.base.fsutil import FileOps


class PowerCut(BaseException):
    """Raised by an injected fault to stop the "machine" at that call.

    A BaseException so no ``except Exception`` / ``except OSError`` in memtray can
    swallow it: like a real power cut, nothing after the call runs.
    """


@dataclass
class Fault:
    """Make the ``after``-th call (0-based) of ``op`` and the following ``times - 1`` fail.

    ``op``: ``open``, ``write``, ``fsync``, ``truncate``, ``fsync_dir`` (the log) or
    ``write``, ``fsync``, ``replace`` (atomic saves). ``times=-1`` fails forever.
    ``partial``: for ``write``, this many bytes are written before the failure
    (a short write that left bytes behind). ``power_cut``: raise :class:`PowerCut`
    instead of an OSError.
    """

    op: str
    errno: int = errno_mod.EIO
    after: int = 0
    times: int = 1
    partial: int | None = None
    power_cut: bool = False

    def error(self) -> BaseException:
        if self.power_cut:
            return PowerCut(f"power cut during {self.op}")
        return OSError(self.errno, f"injected: {os.strerror(self.errno)}")


class _Schedule:
    """Counts calls per op and says which fault (if any) fires on this one."""

    def __init__(self, faults: list[Fault] | None) -> None:
        self.faults = list(faults or [])
        self.calls: dict[str, int] = {}
        self.fired: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def check(self, op: str) -> Fault | None:
        with self._lock:
            n = self.calls.get(op, 0)
            self.calls[op] = n + 1
            for f in self.faults:
                if f.op != op or n < f.after:
                    continue
                if f.times >= 0 and n >= f.after + f.times:
                    continue
                self.fired.append((op, n))
                return f
            return None

    def add(self, fault: Fault) -> None:
        """Arm ``fault`` counting from now (``after`` is relative to calls made so far)."""
        with self._lock:
            base = self.calls.get(fault.op, 0)
            self.faults.append(Fault(fault.op, fault.errno, base + fault.after, fault.times,
                                     fault.partial, fault.power_cut))

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()


class FaultyFileOps(FileOps):
    """The log's OS calls with injected failures and a record of what was fsynced."""

    def __init__(self, faults: list[Fault] | None = None) -> None:
        self.schedule = _Schedule(faults)
        self._paths: dict[int, Path] = {}
        #: bytes of each file known durable (size at its last successful fsync)
        self.synced: dict[Path, int] = {}

    def arm(self, fault: Fault) -> None:
        self.schedule.add(fault)

    def disarm(self) -> None:
        self.schedule.clear()

    def _maybe_fail(self, op: str) -> Fault | None:
        f = self.schedule.check(op)
        if f is not None and not (op == "write" and f.partial):
            raise f.error()
        return f

    def open_append(self, path: Path) -> int:
        self._maybe_fail("open")
        fd = super().open_append(path)
        self._paths[fd] = Path(path)
        self.synced.setdefault(Path(path), os.fstat(fd).st_size)
        return fd

    def write(self, fd: int, data: bytes) -> int:
        f = self._maybe_fail("write")
        if f is not None:  # a short write that left some bytes behind, then the error
            os.write(fd, data[: f.partial or 0])
            raise f.error()
        return super().write(fd, data)

    def fsync(self, fd: int) -> None:
        self._maybe_fail("fsync")
        super().fsync(fd)
        path = self._paths.get(fd)
        if path is not None:
            self.synced[path] = os.fstat(fd).st_size

    def truncate(self, fd: int, size: int) -> None:
        self._maybe_fail("truncate")
        super().truncate(fd, size)

    def close(self, fd: int) -> None:
        self._paths.pop(fd, None)
        super().close(fd)

    def fsync_dir(self, path: Path) -> None:
        self._maybe_fail("fsync_dir")
        super().fsync_dir(path)

    def power_cut(self, keep_unsynced: int = 0) -> dict[Path, int]:
        """Lose what was written but never fsynced; keep ``keep_unsynced`` bytes of it.

        Returns the bytes lost per file. Call after the process "died" (the log's
        descriptor may still be open: truncation works on the path).
        """
        lost: dict[Path, int] = {}
        for path, size in self.synced.items():
            try:
                actual = path.stat().st_size
            except FileNotFoundError:
                continue
            keep = min(actual, size + max(keep_unsynced, 0))
            if actual > keep:
                os.truncate(path, keep)
                lost[path] = actual - keep
        return lost


class SplitWriteFileOps(FileOps):
    """Write each append in 2-4 pieces with tiny pauses, so kills can tear a record."""

    def __init__(self, rng: random.Random, pause: float = 0.0005) -> None:
        self.rng = rng
        self.pause = pause

    def write(self, fd: int, data: bytes) -> int:
        if len(data) < 8:
            return super().write(fd, data)
        cuts = sorted({self.rng.randrange(1, len(data)) for _ in range(self.rng.randint(1, 3))})
        done = 0
        for cut in [*cuts, len(data)]:
            piece = data[done:cut]
            while piece:
                n = super().write(fd, piece)
                piece = piece[n:]
            done = cut
            if cut != len(data) and self.pause:
                time.sleep(self.pause * self.rng.random())
        return done


class FaultyFsOps(fsutil.FsOps):
    """:class:`~memtray.core.base.fsutil.FsOps` with injected failures (see :class:`Fault`)."""

    def __init__(self, faults: list[Fault] | None = None) -> None:
        self.schedule = _Schedule(faults)

    def arm(self, fault: Fault) -> None:
        self.schedule.add(fault)

    def disarm(self) -> None:
        self.schedule.clear()

    def write(self, fd: int, data: memoryview) -> int:
        f = self.schedule.check("write")
        if f is not None:
            if f.partial:
                os.write(fd, data[: f.partial])
            raise f.error()
        return super().write(fd, data)

    def fsync(self, fd: int) -> None:
        f = self.schedule.check("fsync")
        if f is not None:
            raise f.error()
        super().fsync(fd)

    def replace(self, src: Path, dst: Path) -> None:
        f = self.schedule.check("replace")
        if f is not None:
            raise f.error()
        super().replace(src, dst)


@contextlib.contextmanager
def fs_faults(*faults: Fault) -> Iterator[FaultyFsOps]:
    """Route every atomic save through a :class:`FaultyFsOps` for the block."""
    ops = FaultyFsOps(list(faults))
    previous = fsutil.OPS
    fsutil.OPS = ops
    try:
        yield ops
    finally:
        fsutil.OPS = previous


#: Crash tests set this to a step name; :func:`crash_point` then SIGKILLs the process there.
CRASH_ENV = "MEMTRAY_TEST_CRASH_AT"


def crash_point(name: str) -> None:
    """Test hook: SIGKILL this process here if ``MEMTRAY_TEST_CRASH_AT == name``.

    Used by the crash tests to stop a real process between two durable steps
    (event append, git objects and ref, work tree). A no-op unless the variable
    is set; never set it outside tests.
    """
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
