"""What a person who scripts `memtray ask` waits for: wall time per call, against nanobot's one-shot CLI.

Scenarios, interleaved round by round on one scripted OpenAI-compatible server
(tests/fixtures/llm_server.py; real litellm on memtray's side, nanobot's own
client on its side):

* burst   -- no instance at the start; `memtray ask` BURST times in a row: the
             first starts the warm instance, the next ones are forwarded to it;
* warm    -- the instance is already warm: every call is forwarded;
* oneshot -- `memtray --no-daemon ask`: every call imports litellm (the old way);
* nanobot -- `nanobot agent -m` (nanobot-ai from the venv built from
             packaging/peers/nanobot.lock, or $NANOBOT), every call a fresh process.

Usage: bench/warm_cli.py [--rounds 3] [--burst 10] [--calls 5]
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixtures.llm_server import ScriptedLLMServer  # noqa: E402
from tests.peers import PeerBuildError, build_python  # noqa: E402

PY = sys.executable


def _nanobot() -> str:
    """$NANOBOT, or the `nanobot` of the venv built from packaging/peers/nanobot.lock (tests/peers.py)."""
    if os.environ.get("NANOBOT"):
        return os.environ["NANOBOT"]
    try:
        return str(build_python("nanobot").parent / "nanobot")
    except PeerBuildError as e:
        raise SystemExit(str(e)) from None


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, MEMTRAY_HOME=str(home), MEMTRAY_NO_DESKTOP="1", OPENAI_API_KEY="sk-bench",
               PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring", NO_PROXY="127.0.0.1,localhost",
               LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_OFFLINE_MODE="true")
    env.pop("MEMTRAY_NO_WARM", None)
    env.update(extra)
    return env


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t
    if out.returncode != 0 or "echo:" not in out.stdout:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    return wall


def _memtray(*args: str) -> list[str]:
    return [PY, "-m", "memtray.core.cli", *args]


def _stop_instance(home: Path) -> None:
    env = _env(home)
    info = json.loads(subprocess.run([PY, "-m", "memtray.core.cli", "daemon", "status", "--json"], env=env,
                                     capture_output=True, text=True, check=True).stdout)
    if not info["running"]:
        return
    subprocess.run([PY, "-m", "memtray.core.cli", "daemon", "stop"], env=env, capture_output=True, check=True)
    pid = int(info["pid"])
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    import select

    select.select([fd], [], [], 120)
    os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--burst", type=int, default=10)
    ap.add_argument("--calls", type=int, default=5, help="calls per round for the one-shot sides")
    args = ap.parse_args()
    nanobot = _nanobot()
    base = Path(tempfile.mkdtemp(prefix="mtwarmbench"))
    home = base / "home"
    res: dict[str, list[float]] = {"burst_first": [], "burst_next": [], "warm": [], "oneshot": [], "nanobot": []}
    print(f"load average at start: {os.getloadavg()[0]:.1f}; nanobot: {nanobot}", flush=True)
    try:
        with ScriptedLLMServer() as srv:
            env = _env(home)
            for k, v in (("model", "openai/test-model"), ("api_base", srv.base_url), ("llm_retries", "0")):
                subprocess.run([PY, "-m", "memtray.core.cli", "config", "set", k, v], env=env, check=True,
                               capture_output=True)
            nb_dir = base / "nanobot"
            nb_dir.mkdir()
            nb_cfg = nb_dir / "config.json"
            nb_cfg.write_text(json.dumps({
                "agents": {"defaults": {"model": "openai/test-model", "provider": "openai",
                                        "workspace": str(nb_dir / "ws")}},
                "providers": {"openai": {"apiKey": "sk-bench", "apiBase": srv.base_url}}}))
            nb_env = dict(os.environ, HOME=str(nb_dir), NO_PROXY="127.0.0.1,localhost")
            for r in range(args.rounds):
                _stop_instance(home)
                times = [_timed(_memtray("ask", f"burst {r}.{i}"), env) for i in range(args.burst)]
                res["burst_first"].append(times[0])
                res["burst_next"] += times[1:]
                res["warm"] += [_timed(_memtray("ask", f"warm {r}.{i}"), env) for i in range(args.burst)]
                _stop_instance(home)
                res["nanobot"] += [_timed([nanobot, "agent", "-m", f"nanobot {r}.{i}", "-c", str(nb_cfg),
                                           "--no-markdown"], nb_env) for i in range(args.calls)]
                res["oneshot"] += [_timed(_memtray("--no-daemon", "ask", f"oneshot {r}.{i}"), env)
                                   for i in range(args.calls)]
                print(f"round {r + 1}/{args.rounds} done (load {os.getloadavg()[0]:.1f})", flush=True)
            _stop_instance(home)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    def med(key: str) -> float:
        return statistics.median(res[key]) if res[key] else float("nan")

    nb = med("nanobot")
    print(f"\nwall time per call, medians over {args.rounds} interleaved rounds (s); ratio to nanobot agent -m")
    rows = [("first call, no instance running (starts it)", "burst_first"),
            (f"next {args.burst - 1} calls of that burst (forwarded)", "burst_next"),
            ("forwarded to an already warm instance", "warm"),
            ("memtray --no-daemon ask (one-shot, imports litellm)", "oneshot"),
            ("nanobot agent -m (one-shot)", "nanobot")]
    for label, key in rows:
        vals = res[key]
        if not vals:
            continue
        ratio = f"   x{med(key) / nb:.2f}" if res["nanobot"] else ""
        print(f"  {label:<55} {med(key):6.2f}  (min {min(vals):.2f}, max {max(vals):.2f}, n={len(vals)}){ratio}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
