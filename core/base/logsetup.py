"""Application logging: a rotating file under logs/, secrets redacted, stderr quiet.

Logging never gets in the way: a handler whose stream is closed (a test's
captured stderr, a file on a full disk, a terminal gone after a quit) drops the
record instead of printing ``--- Logging error ---`` and a traceback. Stderr is
looked up at each record, not captured once, so a thread that logs after its
test or command ended never writes to a closed stream.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys

from memtray.core.base.errors import MemtrayError
from memtray.core.base.fsutil import FILE_MODE, ensure_dir
from memtray.core.base.home import Home
from memtray.core.base.redact import redact, redact_obj

_configured: str | None = None
_installed: list[logging.Handler] = []


class QuietRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """The log file: a failed write (disk full, file closed) is dropped silently."""

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is not None and getattr(self.stream, "closed", False):
            return
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        pass


class CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is now; skips a closed or missing one."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass  # always the current sys.stderr

    def emit(self, record: logging.LogRecord) -> None:
        stream = sys.stderr
        if stream is None or getattr(stream, "closed", False):
            return
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def reset() -> None:
    """Remove and close the handlers :func:`setup` installed (tests; a process done logging)."""
    global _configured
    root = logging.getLogger()
    for old in _installed:
        root.removeHandler(old)
        old.close()
    _installed.clear()
    _configured = None


def setup(home: Home, *, verbose: bool = False) -> None:
    """Log INFO+ to logs/memtray.log (rotated, 0600) and WARNING+ to stderr.

    Set up once per process and home: a second home (tests) replaces the handlers
    of the first, which are closed, instead of piling up beside them.
    """
    global _configured
    # logging's own failures (a closed stream, a full disk) are never printed as tracebacks
    logging.raiseExceptions = False
    root = logging.getLogger()
    key = str(home.root)
    if _configured == key:
        return
    reset()
    _configured = key
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    redactor = RedactingFilter()
    try:
        ensure_dir(home.logs)
        path = home.logs / "memtray.log"
        for p in (path, *(path.with_name(f"{path.name}.{i}") for i in range(1, 4))):
            if p.is_symlink():  # planted: never write the app's log through it
                p.unlink()
        fh = QuietRotatingFileHandler(path, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
        if os.name != "nt":
            os.chmod(path, FILE_MODE)
        fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        fh.addFilter(redactor)
        root.addHandler(fh)
        _installed.append(fh)
    except (OSError, MemtrayError):
        pass  # logging must never stop the app; stderr still works
    err = CurrentStderrHandler()
    err.setLevel(logging.DEBUG if verbose else logging.WARNING)
    err.setFormatter(logging.Formatter("memtray: %(levelname)s: %(message)s"))
    err.addFilter(redactor)
    root.addHandler(err)
    _installed.append(err)


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message, arguments and traceback.

    The message is formatted (``msg % args``) before redacting, so a secret split
    between the format string and its arguments is still caught; the record
    then carries the finished text and no arguments. A traceback is formatted
    here (with the default :class:`logging.Formatter`) and stored redacted in
    ``record.exc_text``, which handlers' formatters then use as is. Attach the
    filter to handlers: a logger's own filters do not see records propagated
    from child loggers.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            # A bad format string: logging reports that itself when the handler
            # formats the record; redact the pieces so the report leaks nothing.
            record.msg = redact_obj(record.msg)
            record.args = redact_obj(record.args)
        else:
            record.msg = redact(message)
            record.args = ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
