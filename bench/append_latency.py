"""Append latency: memtray's durable append vs a bare os.write + fsync, same run, same disk.

Usage: python bench/append_latency.py [N]   (default 2000 appends each, interleaved)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from _common import ms, pct

from memtray.core.home import Home
from memtray.core.store import Store


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    tmp = Path(tempfile.mkdtemp(prefix="memtray-bench-", dir=os.environ.get("BENCH_DIR")))
    store = Store.open(Home.resolve(tmp / "home"))
    bare_path = tmp / "bare.jsonl"
    fd = os.open(bare_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    payload = {"role": "user", "content": "a typical short chat message about the weather in Lyon"}
    line = (b'{"seq":1,"data":' + repr(payload).encode() + b"}\n")
    ours, bare = [], []
    for _ in range(n):  # interleaved so both see the same disk conditions
        t0 = time.perf_counter()
        store.append("message", payload, session="bench")
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        os.write(fd, line)
        os.fsync(fd)
        bare.append(time.perf_counter() - t0)
    os.close(fd)
    store.close()
    print(f"append+fsync, {n} appends (interleaved), data dir {tmp}")
    print(f"  memtray Store.append : p50 {ms(pct(ours, 50))}  p99 {ms(pct(ours, 99))}")
    print(f"  bare os.write+fsync  : p50 {ms(pct(bare, 50))}  p99 {ms(pct(bare, 99))}")
    print(f"  ratio p50            : {pct(ours, 50) / pct(bare, 50):.2f}x")


if __name__ == "__main__":
    main()
