"""Time to first token of the offline path: `memtray ask` with no provider configured (the
bundled SmolLM2 through llama.cpp), cold and warm, and what the cold wait is made of.

Scenarios (each round in a fresh data home; the figures are medians over the rounds):

* cold     -- no instance: `memtray ask` starts the background instance (which imports
              litellm and loads the model at the same time), the ask is forwarded to it;
* warm     -- a second `memtray ask` to that instance;
* oneshot  -- `memtray --no-daemon ask`: everything in the one process, in sequence.

The parts (in a fresh interpreter): Python + the CLI's imports; litellm's import (which the
offline path no longer waits for); llama.cpp loading the GGUF file; opening the App; the
prompt of a first `ask` (its tokens, and the time to its first token once the model is
loaded). Time to first token is the first byte of the
reply on a terminal (a pty, so the reply streams). `--threads N` sets
MEMTRAY_LOCAL_THREADS (what llama.cpp used before: all cores).

Replies are capped at 64 tokens (`max_tokens`): the figure is the first one.

Usage: bench/offline_ttft.py [--rounds 3] [--threads N] [--no-parts]
       PYTHONPATH=DIR bench/offline_ttft.py --no-parts   (an older memtray, DIR/memtray/core -> its core/)
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PY = sys.executable
QUESTION = "Hello! My name is Lena and I live in Graz. What can you do?"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, MEMTRAY_HOME=str(home), MEMTRAY_NO_DESKTOP="1",
               PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring", LITELLM_LOCAL_MODEL_COST_MAP="True",
               LITELLM_OFFLINE_MODE="true")
    for var in ("MEMTRAY_NO_WARM", "MEMTRAY_NO_LOCAL_MODEL", "MEMTRAY_MODEL", "MEMTRAY_API_BASE"):
        env.pop(var, None)
    env.update(extra)
    return env


def ask_on_pty(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the first byte of the reply, seconds to the end) of `memtray ARGS` with its
    stdout on a pty (so the reply streams; stderr, where notices go, is a pipe)."""
    master, slave = os.openpty()
    started = time.perf_counter()
    proc = subprocess.Popen([PY, "-m", "memtray.core.cli", *args], env=env, stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    first: float | None = None
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 600)
            if not ready:
                raise SystemExit("no output for 10 minutes")
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
            if first is None and chunk.strip():
                first = time.perf_counter() - started
    finally:
        os.close(master)
        err = proc.stderr.read() if proc.stderr else b""
        proc.wait()
    total = time.perf_counter() - started
    if proc.returncode != 0 or first is None:
        raise SystemExit(f"failed: memtray {' '.join(args)}\n{out.decode(errors='replace')}\n{err.decode(errors='replace')}")
    return first, total


def stop_instance(home: Path) -> None:
    env = _env(home)
    info = json.loads(subprocess.run([PY, "-m", "memtray.core.cli", "daemon", "status", "--json"], env=env,
                                     capture_output=True, text=True, check=True).stdout)
    if info["running"]:
        subprocess.run([PY, "-m", "memtray.core.cli", "daemon", "stop"], env=env, capture_output=True, check=True)
        try:
            fd = os.pidfd_open(int(info["pid"]))
        except ProcessLookupError:
            return
        select.select([fd], [], [], 60)
        os.close(fd)


PARTS = r"""
import json, os, sys, time
t0 = time.perf_counter()
import memtray.core.cli.main  # noqa: F401
t1 = time.perf_counter()
from memtray.core.llm.client import load_litellm
load_litellm()
t2 = time.perf_counter()
from memtray.core.llm import localmodel
engine = localmodel.Engine()
with engine.lock:
    engine.load()
t3 = time.perf_counter()
from memtray.core.app import App
from memtray.core.base.home import Home
app = App.open(Home.resolve(sys.argv[1]), start_services=False)
t4 = time.perf_counter()
try:
    seen = []
    localmodel.engine_for = lambda api_base, *a: engine  # the model loaded above: the turn pays for its prompt only
    t5 = time.perf_counter()
    result = app.run(app.agent.turn("cli", sys.argv[2], on_delta=lambda d: seen.append(time.perf_counter()),
                                    stream=True))
    usage = next((r.data.get("usage") for r in reversed(result.records) if r.type == "message"), None) or {}
    print(json.dumps({"imports": t1 - t0, "litellm": t2 - t1, "model_load": t3 - t2, "app_open": t4 - t3,
                      "prompt_first_token": (seen[0] if seen else time.perf_counter()) - t5,
                      "prompt_tokens": usage.get("prompt_tokens"), "threads": localmodel.threads()}))
finally:
    app.close()
"""


def parts(home: Path, env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run([PY, "-c", PARTS, str(home), QUESTION], env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="MEMTRAY_LOCAL_THREADS (0: memtray decides)")
    ap.add_argument("--no-parts", action="store_true",
                    help="only the end-to-end figures (e.g. for an older memtray on PYTHONPATH)")
    a = ap.parse_args()
    from memtray.core.llm import localmodel

    if localmodel.missing(check_disabled=False) is not None:
        raise SystemExit(f"the offline model is not installed: {localmodel.missing(check_disabled=False)}")
    extra = {"MEMTRAY_LOCAL_THREADS": str(a.threads)} if a.threads else {}
    figures: dict[str, list[float]] = {}

    def note(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value)

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start; "
          f"llama.cpp threads: {a.threads or 'memtray decides'}")
    for r in range(a.rounds):
        with tempfile.TemporaryDirectory(prefix="ttft-") as tmp:
            home = Path(tmp) / "home"
            env = _env(home, **extra)
            for name in ("home", "home2", "home3"):
                # replies of 64 tokens at most: the figure is the first token; the rest only takes time
                subprocess.run([PY, "-m", "memtray.core.cli", "config", "set", "max_tokens", "64"],
                               env=_env(Path(tmp) / name, **extra), capture_output=True, check=True)
            try:
                first, total = ask_on_pty(["ask", QUESTION], env)
                note("cold ttft", first)
                note("cold total", total)
                first, total = ask_on_pty(["ask", "And what is my name?"], env)
                note("warm ttft", first)
                note("warm total", total)
            finally:
                stop_instance(home)
            home2 = Path(tmp) / "home2"
            env2 = _env(home2, **extra)
            first, total = ask_on_pty(["--no-daemon", "ask", QUESTION], env2)
            note("oneshot ttft", first)
            if not a.no_parts:
                p = parts(Path(tmp) / "home3", _env(Path(tmp) / "home3", **extra))
                for k, v in p.items():
                    if k not in ("prompt_tokens", "threads"):
                        note(f"part: {k}", v)
                note("prompt tokens", float(p.get("prompt_tokens") or 0))
                note("threads", float(p["threads"]))
        print(f"round {r + 1}: cold {figures['cold ttft'][-1]:.1f}s, warm {figures['warm ttft'][-1]:.1f}s, "
              f"one-shot {figures['oneshot ttft'][-1]:.1f}s (load {os.getloadavg()[0]:.1f})", flush=True)
    print()
    print(f"{'figure':<28} {'median':>8}  {'min':>7}  {'max':>7}")
    for name, values in figures.items():
        unit = "" if name in ("prompt tokens", "threads") else "s"
        print(f"{name:<28} {statistics.median(values):>7.2f}{unit or ' '}  {min(values):>6.2f}{unit or ' '}  "
              f"{max(values):>6.2f}{unit or ' '}")


if __name__ == "__main__":
    main()
