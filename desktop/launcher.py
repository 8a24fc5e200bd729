"""The desktop as a front end of the CLI: what bare ``memtray`` starts (no Qt at import).

``memtray.core`` never imports this package. The console script finds
:data:`FRONTEND` through the ``memtray.frontends`` entry point (see
pyproject.toml), and a frozen build hands it to ``memtray.core.cli.main.main``.
It is the CLI's chart renderer too (:mod:`.charts`, Qt imported only then).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtray.core.base.errors import NoRenderer
from memtray.core.base.home import Home

if TYPE_CHECKING:  # the type only: importing the launcher imports no Qt
    from .instance import Serve


class DesktopFrontend:
    """Starts the tray app (serving forwarded commands with the CLI's ``serve``) and draws charts."""

    def run(self, home: Home, argv: list[str], serve: Serve) -> int:
        from memtray.desktop.start import run  # the tray icon first, then the rest

        return int(run(home, argv, serve))

    def plot_retention(self, report: dict[str, Any], path: Path) -> None:
        try:
            from memtray.desktop import charts
        except ImportError as exc:
            if (exc.name or "").startswith("memtray"):
                raise  # our own module is broken: a bug, not a missing toolkit
            raise NoRenderer(f"--plot draws the chart with Qt, and PySide6 could not be imported ({exc})") from exc
        charts.write_retention_png(report, path)


FRONTEND = DesktopFrontend()
