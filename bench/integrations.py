"""MCP server latency and import throughput (docs/INTEGRATIONS.md).

Usage: python bench/integrations.py [--conversations N] [--calls N]

* ``memtray mcp`` over stdio, driven by the official SDK client in a fresh data
  home: the time to ``initialize`` (the server process starting, the SDK
  imported), then the median of N calls of ``remember``, ``memory_log`` and
  ``search_history`` (each runs a memtray command: the data home opened and
  released, or the command forwarded to the running instance).
* ``memtray import chatgpt`` of a synthetic export of N conversations of 20
  messages (about 21 KB each): wall time, CPU time and the child's peak RSS, for
  the import and for the second run that finds everything imported.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import median


def mcp_latency(home: Path, calls: int) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> None:
        env = dict(os.environ, MEMTRAY_HOME=str(home), MEMTRAY_NO_DESKTOP="1")
        p = StdioServerParameters(command=sys.executable, args=["-m", "memtray.core.cli", "mcp"], env=env)
        with open(os.devnull, "w") as quiet:
            async with stdio_client(p, errlog=quiet) as (r, w), ClientSession(r, w) as s:
                t0 = time.perf_counter()
                await s.initialize()
                print(f"  initialize (server start)      {time.perf_counter() - t0:8.2f} s")
                for name in ("remember", "memory_log", "search_history"):
                    times = []
                    for i in range(calls):
                        args = {"remember": {"fact": f"The user owns plant number {i}"}, "memory_log": {},
                                "search_history": {"query": "plant"}}[name]
                        t0 = time.perf_counter()
                        res = await s.call_tool(name, args)
                        times.append(time.perf_counter() - t0)
                        assert not res.is_error, res
                    print(f"  {name:<30} {median(times) * 1000:8.0f} ms (median of {calls})")

    anyio.run(main)


def make_export(path: Path, n: int) -> None:
    rnd = random.Random(1)
    words = ["tea", "train", "Lyon", "code", "the", "a", "garden", "report"]
    with path.open("w") as f:
        f.write("[")
        for i in range(n):
            mapping: dict[str, object] = {"root": {"id": "root", "message": None, "parent": None, "children": ["m0"]}}
            prev = "root"
            for j in range(20):
                mapping[f"m{j}"] = {"id": f"m{j}", "parent": prev, "children": [f"m{j + 1}"] if j < 19 else [],
                                    "message": {"author": {"role": "user" if j % 2 == 0 else "assistant"},
                                                "create_time": 1.7e9 + i * 100 + j,
                                                "content": {"content_type": "text",
                                                            "parts": [" ".join(rnd.choice(words) for _ in range(200))]}}}
                prev = f"m{j}"
            f.write(("," if i else "") + json.dumps({"id": f"c{i}", "title": f"t{i}", "mapping": mapping,
                                                    "current_node": "m19"}))
        f.write("]")


def run_import(home: Path, export: Path, label: str) -> None:
    env = dict(os.environ, MEMTRAY_HOME=str(home), MEMTRAY_NO_DESKTOP="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "memtray.core.cli", "import", "chatgpt", str(export), "--json"],
                         env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    got = json.loads(out.stdout)
    print(f"  {label:<30} {wall:8.1f} s wall, {cpu:6.1f} s CPU, peak RSS {after.ru_maxrss / 1024:5.0f} MiB "
          f"({got['messages']:,} messages, {got['already_imported']:,} already imported)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print("memtray mcp over stdio (official SDK client):")
        mcp_latency(root / "mcp-home", args.calls)
        export = root / "conversations.json"
        make_export(export, args.conversations)
        print(f"memtray import chatgpt, {args.conversations:,} conversations ({export.stat().st_size / 2**20:.0f} MiB):")
        run_import(root / "import-home", export, "first import")
        run_import(root / "import-home", export, "again (nothing new)")


if __name__ == "__main__":
    main()
