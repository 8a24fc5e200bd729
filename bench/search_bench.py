"""Benchmark history search over N diary entries (default 100 000).

Run: .venv/bin/python bench/search_bench.py [--entries N] [--queries N] [--seed N] [--messages]

Appends N ``memory.written`` events (each with a synthetic HISTORY.md entry
drawn from a fixed-seed, Zipf-weighted vocabulary) to a real store in a temp
data home, builds the index with ``SearchIndex.sync`` (timed), then times
``SearchIndex.search`` (``--mode keyword``: every word) and ``Ranker.hits`` (what
the default ``hybrid`` search runs by words: BM25 over any word, with context) for
queries of 1–3 words, and the same words asked as a question about a month ("When
did we … in March?": the ranking's two time rules, ranking.py step 5, read the
dates and texts of its best passages too), and prints p50/p99 latency. Budget: p50 <= 50 ms at 100 000
entries, for both.

``--messages`` writes the same texts as chat messages instead (sessions of 20,
the roles taking turns, every tenth assistant message beginning "Thanks,
Melanie!": 5 000 messages say the name) and also times the words asked about a
person ("What did Melanie say about …?": the ranking's step 6 reads who is
called by the name, at most ``ranking.NAMES_READ`` messages, and the roles of
the candidates).
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import tempfile
import time
from pathlib import Path

from memtray.core.base.home import Home
from memtray.core.log.events import MemoryWritten, Message
from memtray.core.log.store import Store
from memtray.core.search.index import SearchIndex, index_path
from memtray.core.search.ranking import Ranker


def make_vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        n = rng.randint(3, 10)
        words.add("".join(rng.choice(string.ascii_lowercase) for _ in range(n)))
    return sorted(words)


def make_entry(rng: random.Random, vocab: list[str], weights: list[float], day: int) -> str:
    lines = []
    for minute in range(rng.randint(1, 3)):
        words = rng.choices(vocab, weights, k=rng.randint(8, 30))
        stamp = f"[2026-{1 + day // 28 % 12:02d}-{1 + day % 28:02d} 10:{minute:02d}]"
        lines.append(f"{stamp} {' '.join(words).capitalize()}.")
    return "\n".join(lines)


def as_message(i: int, text: str) -> tuple[Message, str, None]:
    """Entry ``i`` as a chat message (``--messages``): sessions of 20, roles taking turns."""
    role = "user" if i % 2 == 0 else "assistant"
    if i % 20 == 1:
        text = f"Thanks, Melanie! {text}"
    return Message(role=role, content=text), f"chat-{i // 20}", None


def build(home: Home, entries: int, seed: int, messages: bool = False) -> tuple[list[str], list[float]]:
    rng = random.Random(seed)
    vocab = make_vocabulary(rng, 5000)
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]  # Zipf: a few very common words
    with Store.open(home) as store:
        batch = 1000
        for start in range(0, entries, batch):
            store.append_many(
                [
                    as_message(i, make_entry(rng, vocab, weights, i)) if messages else
                    (MemoryWritten(memory="# Memory\n", reason="consolidation", history_append=make_entry(rng, vocab, weights, i)),
                     "bench", None)
                    for i in range(start, min(entries, start + batch))
                ]
            )
    return vocab, weights


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--messages", action="store_true", help="chat messages instead of diary entries (module doc)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        home = Home.resolve(Path(tmp) / "home")
        t0 = time.perf_counter()
        vocab, weights = build(home, args.entries, args.seed, args.messages)
        t_log = time.perf_counter() - t0

        with Store.open(home) as store:
            index = SearchIndex.open(index_path(home))
            t0 = time.perf_counter()
            docs = index.sync(store)
            t_index = time.perf_counter() - t0
            size = index_path(home).stat().st_size

            rng = random.Random(args.seed + 1)
            queries = [" ".join(rng.choices(vocab, weights, k=rng.randint(1, 3))) for _ in range(args.queries)]
            for q in queries[:3]:
                index.search(q)  # warm the page cache
            times: list[float] = []
            cpu: list[float] = []  # CPU time: what the figures would be on an idle machine
            fallback: list[float] = []  # no full-text match: a substring scan of every entry
            hits = 0
            for q in queries:
                t0, c0 = time.perf_counter(), time.process_time()
                found = index.search(q)
                times.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
                hits += bool(found)
                if not found or found[0].score == 0.0:
                    fallback.append(times[-1])
            ranker = Ranker(index)
            ranked: list[float] = []
            ranked_cpu: list[float] = []
            for q in queries:
                t0, c0 = time.perf_counter(), time.process_time()
                ranker.hits(q, limit=20)
                ranked.append((time.perf_counter() - t0) * 1000)
                ranked_cpu.append((time.process_time() - c0) * 1000)
            asked: list[float] = []
            asked_cpu: list[float] = []
            for q in queries:
                t0, c0 = time.perf_counter(), time.process_time()
                ranker.hits(f"When did we {q} in March?", limit=20)
                asked.append((time.perf_counter() - t0) * 1000)
                asked_cpu.append((time.process_time() - c0) * 1000)
            named: list[float] = []
            named_cpu: list[float] = []
            for q in queries if args.messages else []:
                t0, c0 = time.perf_counter(), time.process_time()
                ranker.hits(f"What did Melanie say about {q}?", limit=20)
                named.append((time.perf_counter() - t0) * 1000)
                named_cpu.append((time.process_time() - c0) * 1000)
            index.close()

    asked.sort()
    asked_cpu.sort()
    ranked.sort()
    ranked_cpu.sort()
    times.sort()
    cpu.sort()
    p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
    print(f"entries            {args.entries}")
    print(f"log written        {t_log:.2f} s")
    print(f"index build        {t_index:.2f} s  ({docs} documents, {size / 1e6:.1f} MB)")
    print(f"queries            {len(queries)} of 1-3 words, {hits} with hits")
    print(f"search p50         {statistics.median(times):.2f} ms")
    print(f"search p99         {p99:.2f} ms")
    print(f"search max         {times[-1]:.2f} ms")
    print(f"search CPU p50/p99 {statistics.median(cpu):.2f} / {cpu[round(0.99 * (len(cpu) - 1))]:.2f} ms")
    if fallback:
        print(f"substring fallback {len(fallback)} queries, median {statistics.median(fallback):.2f} ms")
    print(f"ranked p50/p99     {statistics.median(ranked):.2f} / {ranked[round(0.99 * (len(ranked) - 1))]:.2f} ms"
          f"  (CPU {statistics.median(ranked_cpu):.2f} / {ranked_cpu[round(0.99 * (len(ranked_cpu) - 1))]:.2f} ms)")
    print(f"asked p50/p99      {statistics.median(asked):.2f} / {asked[round(0.99 * (len(asked) - 1))]:.2f} ms"
          f"  (CPU {statistics.median(asked_cpu):.2f} / {asked_cpu[round(0.99 * (len(asked_cpu) - 1))]:.2f} ms;"
          " 'When did we … in March?')")
    if named:
        named.sort()
        named_cpu.sort()
        print(f"named p50/p99      {statistics.median(named):.2f} / {named[round(0.99 * (len(named) - 1))]:.2f} ms"
              f"  (CPU {statistics.median(named_cpu):.2f} / {named_cpu[round(0.99 * (len(named_cpu) - 1))]:.2f} ms;"
              " 'What did Melanie say about …?')")
    worst = max(statistics.median(times), statistics.median(ranked), statistics.median(asked),
                statistics.median(named) if named else 0.0)
    print(f"budget p50 <= 50 ms: {'ok' if worst <= 50 else 'OVER'}")


if __name__ == "__main__":
    main()
