"""Benchmark the memory repository: commit latency, the first page of `memory log`, fact diff.

Run: .venv/bin/python bench/memory_bench.py [--runs 200] [--revisions 10000] [--facts 500]

1. commit latency: ``MemoryService.write`` of a small change (one fact added or removed)
   on a 60-fact memory, ``--runs`` times: the event append (fsync), the commit
   (blobs, tree, commit with core.fsyncObjectFiles, the ref) and the work tree.
   Budget: p50 <= 20 ms.
2. `memory log` first page: ``MemoryService.revisions(limit=20)`` with ``--revisions``
   revisions. Built by the fast path: ``--revisions`` ``memory.written`` events appended
   in batches of 1000 (one fsync each), then one ``GitRepo.commit`` per event with the
   same message and files the service would make, object fsync switched off while
   building (the figure measured is reading). The App then opens on it and finds
   nothing to reconcile (checked). Budget: <= 100 ms.
3. fact diff of a ``--facts``-fact memory against a copy with ~10% changed.

Wall time on a busy machine is noisy; CPU time (process_time) is printed beside it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memtray.core import factdiff  # noqa: E402
from memtray.core.app import App  # noqa: E402
from memtray.core.base.clock import parse_ts  # noqa: E402
from memtray.core.base.config import Config  # noqa: E402
from memtray.core.base.home import Home  # noqa: E402
from memtray.core.log.events import MemoryWritten  # noqa: E402
from memtray.core.log.store import Store  # noqa: E402
from memtray.core.memory.gitrepo import GitRepo  # noqa: E402
from memtray.core.memory.revisions import apply_history as _apply_history  # noqa: E402
from memtray.core.memory.revisions import commit_message  # noqa: E402
from memtray.core.memory.service import MemoryService  # noqa: E402

CONFIG = Config(model="openai/bench", api_base="http://127.0.0.1:9/v1", idle_consolidate_minutes=0)


def memory_text(n: int, rng: random.Random) -> str:
    sections = ["Identity", "Family", "Work", "Preferences", "Places", "Projects", "Health", "Hobbies"]
    words = ["tea", "coffee", "Rust", "Python", "Lisbon", "Kyoto", "cello", "chess", "hiking", "sourdough",
             "Atlas", "Beacon", "marathons", "jazz", "vim", "sailing", "Welsh", "curry", "kayak", "Oslo"]
    out = ["# Memory\n"]
    per = max(1, n // len(sections))
    k = 0
    for sec in sections:
        out.append(f"\n## {sec}\n")
        for _ in range(per):
            if k >= n:
                break
            a, b = rng.sample(words, 2)
            out.append(f"- User fact {k}: likes {a} with {b} since {2000 + k % 25}\n")
            k += 1
    return "".join(out)


def timed(fn: Callable[[], object], runs: int) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return wall, cpu


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def ms(x: float) -> str:
    return f"{x * 1000:7.2f} ms"


def count_fsyncs(fn: Callable[[], object]) -> int:
    import os

    real, n = os.fsync, 0

    def spy(fd: int) -> None:
        nonlocal n
        n += 1
        real(fd)

    os.fsync = spy
    try:
        fn()
    finally:
        os.fsync = real
    return n


def fsync_latency(where: Path, runs: int = 50) -> float:
    import os

    out = []
    for i in range(runs):
        fd = os.open(where / f"fsync-probe-{i}", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.write(fd, b"x" * 200)
            t = time.perf_counter()
            os.fsync(fd)
            out.append(time.perf_counter() - t)
        finally:
            os.close(fd)
    return statistics.median(out)


def bench_commit(runs: int) -> None:
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        app = App.open(Home.resolve(Path(tmp) / "home"), config=CONFIG, start_services=False)
        try:
            svc: MemoryService = app.memory
            base = memory_text(60, rng)
            svc.write(base, reason="user-edit", source="user")
            state = {"i": 0}

            def one() -> None:
                i = state["i"] = state["i"] + 1
                text = base + f"- User detail number {i}\n" if i % 2 else base
                svc.write(text, reason="agent", source="model", model="openai/bench")

            for _ in range(5):  # warm up (imports, caches)
                one()
            syncs = count_fsyncs(one)
            wall, cpu = timed(one, runs)
            assert len(list(svc.git.walk())) == runs + 7
            fsync = fsync_latency(Path(tmp))
        finally:
            app.close()
    print(f"commit latency (MemoryService.write of a small change, {runs} runs):")
    print(f"  p50 {ms(statistics.median(wall))}   p99 {ms(pct(wall, 99))}   max {ms(max(wall))}   "
          f"(cpu p50 {ms(statistics.median(cpu))})   budget p50 <= 20 ms")
    print(f"  {syncs} fsyncs per write; one fsync here takes p50 {ms(fsync)} "
          f"(so about {ms(syncs * fsync)} of the wall time is the disk)")


def bench_log(revisions: int) -> None:
    rng = random.Random(2)
    with tempfile.TemporaryDirectory() as tmp:
        home = Home.resolve(Path(tmp) / "home")
        base = memory_text(60, rng)
        t0 = time.perf_counter()
        with Store.open(home) as store:
            recs = []
            for start in range(0, revisions, 1000):
                batch = []
                for i in range(start, min(revisions, start + 1000)):
                    mem = base + f"- User detail number {i}\n"
                    ev = MemoryWritten(memory=mem, reason="agent", source="model", model="openai/bench",
                                       history_append=f"revision {i}" if i % 10 == 0 else None,
                                       diff={"added": [{"id": "x", "section": "", "text": "t"}], "dropped": [],
                                             "changed": []})
                    batch.append((ev, None, None))
                recs += store.append_many(batch)
        git = GitRepo(home.memory).open()
        git.repo.object_store.fsync_object_files = False  # building only; reads are measured
        history = ""
        files: dict[str, str] = {}
        for rec in recs:
            history = _apply_history(history, rec)
            files = {"MEMORY.md": rec.data["memory"], "HISTORY.md": history}
            git.commit(files, commit_message(rec), parse_ts(rec.ts), update_worktree=False)
        git.checkout_files(files)
        git.close()
        built = time.perf_counter() - t0
        app = App.open(home, config=CONFIG, start_services=False)
        try:
            svc: MemoryService = app.memory
            assert svc.commits_made_on_start == 0 and app.store.state.memory_seq == recs[-1].seq
            w, c = time.perf_counter(), time.process_time()
            first = svc.revisions(limit=20)
            cold, cold_cpu = time.perf_counter() - w, time.process_time() - c
            assert len(first) == 20 and first[0].event_seq == recs[-1].seq
            wall, cpu = timed(lambda: svc.revisions(limit=20), 50)
        finally:
            app.close()
    print(f"memory log first page (MemoryService.revisions(limit=20)) with {revisions:,} revisions "
          f"(built in {built:.1f} s by the fast path: batched events + GitRepo.commit per event):")
    print(f"  first call {ms(cold)} (cpu {ms(cold_cpu)})   then p50 {ms(statistics.median(wall))}   "
          f"p99 {ms(pct(wall, 99))}   (cpu p50 {ms(statistics.median(cpu))})   budget <= 100 ms")


def bench_diff(facts: int) -> None:
    rng = random.Random(3)
    old = memory_text(facts, rng)
    lines = old.splitlines(keepends=True)
    bullets = [i for i, line in enumerate(lines) if line.startswith("- ")]
    for i in rng.sample(bullets, facts // 30):
        lines[i] = ""  # dropped
    for i in rng.sample(bullets, facts // 30):
        if lines[i]:
            lines[i] = lines[i].replace("likes", "really likes")  # reworded
    new = "".join(lines) + "".join(f"- User new fact {j}: plays chess\n" for j in range(facts // 30))
    d = factdiff.diff(old, new)
    wall, cpu = timed(lambda: factdiff.diff(old, new), 30)
    print(f"fact diff of a {facts}-fact memory (+{len(d.added)} -{len(d.dropped)} ~{len(d.changed)}), 30 runs:")
    print(f"  p50 {ms(statistics.median(wall))}   max {ms(max(wall))}   (cpu p50 {ms(statistics.median(cpu))})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--revisions", type=int, default=10_000)
    ap.add_argument("--facts", type=int, default=500)
    args = ap.parse_args()
    print(f"command: .venv/bin/python bench/memory_bench.py --runs {args.runs} --revisions {args.revisions} "
          f"--facts {args.facts}")
    bench_commit(args.runs)
    bench_log(args.revisions)
    bench_diff(args.facts)


if __name__ == "__main__":
    main()
