"""Benchmark hybrid search (keyword + vectors): retrieval quality, latency, backfill, size.

Run: .venv/bin/python bench/hybrid_bench.py [--messages N] [--queries N] [--backfill N] [--local]

``--local``: parts 1 and 2 with the offline embeddings (``embedding_model = local``:
SmolLM2-135M through llama.cpp, in-process) instead of the scripted server.

1. **Retrieval set** (tests/fixtures/recall_corpus.py): six months of synthetic chat
   with 40 facts worth finding and 133 queries for them (paraphrases, other word
   forms, names, dates; English, French, Chinese). recall@5 of keyword-only,
   semantic-only and hybrid search, embeddings through real litellm against the
   scripted server's /v1/embeddings (tests/fixtures/embeddings.py).
2. **Backfill throughput**: ``--backfill`` messages embedded through litellm and the
   scripted server in batches of 64, stored in the index (the provider's own time
   is not in it: a real one adds its latency per batch).
3. **Latency and size at N messages** (default 100 000): the log is written, the
   keyword index built, vectors made in-process with the same embedding function
   (it would be hours of HTTP otherwise) and stored through ``VectorStore.put``;
   then hybrid and semantic search are timed with the query's vector given
   (``SearchService.with_vector``: what memtray adds to the provider's embedding
   call). Prints p50/p99 and the index size per 100 000 messages.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from memtray.core.base.clock import FakeClock
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.log.store import Store
from memtray.core.search.embed import Embedder
from memtray.core.search.index import SearchIndex, index_path
from memtray.core.search.service import SearchService

from tests.fixtures import recall_corpus
from tests.fixtures.embeddings import embed
from tests.fixtures.llm_server import ScriptedLLMServer, run_async


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


async def closing(coro):  # type: ignore[no-untyped-def]
    import litellm

    try:
        return await coro
    finally:
        await litellm.close_litellm_async_clients()


def retrieval(tmp: Path, cfg: Config) -> None:
    clock = FakeClock(recall_corpus.START - timedelta(days=1))
    store = Store.open(Home.resolve(tmp / "set"), clock=clock)
    queries = recall_corpus.build(store, clock)
    svc = SearchService(store, SearchIndex.open(index_path(store.home)), Embedder(lambda: cfg))

    async def run() -> dict[str, float]:
        t0 = time.perf_counter()
        done = await svc.backfill()
        print(f"retrieval set      {done} distinct texts embedded by {svc.embedder.model} "
              f"in {time.perf_counter() - t0:.1f} s")
        out = {}
        for mode in ("keyword", "semantic", "hybrid"):
            found = {q.text: [h.seq for h in (await svc.asearch(q.text, mode=mode, limit=5)).hits] for q in queries}
            out[mode] = recall_corpus.recall_at(found, queries)
        bare = SearchService(store, svc.index, Embedder(lambda: Config(embedding_model="none")))
        found = {q.text: [h.seq for h in (await bare.asearch(q.text, mode="hybrid", limit=5)).hits]
                 for q in queries}
        out["hybrid, no embedding model"] = recall_corpus.recall_at(found, queries)
        if not svc.embedder.strong:  # how much of hybrid is the vectors' doing, and how much the rare words'
            svc._semantic = lambda *_a, **_k: []  # type: ignore[method-assign]
            found = {q.text: [h.seq for h in (await svc.asearch(q.text, mode="hybrid", limit=5)).hits]
                     for q in queries}
            out["hybrid, vectors ignored"] = recall_corpus.recall_at(found, queries)
        return out

    scores = run_async(closing(run()))
    print(f"retrieval set      {len(queries)} queries over {store.state.last_seq} messages, six months")
    for mode, score in scores.items():
        print(f"  recall@5 {mode:<24} {score:.3f}")
    svc.close()
    store.close()


def synthetic_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    episodes = [text for text, _ in recall_corpus.EPISODES]
    out = []
    for i in range(n):
        out.append(rng.choice(episodes) if i % 50 == 0 else recall_corpus.filler(rng))
    return out


def backfill(tmp: Path, server: ScriptedLLMServer, n: int, cfg: Config) -> None:
    store = Store.open(Home.resolve(tmp / "backfill"))
    for i in range(0, n, 1000):
        store.append_many([(Message(role="user", content=f"{t} (note {i + j})"), "bench", None)
                           for j, t in enumerate(synthetic_texts(min(1000, n - i), i))])  # all different
    svc = SearchService(store, SearchIndex.open(index_path(store.home)), Embedder(lambda: cfg))
    svc.sync()
    t0, c0 = time.perf_counter(), time.process_time()
    done = run_async(closing(svc.backfill()))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if svc.embedder.backend == "local":
        print(f"backfill           {done} messages in {wall:.1f} s: {done / wall:.1f} messages/s "
              f"({svc.embedder.model} in-process, batches of {svc.embedder.batch_size}; CPU {cpu:.1f} s)")
    else:
        print(f"backfill           {done} messages in {wall:.1f} s: {done / wall:.0f} messages/s "
              f"({len(server.embedding_requests)} calls of 64; memtray's CPU {cpu:.1f} s incl. the scripted server)")
    svc.close()
    store.close()


def latency(tmp: Path, n: int, nq: int, seed: int) -> None:
    home = Home.resolve(tmp / "big")
    texts = synthetic_texts(n, seed)
    t0 = time.perf_counter()
    with Store.open(home) as store:
        for i in range(0, n, 1000):
            store.append_many([(Message(role="user" if j % 2 == 0 else "assistant", content=t),
                                f"s{j % 3}", None) for j, t in enumerate(texts[i:i + 1000])])
    t_log = time.perf_counter() - t0
    store = Store.open(home)
    index = SearchIndex.open(index_path(home))
    t0 = time.perf_counter()
    index.sync(store)
    t_fts = time.perf_counter() - t0
    index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    fts_bytes = index_path(home).stat().st_size
    svc = SearchService(store, index, Embedder(lambda: Config(embedding_model="bench")))
    svc.vectors.use_model("bench")
    vec = lru_cache(maxsize=None)(embed)
    t0 = time.perf_counter()
    while True:
        batch, through = svc.vectors.pending(2000)
        if not batch:
            break
        svc.vectors.put([(s, t, vec(t)) for s, t in batch], through)
    t_vec = time.perf_counter() - t0
    index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    total_bytes = index_path(home).stat().st_size

    rng = random.Random(seed + 1)
    queries = [q for _text, qs in recall_corpus.EPISODES for q in qs]
    rng.shuffle(queries)
    queries = (queries * (nq // len(queries) + 1))[:nq]
    qvecs = [embed(q) for q in queries]
    svc.with_vector(queries[0], qvecs[0])  # loads the signatures (once per process)
    timing: dict[str, list[float]] = {"hybrid": [], "semantic": [], "keyword": []}
    cpu: dict[str, list[float]] = {"hybrid": [], "semantic": [], "keyword": []}
    for q, v in zip(queries, qvecs, strict=True):
        for mode in ("hybrid", "semantic"):
            t0, c0 = time.perf_counter(), time.process_time()
            svc.with_vector(q, v, mode=mode, limit=5)
            timing[mode].append((time.perf_counter() - t0) * 1000)
            cpu[mode].append((time.process_time() - c0) * 1000)
        t0, c0 = time.perf_counter(), time.process_time()
        svc.search(q, limit=5)
        timing["keyword"].append((time.perf_counter() - t0) * 1000)
        cpu["keyword"].append((time.process_time() - c0) * 1000)
    scale = 100_000 / n
    print(f"messages           {n} (log written in {t_log:.1f} s)")
    print(f"keyword index      built in {t_fts:.1f} s, {fts_bytes / 1e6 * scale:.1f} MB per 100 000 messages")
    print(f"vectors            {svc.vectors.count()} stored in {t_vec:.1f} s (256 dimensions, int8 + sign bits); "
          f"index file {total_bytes / 1e6 * scale:.1f} MB per 100 000 messages in all")
    for mode in ("hybrid", "semantic", "keyword"):
        print(f"{mode:<9} search   p50 {statistics.median(timing[mode]):6.1f} ms   p99 {pct(timing[mode], 0.99):6.1f} ms"
              f"   (CPU p50 {statistics.median(cpu[mode]):.1f} ms)  over {len(queries)} queries")
    svc.close()
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--backfill", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--skip", choices=("retrieval", "backfill", "latency"), action="append", default=[])
    ap.add_argument("--local", action="store_true", help="embeddings from the offline model (parts 1 and 2)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as t, ScriptedLLMServer() as server:
        tmp = Path(t)
        cfg = (Config(embedding_model="local") if args.local else
               Config(embedding_model="openai/bench-embedding", embedding_api_base=server.base_url))
        if "retrieval" not in args.skip:
            retrieval(tmp, cfg)
        if "backfill" not in args.skip:
            server.reset()
            backfill(tmp, server, args.backfill, cfg)
        if "latency" not in args.skip:
            latency(tmp, args.messages, args.queries, args.seed)
    asyncio.set_event_loop(None)


if __name__ == "__main__":
    main()
