"""The graphical front end the CLI is given (the desktop app), and how it is found.

The core never imports it: the console script finds it through the
``memtray.frontends`` entry point, and a frozen build passes it to
:func:`memtray.core.cli.main.main`. Besides starting the app and adding its
commands (``toggle``, ``show``, ``quit``), it draws charts: the CLI has no
renderer of its own, so ``memtray eval retention --plot`` asks the front end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home


class Frontend(Protocol):
    """A graphical front end the CLI can start and draw with."""

    def run(self, home: Home, argv: list[str]) -> int: ...

    def add_commands(self, subparsers: Any) -> None: ...

    def plot_retention(self, report: dict[str, Any], path: Path) -> None:
        """Write the PNG chart of a retention report (``Score.to_json()``) to ``path``.

        Raises :class:`NoRenderer` when the toolkit it draws with is missing.
        """
        ...


class NoRenderer(MemtrayError):
    """Charts are drawn by the desktop's toolkit (Qt), and it is not installed."""

    hint = "Install PySide6 (pip install PySide6-Essentials; `pip install memtray` brings it), or leave out --plot."


FRONTEND_GROUP = "memtray.frontends"
_frontend: list[Frontend | None] = []


def set_frontend(frontend: Frontend | None) -> None:
    """Use ``frontend`` for bare ``memtray``, its commands (toggle/show/quit) and charts."""
    _frontend[:] = [frontend]


def frontend() -> Frontend | None:
    """The injected front end, else the one installed under ``memtray.frontends``."""
    if not _frontend:
        found: Frontend | None = None
        from importlib.metadata import entry_points

        for ep in entry_points(group=FRONTEND_GROUP):
            try:
                found = ep.load()
            except ImportError:
                continue  # PySide6 missing or broken: the CLI still works
            break
        _frontend[:] = [found]
    return _frontend[0]


def renderer() -> Frontend:
    """The front end, for drawing a chart; :class:`NoRenderer` when none is installed."""
    fe = frontend()
    if fe is None:
        raise NoRenderer("--plot needs the desktop front end (PySide6) to draw the chart, and it is not installed")
    return fe


__all__ = ["FRONTEND_GROUP", "Frontend", "NoRenderer", "frontend", "renderer", "set_frontend"]
