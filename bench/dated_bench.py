"""What facts with a time cost a turn (issue 32): the "Memory as of" block each user
message gets, and the look for facts past their end that runs before each turn.

Run: .venv/bin/python bench/dated_bench.py [--facts N] [--dated SHARE] [--runs N]
Builds a memory of N facts of which SHARE carry a time (from/until, a check date), then
prints the median CPU time of ``timing.note`` over the parsed facts (what
``Agent.runtime_line`` does per turn) and of finding the ended facts (what
``DatedOps.expire_ended`` does before it writes, when nothing has ended: the common case),
and the size of the block in characters.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import date, timedelta

from memtray.core.memory import factdiff, timing


def memory(n: int, share: float, rng: random.Random) -> str:
    lines = ["## Facts"]
    for i in range(n):
        text = f"Fact number {i} about the user's life in Graz"
        if rng.random() < share:
            start = date(2027, 1, 1) + timedelta(days=rng.randrange(0, 365))
            when = timing.When(start, start + timedelta(days=rng.randrange(1, 60)),
                               start + timedelta(days=rng.randrange(30, 120)))
            text = timing.with_when(text, when)
        lines.append(f"- {text}")
    return "\n".join(lines) + "\n"


def cpu(fn: object, runs: int) -> float:
    out = []
    for _ in range(runs):
        t = time.process_time()
        fn()  # type: ignore[operator]
        out.append(time.process_time() - t)
    return statistics.median(out) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=500)
    ap.add_argument("--dated", type=float, default=0.2)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    text = memory(args.facts, args.dated, random.Random(7))
    today = date(2027, 6, 15)

    def note() -> str:
        return timing.note([f.text for f in factdiff.parse(text)], today)

    def ended() -> list[str]:
        return [f.text for f in factdiff.parse(text) if timing.ended(timing.split(f.text)[1], date(2026, 1, 1))]

    block = note()
    print(f"facts: {args.facts}, dated: {sum(1 for f in factdiff.parse(text) if timing.split(f.text)[1])}")
    print(f"note per turn (parse + note): {cpu(note, args.runs):.2f} ms CPU (median of {args.runs}); "
          f"block {len(block):,} characters")
    print(f"expiry look per turn (parse + ended): {cpu(ended, args.runs):.2f} ms CPU")


if __name__ == "__main__":
    main()
