"""Crash soak: 1 000+ SIGKILLs of real memtray processes, each followed by the full check.

The same machinery as tests/crash (a fork server pays the interpreter start-up
once; every child opens the data home as memtray does), only many more kills:

* log writers killed at random moments (half of them writing each record in
  several pieces, so kills tear records);
* the app killed during consolidations against the scripted LLM server, at each
  named step (consolidation.started, consolidation.replied, memory.appended,
  git.ref-updated, memory.committed, consolidation.completed) and at random
  moments.

After every kill the home is reopened and checked (tests/crash/harness.py):
every acknowledged seq present, seq gapless, at most one torn record cut,
checkpoint + tail == full replay; for the app also MEMORY.md == git HEAD == the
last memory.written, one commit per memory.written, no consolidation left
half-done, the pointer moved only by completed consolidations; git fsck at the
end of each home. Prints the figures recorded in docs/RELIABILITY.md.

Usage: python bench/crash_soak.py [--writer-kills 1000] [--point-kills 20] [--random-kills 100] [--seed 7]
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import ROOT

sys.path.insert(0, str(ROOT))

from tests.crash.forkserver import CRASH_POINTS
from tests.crash.harness import (
    ForkServer,
    check_app,
    check_log,
    git_fsck,
    kill_consolidation,
    kill_writer,
    save_memory_responder,
)
from tests.fixtures.llm_server import ScriptedLLMServer


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writer-kills", type=int, default=1000)
    ap.add_argument("--point-kills", type=int, default=20, help="kills at each named consolidation step")
    ap.add_argument("--random-kills", type=int, default=100, help="kills at random moments of consolidations")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # recovery warnings (cut records, catch-up commits) are expected
    rng = random.Random(args.seed)
    t0 = time.monotonic()
    figures: Counter[str] = Counter()
    failures: list[str] = []

    with tempfile.TemporaryDirectory(prefix="memtray-soak-") as tmp:
        root = Path(tmp)
        # 1. log writers
        home = root / "writer"
        acked: set[int] = set()
        with ForkServer() as server:
            for i in range(args.writer_kills):
                child = kill_writer(server, home, rng)
                figures["writer kills"] += child.status == 9
                acked.update(child.acked)
                try:
                    checked = check_log(home, acked)
                except AssertionError as exc:
                    failures.append(f"writer kill {i}: {exc}")
                    break
                figures["writer events checked"] += checked.events
                figures["torn records cut"] += checked.cut
                if (i + 1) % 100 == 0:
                    print(f"  {i + 1} writer kills, {len(acked)} acknowledged events", flush=True)
        figures["writer events acknowledged"] = len(acked)
        t_writer = time.monotonic() - t0

        # 2. the app during consolidations
        t1 = time.monotonic()
        with ForkServer(preload_llm=True) as server, ScriptedLLMServer(responder=save_memory_responder) as llm:
            plan = [p for p in CRASH_POINTS for _ in range(args.point_kills)] + [None] * args.random_kills
            rng.shuffle(plan)
            home = root / "app"
            acked = set()
            for i, point in enumerate(plan):
                child = kill_consolidation(server, home, llm.base_url, rng, point)
                killed = child.status == 9
                figures["consolidation kills"] += killed
                figures[f"  at {point or 'random'}"] += killed
                if point is not None and not killed:
                    failures.append(f"{point}: the app did not die there ({child.lines[-3:]})")
                acked.update(child.acked)
                try:
                    checked = check_app(home, acked, fsck=(i + 1) % 50 == 0)
                except AssertionError as exc:
                    failures.append(f"consolidation kill {i} ({point or 'random'}): {exc}")
                    break
                figures["app events checked"] += checked.events
                figures["torn records cut"] += checked.cut
                figures["memory commits checked"] += checked.commits
                if (i + 1) % 50 == 0:
                    print(f"  {i + 1} consolidation kills", flush=True)
            git_fsck(home / "memory")
            figures["consolidations completed"] = sum(
                1 for p in (home / "events").glob("*.jsonl") for line in p.read_bytes().splitlines()
                if b'"type":"consolidation.completed"' in line)
        t_app = time.monotonic() - t1

    kills = figures["writer kills"] + figures["consolidation kills"]
    print()
    print(f"kills survived:              {kills}")
    print(f"  log writer kills:          {figures['writer kills']}  ({t_writer:.0f} s)")
    print(f"  consolidation kills:       {figures['consolidation kills']}  ({t_app:.0f} s)")
    for key in sorted(k for k in figures if k.startswith("  at ")):
        print(f"  {key.strip():<27}{figures[key]}")
    print(f"events acknowledged (writer): {figures['writer events acknowledged']}")
    print(f"events checked (sum over all reopen checks): "
          f"{figures['writer events checked'] + figures['app events checked']}")
    print(f"memory commits checked:      {figures['memory commits checked']}")
    print(f"consolidations completed:    {figures['consolidations completed']}")
    print(f"torn records cut on reopen:  {figures['torn records cut']}")
    print(f"failures:                    {len(failures)}")
    for f in failures:
        print(f"  FAIL {f}")
    print(f"total time:                  {time.monotonic() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
