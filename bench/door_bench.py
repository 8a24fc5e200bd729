"""What the one door costs: checking every line of a peer's stream, against replaying and
appending the same events.

For N events (default 200 000) of the synthetic log: the time per event of a full replay
(Store.open without a checkpoint), of appending them (Store.append_many in batches of 2 000,
one fsync each, as sync imports), of the door alone (checksum, parse, envelope, payload
checks, redaction: core/log/door.py ``Door.line``) and of the checks without redaction,
and the ratios (replay + door) / replay and (append + door) / append: the figure issue 26
holds to 1.3 together with the typed reads (bench/replay.py).

Usage: python bench/door_bench.py [N] [REPEAT]
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
from memtray.core.log.door import Door, Refusal, Source
from memtray.core.log.events import SCHEMA, Verbatim, decode_raw
from memtray.core.log.segments import list_segments
from memtray.core.log.store import Store


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    tmp = Path(tempfile.mkdtemp(prefix="memtray-door-", dir=os.environ.get("BENCH_DIR")))
    try:
        home = Home.resolve(tmp / "home")
        synthetic_log(home.events, n)
        lines = [ln for _n, p in list_segments(home.events) for ln in p.read_bytes().split(b"\n") if ln]
        load0 = os.getloadavg()[0]
        replay = []
        for _ in range(repeat):
            shutil.rmtree(home.state, ignore_errors=True)
            t0 = time.perf_counter()
            s = Store.open(home, use_checkpoint=False)
            replay.append(time.perf_counter() - t0)
            s.close(checkpoint=False)
        source = Source("peer", "d0123456789ab", "bench")
        door, plain = Door(), Door(verbatim=SCHEMA.types)  # plain: every check, no redaction
        checked, unredacted, decoded = [], [], []
        records = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            records = [door.line(ln, source) for ln in lines]
            checked.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for ln in lines:
                plain.line(ln, source)
            unredacted.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for ln in lines:  # what an import did before the door: checksum and parse
                decode_raw(ln)
            decoded.append(time.perf_counter() - t0)
        assert not [r for r in records if isinstance(r, Refusal)]
        appends = []
        for k in range(repeat):
            target = Home.resolve(tmp / f"append{k}")
            store = Store.open(target)
            items = [(Verbatim(r.type, r.data), r.session, None) for r in records if not isinstance(r, Refusal)]
            t0 = time.perf_counter()
            for start in range(0, len(items), 2000):
                store.append_many(items[start : start + 2000])
            appends.append(time.perf_counter() - t0)
            store.close(checkpoint=False)
            shutil.rmtree(target.root, ignore_errors=True)
        per = 1e6 / n
        r, a, d, u, o = median(replay), median(appends), median(checked), median(unredacted), median(decoded)
        print(f"{n:,} events ({os.cpu_count()} CPUs, load avg {load0:.1f}-{os.getloadavg()[0]:.1f}), medians of {repeat}:")
        print(f"  replay (Store.open, no checkpoint):  {r * per:6.2f} µs/event")
        print(f"  append (batches of 2 000, fsync):     {a * per:6.2f} µs/event")
        print(f"  door, every check + redaction:        {d * per:6.2f} µs/event")
        print(f"  door, every check, no redaction:      {u * per:6.2f} µs/event")
        print(f"  before the door (checksum + parse):   {o * per:6.2f} µs/event")
        print(f"  an import (door + append) costs {(a + d) / (a + o):.2f}x what it did (checksum, parse, append); "
              f"replay is unchanged (the door runs on what comes in, not on replay)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
