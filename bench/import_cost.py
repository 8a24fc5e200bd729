"""What each heavy dependency adds to a process: resident memory, modules, import time.

Usage: python bench/import_cost.py [REPEAT]

Explains the desktop's idle RSS (bench/desktop_startup.py): each dependency is
imported the way memtray imports it (litellm through ``llm.load_litellm``) in a
fresh process, REPEAT times; the figures are medians. RSS is VmRSS from
/proc/self/status before and after; "modules" counts new ``sys.modules`` entries,
with the packages that brought most of them.
"""

from __future__ import annotations

import json
import subprocess
import sys

from _common import median

PROBE = r"""
import collections, json, os, sys, time

def rss():
    with open(f"/proc/{os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0

import memtray.core.base.home  # the baseline: Python plus memtray's own core modules
r0, before = rss(), set(sys.modules)
t0 = time.perf_counter()
exec(sys.argv[1])
dt = time.perf_counter() - t0
new = set(sys.modules) - before
top = collections.Counter(m.split(".")[0] for m in new).most_common(4)
print(json.dumps({"rss": rss() - r0, "modules": len(new), "seconds": dt, "top": top}))
"""

IMPORTS = {
    "litellm (llm.load_litellm)": "from memtray.core.llm.client import load_litellm; load_litellm()",
    "PySide6 (desktop/qt.py)": "import memtray.desktop.qt",
    "dulwich (repo, index, porcelain)": "import dulwich.repo, dulwich.index, dulwich.porcelain",
    "apscheduler (BackgroundScheduler)": "import apscheduler.schedulers.background",
    "keyring": "import keyring",
}


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(f"import cost over {repeat} fresh processes each (median); baseline: Python + memtray.core.base.home")
    print(f"  {'import':36} {'RSS added':>10} {'modules':>8} {'time':>9}  most modules from")
    for label, stmt in IMPORTS.items():
        runs = []
        for _ in range(repeat):
            out = subprocess.run([sys.executable, "-c", PROBE, stmt], capture_output=True, text=True)
            if out.returncode != 0:
                print(f"  {label:36} failed: {out.stderr.strip().splitlines()[-1:]}")
                break
            runs.append(json.loads(out.stdout))
        if len(runs) < repeat:
            continue
        top = ", ".join(f"{name} {n}" for name, n in runs[-1]["top"])
        print(f"  {label:36} {median([r['rss'] for r in runs]):7.0f} MiB {median([r['modules'] for r in runs]):8.0f}"
              f" {median([r['seconds'] for r in runs]) * 1000:6.0f} ms  {top}")


if __name__ == "__main__":
    main()
