"""What memory scopes cost on the paths that run every turn and every write (issue 32).

Run: .venv/bin/python bench/scopes_bench.py [--facts N] [--scopes K] [--runs N]

A memory of N facts (default 500) in the global part and K named scopes (default 5) in
the canonical form (core/memory/scopes.py). Prints the median CPU time of:

* ``view``: what one conversation's prompt carries (global + its scope), every prompt;
* ``of_facts``: the scope of every fact, twice in every write (before and after);
* ``files``: the split into MEMORY.md and scopes/NAME.md, every commit;
* ``place``: one fact moved to another scope, a move or a put-back;
* ``parse``: factdiff.parse of the same text, the cost every write already paid, for scale.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from memtray.core.memory import factdiff, scopes
from memtray.core.memory.facts import Ledger


def memory(n: int, k: int) -> str:
    parts: dict[str, str] = {}
    names = [scopes.GLOBAL, *(f"scope-{i}" for i in range(k))]
    for i in range(n):
        name = names[i % len(names)]
        parts[name] = parts.get(name, "") + (f"## Section {i % 7}\n" if i < 7 * len(names) else "") + \
            f"- Fact number {i} about topic {i % 13} and place Town{i % 29}\n"
    return scopes.join(parts)


def cpu(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=500)
    ap.add_argument("--scopes", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args()
    text = memory(a.facts, a.scopes)
    facts = factdiff.parse(text)
    led = Ledger.with_ids(text, [f"F{i + 1}" for i in range(len(facts))], len(facts) + 1)
    first_global = led.ids[0]
    print(f"{len(facts)} facts, {len(scopes.names(text))} named scopes, {len(text):,} characters; "
          f"median CPU ms over {a.runs} runs")
    for name, fn in [
        ("view (one conversation's prompt)", lambda: scopes.view(text, "scope-0")),
        ("of_facts (every fact's scope)", lambda: scopes.of_facts(text)),
        ("files (MEMORY.md + scopes/*.md)", lambda: scopes.files(text)),
        ("place (one fact moved)", lambda: scopes.place(text, led, {first_global: "scope-1"})),
        ("factdiff.parse (for scale)", lambda: factdiff.parse(text)),
    ]:
        print(f"  {name:<36} {cpu(fn, a.runs):8.2f}")


if __name__ == "__main__":
    main()
