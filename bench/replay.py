"""Full replay of N events (default 1 000 000) and start-up from a checkpoint of the same log.

Usage: python bench/replay.py [N] [REPEAT]
       python bench/replay.py --against REV [N] [REPEAT]

With ``--against REV`` it measures this tree against REV (a commit, e.g. ``main``) in one
run: REV is checked out with ``git worktree`` into a temporary directory, and the same
synthetic log is replayed (``Store.open`` without a checkpoint) and the same messages are
appended (``Store.append_many``, batches of 100: one fsync each) by a child process of each
tree in turn, REPEAT times alternating, so load on the machine hits both alike. It prints
the median CPU seconds of each and their ratio (this tree / REV): the cost of typed reads
and payload appends over REV.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import median, synthetic_log
from memtray.core.base.home import Home
from memtray.core.log.segments import DEFAULT_SEGMENT_BYTES
from memtray.core.log.store import Store

APPEND_BATCH = 100


def child(what: str, home_dir: str, api: str, n: int) -> None:
    """One measurement in this process (the tree it imports is the one PYTHONPATH names):
    prints ``{"cpu": seconds}``."""
    from memtray.core.log.events import Message

    home = Home.resolve(Path(home_dir))
    if what == "replay":
        shutil.rmtree(home.state, ignore_errors=True)
        c0 = time.process_time()
        s = Store.open(home, use_checkpoint=False)
        cpu = time.process_time() - c0
        assert s.replayed_on_open > 0
        s.close(checkpoint=False)
    else:  # append: the same messages, as each tree's store takes them
        s = Store.open(home)
        texts = [f"message {i} about tea, trains and the weather in Lyon" for i in range(n)]
        c0 = time.process_time()
        for start in range(0, n, APPEND_BATCH):
            chunk = texts[start:start + APPEND_BATCH]
            if api == "payload":
                s.append_many([(Message(role="user", content=t), "bench", None) for t in chunk])
            else:  # the store of before typed events: (type, data, session, id)
                s.append_many([(Message.TYPE, Message(role="user", content=t).to_data(), "bench", None)  # type: ignore[misc]
                               for t in chunk])
        cpu = time.process_time() - c0
        s.close(checkpoint=False)
    print(json.dumps({"cpu": cpu}))


def _shim(tree: Path, where: Path) -> Path:
    """A directory that makes ``import memtray`` load ``tree`` (first on PYTHONPATH)."""
    pkg = where / "memtray"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for part in ("core", "resources", "desktop"):
        (pkg / part).symlink_to(tree / part)
    return where


def _run(shim: Path | None, what: str, home: Path, api: str, n: int) -> float:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if shim is not None:
        env["PYTHONPATH"] = str(shim)
    out = subprocess.run([sys.executable, __file__, "--child", what, str(home), api, str(n)], env=env,
                         capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["cpu"])


def against(rev: str, n: int, repeat: int) -> None:
    root = Path(__file__).resolve().parent.parent
    tmp = Path(tempfile.mkdtemp(prefix="memtray-replay-vs-", dir=os.environ.get("BENCH_DIR")))
    base = tmp / "base"
    subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", str(base), rev], check=True,
                   capture_output=True)
    try:
        commit = subprocess.run(["git", "-C", str(base), "rev-parse", "--short", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
        here = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        shims = {"before": _shim(base, tmp / "shim-base"), "after": _shim(root, tmp / "shim-here")}
        apis = {"before": "tuple", "after": "payload"}
        home = tmp / "home"
        synthetic_log(Home.resolve(home).events, n)
        appends = max(n // 50, 1000)
        cpu: dict[tuple[str, str], list[float]] = {}
        load0 = os.getloadavg()[0]
        for i in range(repeat):
            for side in (("before", "after") if i % 2 == 0 else ("after", "before")):
                cpu.setdefault(("replay", side), []).append(_run(shims[side], "replay", home, apis[side], n))
                ahome = tmp / f"append-{side}-{i}"
                cpu.setdefault(("append", side), []).append(_run(shims[side], "append", ahome, apis[side], appends))
                shutil.rmtree(ahome)
        load = f"load avg {load0:.1f}-{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        print(f"before = {rev} ({commit}), after = this tree ({here}); {repeat} alternating runs each, {load}")
        for what, label in (("replay", f"full replay of {n:,} events (Store.open, no checkpoint)"),
                            ("append", f"append of {appends:,} messages in batches of {APPEND_BATCH}")):
            b, a = median(cpu[(what, "before")]), median(cpu[(what, "after")])
            print(f"{label}: before {b:.3f} s CPU, after {a:.3f} s CPU, ratio {a / b:.2f}x "
                  f"(runs before {', '.join(f'{x:.3f}' for x in cpu[(what, 'before')])}; "
                  f"after {', '.join(f'{x:.3f}' for x in cpu[(what, 'after')])})")
    finally:
        subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(base)], check=False,
                       capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--against":
        rest = sys.argv[3:]
        against(sys.argv[2], int(rest[0]) if rest else 1_000_000, int(rest[1]) if len(rest) > 1 else 3)
        return
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
