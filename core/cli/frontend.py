"""The graphical front end the CLI is given (the desktop app), and how it is found.

The core never imports it: the console script finds it through the
``memtray.frontends`` entry point, and a frozen build passes it to
:func:`memtray.core.cli.main.main`. Nor does it import the CLI: it is handed what
it needs of it (the function that serves a forwarded command), and the commands
that talk to it (``toggle``, ``show``, ``quit``: :mod:`.instance`) are the CLI's
own, added when a front end is installed. It draws charts too: the CLI has no
renderer of its own, so ``memtray eval retention --plot`` asks the front end.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from memtray.core.base.errors import NoRenderer
from memtray.core.base.home import Home

#: Runs a forwarded command against the instance's App (:func:`memtray.core.cli.main.serve`):
#: (app, request, send) -> exit status.
Serve = Callable[[Any, dict[str, Any], Callable[[dict[str, Any]], None]], int]


class Frontend(Protocol):
    """A graphical front end the CLI can start and draw with."""

    def run(self, home: Home, argv: list[str], serve: Serve) -> int:
        """Start the app on ``home``; it serves forwarded commands with ``serve``."""
        ...

    def plot_retention(self, report: dict[str, Any], path: Path) -> None:
        """Write the PNG chart of a retention report (``Score.to_json()``) to ``path``.

        Raises :class:`NoRenderer` when the toolkit it draws with is missing.
        """
        ...


FRONTEND_GROUP = "memtray.frontends"
_frontend: list[Frontend | None] = []


def set_frontend(frontend: Frontend | None) -> None:
    """Use ``frontend`` for bare ``memtray``, its commands (toggle/show/quit) and charts."""
    _frontend[:] = [frontend]


def frontend() -> Frontend | None:
    """The injected front end, else the one installed under ``memtray.frontends``."""
    if not _frontend:
        found: Frontend | None = None
        for target in _scan_entry_points() or _metadata_entry_points():
            try:
                found = _load(target)
            except ImportError:
                continue  # PySide6 missing or broken: the CLI still works
            break
        _frontend[:] = [found]
    return _frontend[0]


def _load(target: str) -> Any:
    """``module:attr`` (an entry point's value) -> the object."""
    import importlib

    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module.strip())
    for part in attr.strip().split("."):
        if part:
            obj = getattr(obj, part)
    return obj


def _scan_entry_points() -> list[str]:
    """The ``memtray.frontends`` entry points of the distributions installed in plain
    directories on sys.path, read from their ``entry_points.txt``.

    What :func:`importlib.metadata.entry_points` finds there too, without importing
    importlib.metadata (and email, zipfile...) and parsing every distribution's
    metadata: that costs bare ``memtray`` about a tenth of a second before the tray
    shows. Anything else (zipped eggs, custom finders) is left to the fallback.
    """
    import os
    import sys

    found: list[str] = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(entry or ".", name, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            section = ""
            for raw in text.splitlines():
                line = raw.strip()
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif section == FRONTEND_GROUP and "=" in line and not line.startswith(("#", ";")):
                    found.append(line.partition("=")[2].strip())
    return found


def _metadata_entry_points() -> list[str]:
    from importlib.metadata import entry_points

    return [ep.value for ep in entry_points(group=FRONTEND_GROUP)]


def renderer() -> Frontend:
    """The front end, for drawing a chart; :class:`NoRenderer` when none is installed."""
    fe = frontend()
    if fe is None:
        raise NoRenderer("--plot needs the desktop front end (PySide6) to draw the chart, and it is not installed")
    return fe


__all__ = ["FRONTEND_GROUP", "Frontend", "NoRenderer", "Serve", "frontend", "renderer", "set_frontend"]
