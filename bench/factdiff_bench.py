"""Benchmark factdiff.diff on two 500-fact memories that differ by about 10%.

Run: .venv/bin/python bench/factdiff_bench.py [--facts N] [--runs N]
Prints the median (and min/max) wall time of ``diff(old, new)`` over the runs and
the median CPU time (steadier when other processes compete for the machine),
plus what the diff found, so a regression in speed or in matching shows.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from memtray.core.memory.factdiff import diff, parse

_SUBJECTS = ["User", "The user", "Their partner", "Their manager", "Their sister", "Their dog"]
_VERBS = ["likes", "prefers", "uses", "visited", "works on", "talks about", "avoids", "plans"]
_OBJECTS = [
    "green tea",
    "dark mode",
    "Python",
    "Rust",
    "hiking",
    "the Berlin office",
    "jazz",
    "sourdough bread",
    "the Alps",
    "chess",
    "vim",
    "Kubernetes",
    "sushi",
    "cycling",
    "the quarterly report",
    "board games",
    "photography",
    "Lisbon",
    "podcasts",
    "yoga",
]
_DETAILS = [
    "on weekends",
    "every morning",
    "since 2019",
    "at work",
    "with friends",
    "when travelling",
    "in winter",
    "for the project",
    "most days",
    "lately",
]
_SECTIONS = ["Profile", "Work", "Preferences", "Family", "Health", "Projects",
             "Travel", "Hobbies", "Food", "Tools"]  # fmt: skip


def make_fact(rng: random.Random, serial: int) -> str:
    return (
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} "
        f"{rng.choice(_DETAILS)} (note {serial})"
    )


def render(sections: dict[str, list[str]]) -> str:
    out = ["# Memory", ""]
    for title, facts in sections.items():
        out += [f"## {title}", *(f"- {fact}" for fact in facts), ""]
    return "\n".join(out)


def make_pair(n_facts: int, seed: int = 7) -> tuple[str, str]:
    """Two memories of ``n_facts``: ~4% reworded, ~3% dropped, ~3% added, a few moved."""
    rng = random.Random(seed)
    old: dict[str, list[str]] = {s: [] for s in _SECTIONS}
    for serial in range(n_facts):
        old[_SECTIONS[serial % len(_SECTIONS)]].append(make_fact(rng, serial))
    new = {s: list(facts) for s, facts in old.items()}
    every = [(s, i) for s, facts in new.items() for i in range(len(facts))]
    rng.shuffle(every)
    n_changed, n_dropped = n_facts * 4 // 100, n_facts * 3 // 100
    for s, i in every[:n_changed]:
        new[s][i] = "Notably, " + new[s][i].replace(" (", ", and more (") + "."
    dropped = every[n_changed : n_changed + n_dropped]
    for s, i in sorted(dropped, reverse=True):
        del new[s][i]
    for k in range(n_facts * 3 // 100):
        new[rng.choice(_SECTIONS)].append(f"Brand new fact number {k}: {make_fact(rng, -k)}")
    for _ in range(n_facts // 100):  # move a few facts to another section
        src, dst = rng.sample(_SECTIONS, 2)
        if new[src]:
            new[dst].append(new[src].pop())
    return render(old), render(new)


def _timed(fn: Callable[[], object], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of each run (CPU time is steadier on a busy machine)."""
    fn()  # warm up
    wall, cpu = [], []
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=500)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    old, new = make_pair(args.facts)
    wall, cpu = _timed(lambda: diff(old, new), args.runs)
    parse_wall, _ = _timed(lambda: parse(new), args.runs)
    result = diff(old, new)
    added, dropped, changed = result.counts
    print(
        f"factdiff.diff: {len(parse(old))} -> {len(parse(new))} facts, {args.runs} runs: "
        f"median {statistics.median(wall):.2f} ms wall "
        f"(min {min(wall):.2f}, max {max(wall):.2f}), "
        f"median {statistics.median(cpu):.2f} ms CPU; "
        f"parse median {statistics.median(parse_wall):.2f} ms"
    )
    print(
        f"  found: {changed} changed, {dropped} dropped, {added} added, "
        f"{result.unchanged} unchanged"
    )


if __name__ == "__main__":
    main()
