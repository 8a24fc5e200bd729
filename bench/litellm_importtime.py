"""Where `import litellm` spends its time: `python -X importtime`, summed by package and submodule.

Usage: python bench/litellm_importtime.py [REPEAT]

Each run is a fresh interpreter importing litellm the way memtray configures it
(offline cost map, quiet). Self times are summed per top-level package and per
``litellm.<x>.<y>`` / ``openai.<x>.<y>`` subpackage; the figures are the medians
over REPEAT runs, with each package's share of the total.
"""

from __future__ import annotations

import collections
import os
import statistics
import subprocess
import sys


def one_run() -> tuple[float, dict[str, float], dict[str, float], int]:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_OFFLINE_MODE="true", LITELLM_LOG="ERROR")
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import litellm"], env=env,
                         capture_output=True, text=True, check=True)
    top: dict[str, float] = collections.defaultdict(float)
    sub: dict[str, float] = collections.defaultdict(float)
    total = 0.0
    n = 0
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cum, name = line.split(":", 1)[1].split("|")
        name = name.strip()
        ms = int(self_us) / 1000
        total += ms
        n += 1
        top[name.split(".")[0]] += ms
        if name.startswith(("litellm.", "openai.")):
            sub[".".join(name.split(".")[:3])] += ms
    return total, top, sub, n


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    runs = [one_run() for _ in range(repeat)]
    total = statistics.median(r[0] for r in runs)
    print(f"import litellm: {total:.0f} ms of module execution (median of {repeat}), "
          f"{runs[0][3]} modules; load average {os.getloadavg()[0]:.1f}")
    for title, idx, k in (("by package", 1, 8), ("by subpackage", 2, 12)):
        keys = set().union(*(r[idx] for r in runs))
        med = {key: statistics.median(r[idx].get(key, 0.0) for r in runs) for key in keys}
        print(f"\n{title}:")
        for key, ms in sorted(med.items(), key=lambda kv: -kv[1])[:k]:
            print(f"  {ms:8.0f} ms  {ms / total * 100:5.1f} %  {key}")


if __name__ == "__main__":
    main()
