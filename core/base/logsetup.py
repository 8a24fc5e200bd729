"""Application logging: a rotating file under logs/, secrets redacted, stderr quiet."""

from __future__ import annotations

import logging
import logging.handlers
import os

from memtray.core.base.errors import MemtrayError
from memtray.core.base.fsutil import FILE_MODE, ensure_dir
from memtray.core.base.home import Home
from memtray.core.base.redact import RedactingFilter

_configured: set[str] = set()


def setup(home: Home, *, verbose: bool = False) -> None:
    """Log INFO+ to logs/memtray.log (rotated, 0600) and WARNING+ to stderr."""
    root = logging.getLogger()
    key = str(home.root)
    if key in _configured:
        return
    _configured.add(key)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    redactor = RedactingFilter()
    try:
        ensure_dir(home.logs)
        path = home.logs / "memtray.log"
        for p in (path, *(path.with_name(f"{path.name}.{i}") for i in range(1, 4))):
            if p.is_symlink():  # planted: never write the app's log through it
                p.unlink()
        fh = logging.handlers.RotatingFileHandler(path, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
        if os.name != "nt":
            os.chmod(path, FILE_MODE)
        fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        fh.addFilter(redactor)
        root.addHandler(fh)
    except (OSError, MemtrayError):
        pass  # logging must never stop the app; stderr still works
    err = logging.StreamHandler()
    err.setLevel(logging.DEBUG if verbose else logging.WARNING)
    err.setFormatter(logging.Formatter("memtray: %(levelname)s: %(message)s"))
    err.addFilter(redactor)
    root.addHandler(err)
