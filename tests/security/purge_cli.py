"""``memtray`` with the ``purge`` command registered, for subprocess tests.

Until core/cli.build_parser calls ``purge.add_commands(sub)`` itself this adds
it; afterwards it changes nothing. Run as ``python tests/security/purge_cli.py ARGS``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from memtray.core.admin import purge
from memtray.core.cli import main as cli


def with_purge(build: Callable[[], argparse.ArgumentParser]) -> Callable[[], argparse.ArgumentParser]:
    def build_parser() -> argparse.ArgumentParser:
        parser = build()
        for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
            if isinstance(action, argparse._SubParsersAction) and "purge" not in action.choices:
                purge.add_commands(action)
        return parser

    return build_parser


if __name__ == "__main__":
    cli.build_parser = with_purge(cli.build_parser)  # type: ignore[method-assign]
    sys.exit(cli.main())
