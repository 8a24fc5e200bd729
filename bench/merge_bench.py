"""The memory merge at scale: two devices apart for many revisions of a large memory.

Usage: python bench/merge_bench.py [FACTS] [REVISIONS]

Device A writes a memory of FACTS facts; device B fast-forwards to it. Then each
device writes REVISIONS revisions on its own (A rewords and adds, B removes and
adds), and each is handed the other's heads, as the sync does. Prints the time of
the pure merge (:func:`merge_nodes`), of each ``merge_peer_heads`` call (logging the
heads, the merge revision, its git commit and the peer's side line), and of a
rebuild of ``memory/`` from the log with its merges.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401 (puts the repository on sys.path)
from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.origin import origin_of
from memtray.core.memory import factdiff
from memtray.core.memory.merge import PeerHead, merge_nodes
from memtray.core.memory.peers import memory_dag


def open_app(root: Path) -> App:
    return App.open(Home.resolve(root), config=Config(model="openai/x"), start_services=False)


def heads(app: App) -> list[PeerHead]:
    dev = app.memory.device
    return [PeerHead(dev, r.id, r.ts, dict(r.data)) for r in app.store.log.records()
            if r.type == "memory.written" and origin_of(r) is None]


def main() -> None:
    n_facts = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    n_revs = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    tmp = Path(tempfile.mkdtemp(prefix="memtray-merge-"))
    try:
        a, b = open_app(tmp / "a"), open_app(tmp / "b")
        text = "## Me\n\n" + "".join(f"- Fact number {k} about project P{k} in 20{k % 30:02d}\n" for k in range(n_facts))
        a.memory.write(text, reason="user-edit", source="user")
        b.memory.merge_peer_heads(heads(a))
        for k in range(n_revs):
            cur = a.store.state.memory
            i = k % n_facts
            a.memory.write(cur.replace(f"Fact number {i} about", f"Fact number {i} is about", 1)
                           + f"- Device A learned thing {k} in 19{k % 90 + 10}\n", reason="agent", source="model")
            cur = b.store.state.memory
            victim = factdiff.parse(cur)[-(k % 5) - 1]
            b.memory.write(factdiff.remove_fact(cur, victim) + f"- Device B learned thing {k} in 18{k % 90 + 10}\n",
                           reason="agent", source="model")
        ha, hb = heads(a), heads(b)
        known = memory_dag(a.store.log.records(), a.memory.device)  # a copy: the service's own is not touched
        t0 = time.perf_counter()
        for h in hb:
            from memtray.core.memory.merge import Node
            known.dag.add(Node(h.event_id, h.device, tuple(h.data.get("parents") or ()), h.ts, h.data))
        tips = known.dag.heads([known.head or "", hb[-1].event_id])
        merged = merge_nodes(known.dag, tips)
        t_pure = time.perf_counter() - t0
        t0 = time.perf_counter()
        out_a = a.memory.merge_peer_heads(hb)
        t_a = time.perf_counter() - t0
        t0 = time.perf_counter()
        out_b = b.memory.merge_peer_heads(ha)
        t_b = time.perf_counter() - t0
        assert a.store.state.memory == b.store.state.memory
        facts = len(a.memory.ledger().facts)
        head = a.memory.git.head()
        a.close()
        shutil.rmtree(tmp / "a" / "memory")
        t0 = time.perf_counter()
        again = open_app(tmp / "a")
        t_rebuild = time.perf_counter() - t0
        assert again.memory.git.head() == head
        again.close()
        b.close()
        print(f"memory of {n_facts} facts, {n_revs} revisions on each device, then one sync each way")
        print(f"  pure merge (merge_nodes):           {t_pure * 1000:8.1f} ms  ({len(merged.ledger.facts)} facts)")
        print(f"  merge_peer_heads on A ({len(hb)} heads): {t_a * 1000:8.1f} ms  merged={out_a.merged}")
        print(f"  merge_peer_heads on B ({len(ha)} heads): {t_b * 1000:8.1f} ms  merged={out_b.merged}")
        print(f"  result: {facts} facts, same text and ids on both; {len(out_a.conflicts)} conflicts")
        print(f"  rebuild of memory/ from the log (same HEAD sha): {t_rebuild * 1000:8.1f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
