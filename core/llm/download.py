"""Downloading a model file: progress, resume, checksum, disk space, cancellation.

:func:`fetch` gets one large file over HTTP(S) into ``DEST.part`` beside its final
name and only gives it that name once its size and sha256 match what the caller
expects, so a half-written or corrupt file is never used: one that does not
match is removed and the error says so. A broken connection is resumed where it
stopped (an HTTP ``Range`` request; a server that ignores it is read again from
the start), a bounded number of times in a row without progress; a download that
was cancelled or interrupted (Ctrl+C, the app closed) keeps its ``.part`` file, so
the next :func:`fetch` continues it. The free space is checked before the first
byte, a full disk on the way keeps what was written. Two processes never write
the same file (a lock beside it). No Qt, no litellm: the CLI, the desktop (on a
thread of its own) and the tests call it alike.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import http.client
import logging
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtray.core import __version__
from memtray.core.base.errors import EnvironmentProblem
from memtray.core.base.fsutil import describe_oserror, ensure_dir, fsync_dir

log = logging.getLogger(__name__)

CHUNK = 1 << 20
#: kept free beyond the file itself (the model's own use of the disk, logs, the log's growth)
SPACE_MARGIN = 64 << 20
#: attempts in a row that make no progress before giving up
RETRIES = 5
BACKOFF_CAP = 30.0
PROGRESS_EVERY = 0.1  # seconds between progress callbacks (and at the end)


class DownloadError(EnvironmentProblem):
    """A download did not complete; what was fetched so far is kept unless it is wrong."""

    hint = "Run the same download again: it continues where it stopped."


class ChecksumMismatch(DownloadError):
    hint = ("The file was removed. Try again; if it fails the same way, the hub's file changed "
            "or something on the way alters it, and memtray will not use it.")


class NotEnoughSpace(DownloadError):
    hint = "Free some disk space (what was downloaded so far is kept), then run the download again."


class DownloadBusy(DownloadError):
    hint = "Wait for the other download to finish (or stop it)."


class Cancelled(DownloadError):
    exit_code = 130
    hint = "Run the same download again to continue it."


@dataclass(frozen=True)
class Progress:
    done: int  # bytes on disk now
    total: int
    speed: float  # bytes per second over the last few seconds (0 until known)
    resumed_from: int  # bytes already there when this download started

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the current speed (None until a speed is known)."""
        return (self.total - self.done) / self.speed if self.speed > 0 else None


@dataclass(frozen=True)
class Result:
    path: Path
    size: int
    sha256: str
    resumed_from: int  # bytes that were already there (0: a fresh download)
    fetched: int  # bytes fetched by this call
    attempts: int  # connections made
    already: bool = False  # the file was there, complete and checked


ProgressFn = Callable[[Progress], None]


def part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def fetch(
    url: str,
    dest: Path,
    *,
    size: int,
    sha256: str,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    timeout: float = 30.0,
    retries: int = RETRIES,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    disk_usage: Callable[[Path], Any] = shutil.disk_usage,
) -> Result:
    """Download ``url`` to ``dest`` (module doc). Raises :class:`DownloadError` subclasses."""
    try:
        ensure_dir(dest.parent)
    except OSError as exc:
        raise DownloadError(f"cannot create {dest.parent}: {describe_oserror(exc)}") from exc
    with _Lock(dest):
        if dest.is_file() and dest.stat().st_size == size:
            if _hash_file(dest, cancel) == sha256:
                return Result(dest, size, sha256, size, 0, 0, already=True)
            log.warning("%s does not match its checksum; downloading it again", dest)
            dest.unlink()
        return _Download(url, dest, size, sha256.lower(), progress, cancel, timeout, retries, sleep, clock,
                         disk_usage).run()


class _Download:
    def __init__(self, url: str, dest: Path, size: int, sha256: str, progress: ProgressFn | None,
                 cancel: threading.Event | None, timeout: float, retries: int, sleep: Callable[[float], None],
                 clock: Callable[[], float], disk_usage: Callable[[Path], Any]) -> None:
        self.url, self.dest, self.size, self.sha256 = url, dest, size, sha256
        self.part = part_path(dest)
        self.progress, self.cancel, self.timeout, self.retries = progress, cancel, timeout, retries
        self.sleep, self.clock, self.disk_usage = sleep, clock, disk_usage
        self.hasher = hashlib.sha256()
        self.have = 0
        self.samples: list[tuple[float, int]] = []
        self.last_report = -1.0
        self.resumed_from = 0
        self.fetched = 0
        self.attempts = 0

    def run(self) -> Result:
        self.have = self.part.stat().st_size if self.part.is_file() else 0
        if self.have > self.size:
            self._restart()
        self._check_space()
        if self.have:
            self.hasher = _hasher_of(self.part, self.have, self.cancel)
        self.resumed_from = self.have
        stalled = 0
        while self.have < self.size:
            self._check_cancel()
            before = self.have
            try:
                self._connection()
            except _Retry as exc:
                stalled = 0 if self.have > before else stalled + 1
                if stalled >= self.retries:
                    raise DownloadError(f"the download of {self.dest.name} broke off {stalled} times in a row "
                                        f"({exc}); {human_size(self.have)} of {human_size(self.size)} are kept") from None
                delay = min(BACKOFF_CAP, 2.0 ** max(0, stalled - 1))
                log.info("download of %s interrupted (%s); resuming at %d in %.0fs", self.url, exc, self.have, delay)
                self.sleep(delay)
        self._report(force=True)
        digest = self.hasher.hexdigest()
        if digest != self.sha256:
            with contextlib.suppress(OSError):
                self.part.unlink()
            raise ChecksumMismatch(f"the downloaded {self.dest.name} does not match its checksum "
                                   f"(sha256 {digest[:16]}…, expected {self.sha256[:16]}…)")
        os.replace(self.part, self.dest)
        with contextlib.suppress(OSError):
            fsync_dir(self.dest.parent)
        return Result(self.dest, self.size, digest, self.resumed_from, self.fetched, self.attempts)

    # --- one connection -------------------------------------------------------------

    def _connection(self) -> None:
        self.attempts += 1
        headers = {"User-Agent": f"memtray/{__version__}", "Accept-Encoding": "identity"}
        if self.have:
            headers["Range"] = f"bytes={self.have}-"
        req = urllib.request.Request(self.url, headers=headers)
        try:
            resp = urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 416 and self.have:  # nothing past what we have: our .part is off; start over
                self._restart()
                raise _Retry("the server could not continue the partial file") from None
            if exc.code >= 500 or exc.code in (408, 429):
                raise _Retry(f"HTTP {exc.code}") from None
            raise _http_error(exc.code, self.url) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise _Retry(_reason(exc)) from None
        with resp:
            status = resp.status
            if status == 206:
                start, total = _content_range(resp.headers.get("Content-Range", ""))
                if total is not None and total != self.size:
                    raise _wrong_size(total, self.size, self.url)
                if start != self.have:
                    self._restart()
                    raise _Retry(f"the server resumed at byte {start}, not {self.have}")
            elif status == 200:
                if self.have:  # the server ignored the range: read it all again
                    self._restart()
                length = resp.headers.get("Content-Length")
                if length is not None and length.isdigit() and int(length) != self.size:
                    raise _wrong_size(int(length), self.size, self.url)
            else:
                raise DownloadError(f"{self.url} answered HTTP {status}")
            self._read(resp)

    def _read(self, resp: http.client.HTTPResponse) -> None:
        try:
            out = open(self.part, "ab")  # noqa: SIM115 (closed below; append: a resume continues it)
        except OSError as exc:
            raise DownloadError(f"cannot write {self.part}: {describe_oserror(exc)}") from exc
        with out:
            while self.have < self.size:
                self._check_cancel()
                try:
                    chunk = resp.read1(min(CHUNK, self.size - self.have))
                except (OSError, http.client.HTTPException) as exc:
                    raise _Retry(_reason(exc)) from None
                if not chunk:
                    raise _Retry(f"the connection closed after {self.have} of {self.size} bytes")
                try:
                    out.write(chunk)
                except OSError as exc:
                    if exc.errno == errno.ENOSPC:
                        raise NotEnoughSpace(f"the disk filled up while downloading {self.dest.name} "
                                             f"({human_size(self.have)} of {human_size(self.size)} kept)") from None
                    raise DownloadError(f"cannot write {self.part}: {describe_oserror(exc)}") from exc
                self.hasher.update(chunk)
                self.have += len(chunk)
                self.fetched += len(chunk)
                self._report()
            if resp.read(1):
                self._restart()
                raise DownloadError(f"{self.url} sent more than the expected {self.size} bytes; nothing was kept")
            out.flush()
            os.fsync(out.fileno())

    # --- helpers ----------------------------------------------------------------------

    def _restart(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.part.unlink()
        self.have = self.resumed_from = 0
        self.hasher = hashlib.sha256()
        self.samples.clear()

    def _check_space(self) -> None:
        need = self.size - self.have
        try:
            free = int(self.disk_usage(self.dest.parent).free)
        except OSError:
            return  # cannot tell: the write says so if it fills the disk
        if free < need + SPACE_MARGIN:
            raise NotEnoughSpace(f"{self.dest.name} needs {human_size(need + SPACE_MARGIN)} free in {self.dest.parent}; "
                                 f"there are {human_size(free)}")

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled(f"the download of {self.dest.name} was stopped at {human_size(self.have)} of "
                            f"{human_size(self.size)}; what was fetched is kept")

    def _report(self, force: bool = False) -> None:
        if self.progress is None:
            return
        now = self.clock()
        if not force and now - self.last_report < PROGRESS_EVERY:
            return
        self.last_report = now
        self.samples.append((now, self.have))
        while len(self.samples) > 2 and now - self.samples[0][0] > 5.0:
            self.samples.pop(0)
        t0, b0 = self.samples[0]
        speed = (self.have - b0) / (now - t0) if now > t0 and self.have >= b0 else 0.0
        self.progress(Progress(self.have, self.size, speed, self.resumed_from))


class _Retry(Exception):
    """A failure worth another connection (the network, the server's 5xx)."""


class _Lock:
    """One download per file: an flock on ``.NAME.lock`` beside it."""

    def __init__(self, dest: Path) -> None:
        self.path = dest.with_name(f".{dest.name}.lock")
        self.fd: int | None = None

    def __enter__(self) -> _Lock:
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DownloadBusy(f"another memtray process is downloading {self.path.name[1:-5]}") from None
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _hasher_of(path: Path, length: int, cancel: threading.Event | None) -> Any:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        left = length
        while left > 0:
            if cancel is not None and cancel.is_set():
                raise Cancelled(f"the download of {path.name.removesuffix('.part')} was stopped")
            block = f.read(min(CHUNK * 8, left))
            if not block:
                break
            h.update(block)
            left -= len(block)
    return h


def _hash_file(path: Path, cancel: threading.Event | None) -> str:
    return str(_hasher_of(path, path.stat().st_size, cancel).hexdigest())


def _content_range(value: str) -> tuple[int, int | None]:
    """``bytes START-END/TOTAL`` -> (START, TOTAL or None for ``*``)."""
    try:
        unit, _, rest = value.strip().partition(" ")
        span, _, total = rest.partition("/")
        start = int(span.split("-", 1)[0])
        if unit != "bytes":
            raise ValueError(unit)
        return start, None if total.strip() == "*" else int(total)
    except ValueError:
        return -1, None  # unreadable: treated as a resume at the wrong place


def _http_error(code: int, url: str) -> DownloadError:
    if code == 404:
        return DownloadError(f"{url} was not found (HTTP 404)",
                             hint="The hub may have moved the file; a newer memtray knows where it is now.")
    if code in (401, 403):
        return DownloadError(f"the hub refused the download of {url} (HTTP {code})",
                             hint="The file may need a login now; download it in a browser and put it in the "
                                  "models folder under the same name.")
    return DownloadError(f"{url} answered HTTP {code}", hint="Check the address (setting model_hub) and try again.")


def _wrong_size(got: int, want: int, url: str) -> DownloadError:
    return DownloadError(f"{url} is {got} bytes, not the {want} memtray expects; nothing was used",
                         hint="The hub's file changed; a newer memtray knows the new one.")


def _reason(exc: BaseException) -> str:
    inner = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(inner, socket.gaierror):
        return "the host name could not be resolved (offline?)"
    if isinstance(inner, ConnectionRefusedError):
        return "the connection was refused"
    if isinstance(inner, TimeoutError | socket.timeout):
        return "no answer in time"
    if isinstance(inner, http.client.IncompleteRead):
        return "the connection closed early"
    if isinstance(inner, OSError) and inner.strerror:
        return inner.strerror.lower()
    return str(inner) or type(inner).__name__


def human_size(n: float) -> str:
    """Bytes as people read them on a download page (decimal units: 1.93 GB)."""
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.0f} MB"
    return f"{n / 1e3:.0f} kB"


__all__ = ["Cancelled", "ChecksumMismatch", "DownloadBusy", "DownloadError", "NotEnoughSpace", "Progress", "Result",
           "fetch", "human_size", "part_path"]
