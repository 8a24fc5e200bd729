"""memtray vs nanobot (nanobot-ai from PyPI): persistence and prompt building on one conversation.

Each side runs in its own process (memtray in memtray's venv, nanobot in a venv
of its own built from ``packaging/peers/nanobot.lock``, never a memtray dependency) and
calls its own project's real code; this driver only sends them requests over
JSON lines and interleaves them (memtray, nanobot, nanobot, memtray, ...) so both
see the same machine load. For each N (messages already in the session):

* persist : one more message made durable, as each agent loop does it per
  message (memtray: one append + fsync; nanobot: ``add_message`` +
  ``SessionManager.save``, which rewrites the session file; its loop saves
  without fsync, and the ``fsync=True`` variant is shown for equal durability),
* load    : start-up (memtray: ``Store.open`` from its checkpoint; nanobot: a new
  ``SessionManager`` + ``get_or_create``, reading the whole file),
* build   : the request for the next turn (memtray ``Agent.messages_for``;
  nanobot ``Session.get_history`` + ``ContextBuilder.build_messages``),
* prefix  : over ``--turns`` turns, the share of each request that is an
  identical prefix of the previous one (see ``common.prefix_shares``).

Both sides hold the same unconsolidated tail (memtray's policy: window 100,
keep 50). Ratio = median over interleaved pairs of memtray time / nanobot time.

Usage: python bench/peer_nanobot/run.py [--sizes 100,1000,10000,100000] [--repeat 9] [--turns 200]
The first run builds the nanobot venv from packaging/peers/nanobot.lock (hash-checked,
by tests/peers.py, into $MEMTRAY_CI_CACHE/peers; CI builds the same one).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from tests.peers import PeerBuildError, build_python  # noqa: E402


def nanobot_python() -> Path:
    """nanobot-ai's venv, built from packaging/peers/nanobot.lock (hash-checked) on first use."""
    try:
        return build_python("nanobot")
    except PeerBuildError as e:
        raise SystemExit(str(e)) from None


class Worker:
    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(env["BENCH_LOG"], "a"), text=True, env=env)  # noqa: SIM115

    def __call__(self, op: str, **kw: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name} worker died (see its log)")
        reply = json.loads(line)
        if not reply["ok"]:
            raise SystemExit(f"{self.name} worker: {reply['error']}\n{reply['trace']}")
        return reply["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


Pair = list[list[float]]  # [[wall, cpu], ...] per run


def interleave(m: Worker, n: Worker, repeat: int, op: str, m_kw: dict[str, Any] | None = None,
               n_kw: dict[str, Any] | None = None) -> tuple[Pair, Pair]:
    """``repeat`` runs of ``op`` on both sides, alternating which goes first."""
    mt: Pair = []
    nt: Pair = []
    for r in range(repeat):
        order = [(m, mt, m_kw), (n, nt, n_kw)] if r % 2 == 0 else [(n, nt, n_kw), (m, mt, m_kw)]
        for w, out, kw in order:
            out.append(w(op, **(kw or {})))
    return mt, nt


def med(xs: Pair, i: int = 0) -> float:
    return statistics.median(x[i] for x in xs)


def ratio(mt: Pair, nt: Pair, i: int = 0) -> float:
    """Median over interleaved pairs of memtray / nanobot (i = 0 wall, 1 CPU time)."""
    return statistics.median(a[i] / max(b[i], 1e-9) for a, b in zip(mt, nt, strict=True))


def fmt(s: float) -> str:
    return f"{s * 1000:8.2f} ms" if s < 10 else f"{s:8.2f} s "


def load_avg() -> str:
    with open("/proc/loadavg") as fh:
        return fh.read().split()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    nb_py = nanobot_python()
    scratch = Path(tempfile.mkdtemp(prefix="memtray-peer-", dir=os.environ.get("BENCH_DIR")))
    env = dict(os.environ, HOME=str(scratch / "home"), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
               MEMTRAY_NO_DESKTOP="1", BENCH_LOG=str(scratch / "workers.log"), PYTHONHASHSEED="0")
    (scratch / "home").mkdir()
    m = Worker("memtray", [sys.executable, str(HERE / "memtray_side.py")], env)
    n = Worker("nanobot", [str(nb_py), str(HERE / "nanobot_side.py")], env)
    results: list[dict[str, Any]] = []
    try:
        print(f"memtray {m('version')} vs nanobot-ai {n('version')}; {args.repeat} interleaved runs per figure; "
              f"scratch {scratch}")
        for size in sizes:
            d = scratch / f"n{size}"
            mi = m("setup", dir=str(d / "memtray"), n=size)
            ni = n("setup", dir=str(d / "nanobot"), n=size)
            row: dict[str, Any] = {"n": size, "memtray_bytes": mi["log_bytes"], "nanobot_bytes": ni["file_bytes"],
                                   "unconsolidated": [mi["unconsolidated"], ni["unconsolidated"]]}
            load_before = load_avg()
            row["load"] = interleave(m, n, args.repeat, "load")
            m("open")
            n("open")
            row["build"] = interleave(m, n, args.repeat, "build")
            row["persist"] = interleave(m, n, args.repeat, "persist")
            row["persist_fsync"] = interleave(m, n, args.repeat, "persist", n_kw={"fsync": True})
            row["loadavg"] = f"{load_before}-{load_avg()}"
            # at 100 000 messages each nanobot save rewrites ~45 MiB: do not save during the prefix run
            save = size <= 10_000
            row["prefix"] = [m("prefix", turns=args.turns), n("prefix", turns=args.turns, save=save)]
            m("close")
            results.append(row)
            report(row)
            shutil.rmtree(d, ignore_errors=True)
    finally:
        m.close()
        n.close()
    summary(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    shutil.rmtree(scratch, ignore_errors=True)


def report(row: dict[str, Any]) -> None:
    print(f"\nN = {row['n']:,} messages (memtray log {row['memtray_bytes'] / 2**20:.1f} MiB, nanobot file "
          f"{row['nanobot_bytes'] / 2**20:.1f} MiB; unconsolidated {row['unconsolidated'][0]}/"
          f"{row['unconsolidated'][1]}; load avg {row['loadavg']})")
    print(f"  {'figure (median wall; CPU)':36} {'memtray':>23} {'nanobot':>23} {'ratio wall':>11} {'ratio CPU':>10}")
    for key, label in LABELS.items():
        mt, nt = row[key]
        print(f"  {label:36} {fmt(med(mt))};{fmt(med(mt, 1))} {fmt(med(nt))};{fmt(med(nt, 1))} "
              f"{ratio(mt, nt):10.3f}x {ratio(mt, nt, 1):9.3f}x")
    mp, np_ = row["prefix"]
    for name, p in (("memtray", mp), ("nanobot", np_)):
        sr, sc, cr = p["steady_reuse"], p["steady_cached"], p["consolidation_reuse"]
        after = (f"mean {cr['mean'] * 100:.1f} % median {cr['median'] * 100:.1f} % min {cr['min'] * 100:.1f} % "
                 f"over {cr['n']}") if cr else "none"
        print(f"  prefix {name}: reuse of previous request min {sr['min'] * 100:.3f} % median "
              f"{sr['median'] * 100:.3f} %; cached share of new request median {sc['median'] * 100:.2f} %; "
              f"after a consolidation reuse {after}")


LABELS = {"persist": "persist a message (nanobot: no fsync)", "persist_fsync": "persist a message (both fsync)",
          "load": "load at start-up", "build": "build the next prompt"}


def summary(results: list[dict[str, Any]]) -> None:
    print("\nratio memtray/nanobot, median of interleaved pairs, wall (CPU); < 1: memtray is faster")
    print(f"  {'N':>8} {'persist (nanobot no fsync)':>27} {'persist (both fsync)':>21} {'load':>17} {'build':>17}"
          f"   prefix reuse min memtray/nanobot")
    for r in results:
        mp, np_ = r["prefix"]
        cells = [f"{ratio(*r[k]):.3f} ({ratio(*r[k], 1):.3f})" for k in ("persist", "persist_fsync", "load", "build")]
        print(f"  {r['n']:>8,} {cells[0]:>27} {cells[1]:>21} {cells[2]:>17} {cells[3]:>17}   "
              f"{mp['steady_reuse']['min'] * 100:.3f} % / {np_['steady_reuse']['min'] * 100:.3f} %")


if __name__ == "__main__":
    main()
