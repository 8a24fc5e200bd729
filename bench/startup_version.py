"""`memtray --version` start time, and proof that litellm is not imported on that path.

Usage: python bench/startup_version.py [REPEAT]
"""

from __future__ import annotations

import subprocess
import sys
import time

from _common import median


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    exe = [sys.executable, "-m", "memtray.core.cli", "--version"]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run(exe, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - t0)
    baseline = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        baseline.append(time.perf_counter() - t0)
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['memtray', '--version']\n"
        "try:\n"
        "    runpy.run_module('memtray.core.cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in ('litellm', 'openai', 'PySide6', 'dulwich', 'apscheduler', 'keyring') if m in sys.modules)\n"
        "print('imported heavy modules:', heavy or 'none')\n"
    )
    proof = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    print(f"{out.stdout.strip()}: `memtray --version` median {median(times) * 1000:.0f} ms over {repeat} runs "
          f"(bare `python -c pass`: {median(baseline) * 1000:.0f} ms)")
    print(proof.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
