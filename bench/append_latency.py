"""Append latency: memtray's durable append vs a bare os.write + fsync, same run, same disk,
for several history lengths (to show that persisting a message is O(1) in the log's length).

Usage: python bench/append_latency.py [N] [--history 0,10000,100000,1000000]
(default 2000 appends each, interleaved with the bare appends; history = events already in the log)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _common import ms, pct, synthetic_log
from memtray.core.base.home import Home
from memtray.core.log.events import Verbatim
from memtray.core.log.store import Store


def measure(tmp: Path, n: int, history: int) -> tuple[list[float], list[float]]:
    home = Home.resolve(tmp / f"home{history}")
    if history:
        synthetic_log(home.events, history)
        Store.open(home).close()  # replay once and checkpoint, as a running app would have
    store = Store.open(home)
    bare_path = tmp / f"bare{history}.jsonl"
    fd = os.open(bare_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    payload = {"role": "user", "content": "a typical short chat message about the weather in Lyon"}
    line = (b'{"seq":1,"data":' + repr(payload).encode() + b"}\n")
    ours, bare = [], []
    for _ in range(n):  # interleaved so both see the same disk conditions
        t0 = time.perf_counter()
        store.append(Verbatim("message", payload), session="bench")
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        os.write(fd, line)
        os.fsync(fd)
        bare.append(time.perf_counter() - t0)
    os.close(fd)
    store.close()
    return ours, bare


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=2000)
    ap.add_argument("--history", default="0", help="comma-separated history lengths (events)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memtray-bench-", dir=os.environ.get("BENCH_DIR")))
    print(f"append+fsync, {args.n} appends each (interleaved with bare appends), data dir {tmp}, "
          f"load avg {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for history in (int(h) for h in args.history.split(",")):
        ours, bare = measure(tmp, args.n, history)
        print(f"  history {history:>9,} events: memtray Store.append p50 {ms(pct(ours, 50))} p99 {ms(pct(ours, 99))}"
              f" mean {ms(statistics.fmean(ours))} | bare os.write+fsync p50 {ms(pct(bare, 50))}"
              f" p99 {ms(pct(bare, 99))} | ratio p50 {pct(ours, 50) / pct(bare, 50):.2f}x"
              f" (load avg {os.getloadavg()[0]:.1f})")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
