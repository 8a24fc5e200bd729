"""Full replay of N events (default 1 000 000) and start-up from a checkpoint of the same log.

Usage: python bench/replay.py [N] [REPEAT]
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import median, synthetic_log
from memtray.core.base.home import Home
from memtray.core.log.segments import DEFAULT_SEGMENT_BYTES
from memtray.core.log.store import Store


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    tmp = Path(tempfile.mkdtemp(prefix="memtray-replay-", dir=os.environ.get("BENCH_DIR")))
    home = Home.resolve(tmp / "home")
    t0 = time.perf_counter()
    synthetic_log(home.events, n)
    size = sum(p.stat().st_size for p in home.events.glob("*.jsonl"))
    print(f"log: {n:,} events, {size / 2**20:.0f} MiB in {len(list(home.events.glob('*.jsonl')))} segments "
          f"(written in {time.perf_counter() - t0:.1f}s)")
    load0 = os.getloadavg()[0]
    full, full_cpu = [], []
    for _ in range(repeat):
        shutil.rmtree(home.state, ignore_errors=True)
        t0, c0 = time.perf_counter(), time.process_time()
        s = Store.open(home, use_checkpoint=False)
        full.append(time.perf_counter() - t0)
        full_cpu.append(time.process_time() - c0)
        assert s.replayed_on_open == n, s.replayed_on_open
        s.checkpoint()
        s.close(checkpoint=False)
    warm, warm_cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        s = Store.open(home)
        warm.append(time.perf_counter() - t0)
        warm_cpu.append(time.process_time() - c0)
        assert s.checkpoint_used and s.replayed_on_open == 0
        s.close(checkpoint=False)
    ck = (home.state / "checkpoint.json").stat().st_size
    last = max(home.events.glob("*.jsonl"))
    import json

    body = json.loads((home.state / "checkpoint.json").read_bytes())
    consolidations = len(body["state"]["consolidations"])
    load = f"load avg {load0:.1f}-{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    print(f"full replay (Store.open, no checkpoint): median {median(full):.2f} s wall, "
          f"{median(full_cpu):.2f} s CPU over {repeat} runs ({load})")
    print(f"start-up from checkpoint (Store.open):  median {median(warm) * 1000:.1f} ms wall, "
          f"{median(warm_cpu) * 1000:.1f} ms CPU over {repeat} runs "
          f"(checkpoint {ck / 1024:.0f} KiB holding {consolidations} consolidations; the last segment's "
          f"{last.stat().st_size / 2**20:.1f} MiB are checksummed, at most one segment of "
          f"{DEFAULT_SEGMENT_BYTES / 2**20:.0f} MiB whatever N)")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
