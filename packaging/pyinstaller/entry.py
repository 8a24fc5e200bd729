"""Entry point of the frozen (PyInstaller) memtray: the same ``memtray`` command line.

Code that restarts memtray as ``sys.executable -m memtray.core.cli ...`` (the
right thing from a venv) would hand ``-m memtray.core.cli`` to the frozen
executable, which is memtray itself: those two arguments are dropped here.
"""

from __future__ import annotations

import multiprocessing
import sys


def main() -> int:
    multiprocessing.freeze_support()
    if sys.argv[1:3] == ["-m", "memtray.core.cli"]:
        del sys.argv[1:3]
    from memtray.core.cli.main import main as cli_main
    from memtray.desktop.launcher import FRONTEND  # entry-point metadata may not be frozen

    return cli_main(desktop=FRONTEND)


if __name__ == "__main__":
    sys.exit(main())
