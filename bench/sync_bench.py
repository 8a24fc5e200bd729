"""Sync at scale: what a heavy user's year costs on the remote, first sync of a new device, ten devices.

Usage: python bench/sync_bench.py [SYNCS] [EVENTS_PER_SYNC] [DEVICES]
       python bench/sync_bench.py --encrypted [SYNCS] [EVENTS_PER_SYNC]

A "heavy user" here: 200 messages a day (100 exchanges of ~330 bytes of prose), a memory
revision (~8 KB MEMORY.md) every 5 syncs, synced every 15 minutes while active,
of which ~40 syncs a day carry new events. The script runs SYNCS syncs of
EVENTS_PER_SYNC messages each on device 1 (plus its memory writes) against a bare
repository, then:

* per-sync cost (push of one segment) and what the remote holds (objects, pack size);
* the first sync of a new device that imports everything;
* DEVICES devices each adding one segment and syncing in turn: the cost of one
  round when every device has something new.

Figures are extrapolated linearly to a year (segments and objects are per push;
the pack grows with the bytes pushed).

``--encrypted``: the same syncs of device 1 and the first sync of a new device, once
through a clear remote and once through an encrypted one (both devices paired, every
file sealed), in one run: time of a sync, the remote's size after gc, the new
device's first sync. The keys live in an in-memory keyring for the run.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import memory_keyring  # (and puts the repository on sys.path)
from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home, device_id
from memtray.core.log.events import Message

SYNCS_PER_DAY = 40
MESSAGES_PER_DAY = 200
REVISIONS_PER_DAY = SYNCS_PER_DAY // 5
_RNG = random.Random(18)
# a vocabulary of 5 000 made-up words: text that compresses like prose, not like one repeated line
_VOCAB = ["".join(_RNG.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(_RNG.randint(2, 9)))
          for _ in range(5000)]


def text(n_words: int = 55) -> str:
    """About 330 bytes of pseudo-prose (a typical chat message)."""
    return " ".join(_RNG.choice(_VOCAB) for _ in range(n_words)) + "."


def open_app(root: Path) -> App:
    home = Home(root)
    home.create()
    device_id(home)
    return App.open(home, config=Config(sync_encrypt=False))  # clear unless a run sets up keys itself


def add(app: App, n: int, tag: str) -> None:
    app.store.append_many([(Message(role="user" if i % 2 == 0 else "assistant", content=f"{tag} {i}: {text()}"), "quick", None) for i in range(n)])


def memory_text(k: int) -> str:
    facts = [f"- User fact number {i} about the Beacon project and its {k % 7} vendors" for i in range(110)]
    return "# Memory\n\n## Work\n" + "\n".join(facts) + "\n"


def count_objects(remote: Path) -> tuple[int, float]:
    subprocess.run(["git", "--git-dir", str(remote), "gc", "--quiet"], check=True)
    out = subprocess.run(["git", "--git-dir", str(remote), "count-objects", "-v"], check=True,
                         capture_output=True, text=True).stdout
    vals = dict(line.split(": ") for line in out.splitlines())
    return int(vals["in-pack"]) + int(vals["count"]), (int(vals["size-pack"]) + int(vals["size"])) / 1024


def _one_kind(tmp: Path, syncs: int, per: int, encrypted: bool) -> dict[str, float]:
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    a = open_app(tmp / "d1")
    b_root = tmp / "new"
    assert a.sync is not None
    if encrypted:
        a.sync.pairing.set_up()
        code = a.sync.pairing.invite(str(remote))
    times = []
    for k in range(syncs):
        add(a, per, f"s{k}")
        if k % 5 == 4:
            a.write(lambda k=k: a.memory.write(memory_text(k), reason="user-edit", source="user"))
        t0 = time.perf_counter()
        a.sync.sync(str(remote))
        times.append(time.perf_counter() - t0)
    events = a.store.log.last_seq
    a.close()
    objects, mib = count_objects(remote)
    b = open_app(b_root)
    assert b.sync is not None
    t0 = time.perf_counter()
    if encrypted:
        b.sync.pairing.join(str(remote), code)
    rep = b.sync.sync(str(remote))
    first = time.perf_counter() - t0
    b.close()
    assert rep.imported > 0 and rep.encrypted == encrypted
    times.sort()
    return {"median": times[len(times) // 2], "p90": times[int(len(times) * 0.9)], "objects": objects,
            "mib": mib, "first": first, "imported": rep.imported, "events": events}


def compare(syncs: int, per: int) -> None:
    import keyring

    keyring.set_keyring(memory_keyring())  # type: ignore[arg-type]
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    got = {}
    for kind in ("clear", "encrypted"):
        tmp = Path(tempfile.mkdtemp(prefix=f"memtray-sync-{kind}-", dir=os.environ.get("BENCH_DIR")))
        try:
            got[kind] = _one_kind(tmp, syncs, per, kind == "encrypted")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{syncs} syncs of {per} messages on device 1 (+ a memory revision every 5), then a new device's first sync")
    print(f"{'':>10} {'sync median':>12} {'p90':>8} {'remote objects':>15} {'remote MiB':>11} {'first sync':>11}")
    for kind, g in got.items():
        print(f"{kind:>10} {g['median'] * 1000:>9.0f} ms {g['p90'] * 1000:>5.0f} ms {g['objects']:>15,.0f} "
              f"{g['mib']:>11.2f} {g['first']:>9.2f} s  ({g['imported']:,.0f} events imported)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--encrypted":
        compare(int(sys.argv[2]) if len(sys.argv) > 2 else 100,
                int(sys.argv[3]) if len(sys.argv) > 3 else MESSAGES_PER_DAY // SYNCS_PER_DAY)
        return
    syncs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    per = int(sys.argv[2]) if len(sys.argv) > 2 else MESSAGES_PER_DAY // SYNCS_PER_DAY
    devices = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    tmp = Path(tempfile.mkdtemp(prefix="memtray-sync-", dir=os.environ.get("BENCH_DIR")))
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    try:
        a = open_app(tmp / "d1")
        assert a.sync is not None
        times = []
        writes = 0
        for k in range(syncs):
            add(a, per, f"s{k}")
            if k % 5 == 4:
                a.write(lambda k=k: a.memory.write(memory_text(k), reason="user-edit", source="user"))
                writes += 1
            t0 = time.perf_counter()
            a.sync.sync(str(remote))
            times.append(time.perf_counter() - t0)
        events = a.store.log.last_seq
        raw = sum(p.stat().st_size for p in (tmp / "d1" / "events").glob("*.jsonl"))
        a.close()
        objects, mib = count_objects(remote)
        times.sort()
        messages = syncs * per
        pushes_year = SYNCS_PER_DAY * 365
        msgs_year = MESSAGES_PER_DAY * 365
        print(f"device 1: {syncs} syncs of {per} messages (+{writes} memory revisions), {events:,} events, "
              f"log {raw / 2**20:.1f} MiB")
        print(f"  one sync (one new segment pushed): median {times[len(times) // 2] * 1000:.0f} ms, "
              f"p90 {times[int(len(times) * 0.9)] * 1000:.0f} ms")
        print(f"  remote after gc: {objects:,} objects ({objects / syncs:.1f} per push), {mib:.2f} MiB "
              f"({mib * 2**20 / messages:.0f} bytes per message)")
        print(f"  a heavy year ({pushes_year:,} pushes, {msgs_year:,} messages, {REVISIONS_PER_DAY * 365:,} "
              f"revisions): {objects / syncs * pushes_year:,.0f} objects, {pushes_year:,} segments, "
              f"~{mib / messages * msgs_year:.0f} MiB of messages on the remote")
        # a new device: its first sync imports everything
        b = open_app(tmp / "new")
        assert b.sync is not None
        merging = [0.0]
        real_merge = b.memory.merge_peer_heads

        def timed(heads):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            try:
                return real_merge(heads)
            finally:
                merging[0] += time.perf_counter() - t

        b.memory.merge_peer_heads = timed  # type: ignore[method-assign]
        t0 = time.perf_counter()
        rep = b.sync.sync(str(remote))
        first = time.perf_counter() - t0
        b.close()
        rest = first - merging[0]
        print(f"  first sync of a new device: {rep.imported:,} events imported + {writes} memory revisions merged "
              f"in {first:.2f} s (the merge {merging[0]:.2f} s, the rest {rest:.2f} s = "
              f"{rest / max(rep.imported, 1) * 1e6:.0f} us per event)")
        # ten devices, each with something new every round
        apps = [open_app(tmp / f"r{i}") for i in range(devices)]
        for app in apps:
            app.sync.sync(str(remote))  # type: ignore[union-attr]
        rounds = []
        for _ in range(3):
            t0 = time.perf_counter()
            for i, app in enumerate(apps):
                add(app, per, f"dev{i}")
                app.sync.sync(str(remote))  # type: ignore[union-attr]
            rounds.append((time.perf_counter() - t0) / devices)
        for app in apps:
            app.close()
        print(f"{devices} devices, each adding {per} messages and syncing in turn: "
              f"{min(rounds) * 1000:.0f} ms per device sync (fetches {devices - 1} peer streams)")
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
