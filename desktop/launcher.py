"""The desktop as a front end of the CLI: what bare ``memtray`` starts (no Qt at import).

``memtray.core`` never imports this package. The console script finds
:data:`FRONTEND` through the ``memtray.frontends`` entry point (see
pyproject.toml), and a frozen build hands it to ``memtray.core.cli.main.main``.
It is the CLI's chart renderer too (:mod:`.charts`, Qt imported only then).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memtray.core.base.home import Home
from memtray.core.cli.frontend import NoRenderer


class DesktopFrontend:
    """Starts the tray app and adds ``toggle``, ``show`` and ``quit`` to the CLI."""

    def run(self, home: Home, argv: list[str]) -> int:
        from memtray.desktop.early import run  # the tray icon first, then the rest

        return int(run(home, argv))

    def add_commands(self, subparsers: Any) -> None:
        from memtray.desktop import cli_commands

        cli_commands.add_commands(subparsers)

    def plot_retention(self, report: dict[str, Any], path: Path) -> None:
        try:
            from memtray.desktop import charts
        except ImportError as exc:
            if (exc.name or "").startswith("memtray"):
                raise  # our own module is broken: a bug, not a missing toolkit
            raise NoRenderer(f"--plot draws the chart with Qt, and PySide6 could not be imported ({exc})") from exc
        charts.write_retention_png(report, path)


FRONTEND = DesktopFrontend()
