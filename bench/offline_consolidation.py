"""One offline consolidation by the bundled SmolLM2: the forced ``save_memory`` call's tokens,
its wall time, and whether its JSON closed.

Each round runs in a fresh interpreter and a fresh data home, with the same four messages and
a fixed clock as tests/integration/test_localmodel.py (so the prompt, and SmolLM2's greedy
output, are the same on every run). The engine's ``call`` is wrapped to read what llama.cpp
returned: the tool call's completion tokens (the cap is ``localmodel.MAX_TOOL_TOKENS``), the
finish reason, and the time it took; the whole consolidation (prompt, call, guard, writes) is
timed around ``consolidate``, after the model is loaded.

Usage: bench/offline_consolidation.py [--rounds 1] [--threads N]
       PYTHONPATH=DIR bench/offline_consolidation.py   (an older memtray, DIR/memtray/core -> its core/)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PY = sys.executable

RUN = r"""
import json, sys, time
from memtray.core.app import App
from memtray.core.base.clock import FakeClock
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.llm import localmodel
from memtray.core.log.events import Message

calls = []
plain_call = localmodel.Engine.call

def timed_call(self, messages, params, stream):
    started = time.perf_counter()
    result = plain_call(self, messages, params, stream)
    choice = result["choices"][0]
    tcs = choice["message"].get("tool_calls") or []
    args = tcs[0]["function"]["arguments"] if tcs else None
    try:
        # strict=False: like memtray's door, a raw line break inside a string is taken as one
        parsed = args is not None and isinstance(json.loads(args, strict=False), dict)
    except ValueError:
        parsed = False
    calls.append({"seconds": time.perf_counter() - started, "usage": result.get("usage"),
                  "finish_reason": choice.get("finish_reason"), "tool": bool(tcs), "parsed": parsed,
                  "arguments_chars": len(args or ""), "arguments": (args or "")[:400]})
    return result

localmodel.Engine.call = timed_call
engine = localmodel.engine_for(None)
loaded = time.perf_counter()
with engine.lock:
    engine.load()
loaded = time.perf_counter() - loaded
app = App.open(Home.resolve(sys.argv[1]), clock=FakeClock(),
               config=Config(memory_window=1000, max_tokens=512, consolidation_timeout=900))
error = None
try:
    for role, text in [("user", "My name is Ada and I live in Lyon."), ("assistant", "Nice to meet you, Ada!"),
                       ("user", "I drink green tea every morning."), ("assistant", "Noted: green tea.")]:
        app.store.append(Message(role=role, content=text), session="s")
    started = time.perf_counter()
    try:
        outcome = app.run(app.consolidation.consolidate("s", archive_all=True), timeout=1800)
        summary = outcome.summary()
    except Exception as exc:  # the figure is whether it fails, and how
        error, summary = f"{type(exc).__name__}: {exc}"[:300], None
    wall = time.perf_counter() - started
finally:
    app.close()
print(json.dumps({"model_load": loaded, "consolidation": wall, "calls": calls, "error": error,
                  "summary": summary, "threads": localmodel.threads(),
                  "max_tool_tokens": localmodel.MAX_TOOL_TOKENS}))
"""


def one_round(threads: int | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="memtray-offline-cons-") as tmp:
        env = dict(os.environ, PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring", MEMTRAY_NO_DESKTOP="1")
        for var in ("MEMTRAY_NO_LOCAL_MODEL", "MEMTRAY_MODEL", "MEMTRAY_API_BASE"):
            env.pop(var, None)
        if threads:
            env["MEMTRAY_LOCAL_THREADS"] = str(threads)
        out = subprocess.run([PY, "-c", RUN, str(Path(tmp) / "home")], env=env, capture_output=True, text=True,
                             timeout=3600)
        if out.returncode != 0:
            raise SystemExit(out.stderr[-3000:])
        return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    rounds = [one_round(args.threads) for _ in range(args.rounds)]
    for r in rounds:
        print(json.dumps(r))
    tool = [c for r in rounds for c in r["calls"] if c["tool"]]  # type: ignore[attr-defined]
    if tool:
        tokens = [c["usage"]["completion_tokens"] for c in tool if c.get("usage")]
        print(f"tool call: completion tokens median {statistics.median(tokens) if tokens else '?'} "
              f"(cap {rounds[0]['max_tool_tokens']}), {statistics.median(c['seconds'] for c in tool):.1f} s, "
              f"JSON parsed {sum(c['parsed'] for c in tool)}/{len(tool)}, "
              f"finish {sorted({str(c['finish_reason']) for c in tool})}")
    print(f"consolidation wall (model loaded): median {statistics.median(float(r['consolidation']) for r in rounds):.1f} s; "  # type: ignore[arg-type]
          f"errors: {[r['error'] for r in rounds if r['error']]}; "
          f"outcomes: {[r['summary'] for r in rounds if r['summary']]}; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
