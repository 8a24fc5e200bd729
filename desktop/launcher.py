"""The desktop as a front end of the CLI: what bare ``memtray`` starts (no Qt at import).

``memtray.core`` never imports this package. The console script finds
:data:`FRONTEND` through the ``memtray.frontends`` entry point (see
pyproject.toml), and a frozen build hands it to ``memtray.core.cli.main.main``.
"""

from __future__ import annotations

from typing import Any

from memtray.core.base.home import Home


class DesktopFrontend:
    """Starts the tray app and adds ``toggle``, ``show`` and ``quit`` to the CLI."""

    def run(self, home: Home, argv: list[str]) -> int:
        from memtray.desktop.main import run

        return int(run(home, argv))

    def add_commands(self, subparsers: Any) -> None:
        from memtray.desktop import cli_commands

        cli_commands.add_commands(subparsers)


FRONTEND = DesktopFrontend()
