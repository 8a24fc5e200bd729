"""Desktop start-up figures: start to tray (or window) ready, `memtray toggle` to popup shown, idle RSS.

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/desktop_startup.py [--runs 5]

Each start is a separate process (``python -m memtray.core.cli``, what the
``memtray`` script runs) on the same data home (seeded with 200 messages and a
memory revision, after one warm-up start that creates it). The app writes its
milestones to $MEMTRAY_STARTUP_REPORT (monotonic clock, shared by processes on
Linux), including whether litellm was imported at that point. Toggle latency is
measured from just before the IPC request until the popup's show event.
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
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def events(report: Path) -> list[dict[str, Any]]:
    if not report.exists():
        return []
    return [json.loads(line) for line in report.read_text().splitlines() if line.strip()]


def wait_for(report: Path, event: str, count: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        evs = [e for e in events(report) if e["event"] == event]
        if len(evs) >= count:
            return evs[count - 1]
        if proc.poll() is not None:
            raise SystemExit(f"memtray exited with {proc.returncode} before {event}")
        time.sleep(0.005)
    raise SystemExit(f"timed out waiting for {event}")


def rss_breakdown(pid: int) -> tuple[int, list[tuple[str, int]]]:
    total = 0
    by: dict[str, int] = defaultdict(int)
    name = "[anon]"
    with open(f"/proc/{pid}/smaps") as fh:
        for line in fh:
            parts = line.split()
            if not parts:
                continue
            if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
                path = parts[5] if len(parts) > 5 else "[anon]"
                name = Path(path).name if path.startswith("/") else path
            elif parts[0] == "Rss:":
                kb = int(parts[1])
                total += kb
                by[name] += kb
    return total, sorted(by.items(), key=lambda kv: -kv[1])[:8]


def seed(home_root: Path) -> None:
    from memtray.core.app import App
    from memtray.core.base import config
    from memtray.core.base.home import Home

    home = Home.resolve(home_root)
    config.set_value(home, "model", "openai/gpt-4o-mini")
    with App.open(home) as app:
        for i in range(100):
            app.store.append("message", {"role": "user", "content": f"question {i}"}, session="quick")
            app.store.append("message", {"role": "assistant", "content": f"answer {i} " * 20}, session="quick")
        mem = app.memory
        if mem is not None:
            app.worker.call(lambda: mem.write("# About the user\n\n- Likes tea\n", reason="agent", source="model"))


def starts(env: dict[str, str], tmp: Path, label: str, runs: int) -> tuple[list[float], list[bool], list[bool],
                                                                            list[bool]]:
    """Start and quit memtray ``runs`` + 1 times; the times to "ready" of all but the first."""
    from memtray.core.base.home import Home

    h = Home.resolve(Path(env["MEMTRAY_HOME"]))
    times: list[float] = []
    litellm: list[bool] = []
    aps: list[bool] = []
    tray: list[bool] = []
    for run in range(runs + 1):  # run 0 warms the disk cache and writes the .pyc files
        report = tmp / f"report-{label}-{run}.jsonl"
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli"], cwd=str(ROOT),
                                env=dict(env, MEMTRAY_STARTUP_REPORT=str(report)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ready = wait_for(report, "ready", 1, proc)
            if run:
                times.append(ready["t"] - t0)
                litellm.append(ready["litellm"])
                aps.append(ready.get("apscheduler", False))
                tray.append(ready["tray"])
        finally:
            quit_and_wait(h, proc)
    return times, litellm, aps, tray


def floor_starts(env: dict[str, str], tmp: Path, runs: int, *, tray: bool) -> list[float]:
    """Start bench/minimal_qt.py ``runs`` + 1 times; the times to "ready" of all but the first."""
    times: list[float] = []
    for run in range(runs + 1):
        report = tmp / f"report-floor-{'tray' if tray else 'window'}-{run}.jsonl"
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "minimal_qt.py"), *(["--tray"] if tray else [])],
                                cwd=str(ROOT), env=dict(env, MEMTRAY_STARTUP_REPORT=str(report)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ready = wait_for(report, "ready", 1, proc)
            if run:
                times.append(ready["t"] - t0)
        finally:
            proc.terminate()
            proc.wait(30)
    return times


def interleaved(env: dict[str, str], tmp: Path, runs: int, *, tray: bool) -> tuple[list[float], list[float]]:
    """memtray and the minimal Qt program, one start each in turn, so both see the same minute."""
    mine: list[float] = []
    floor: list[float] = []
    for i in range(runs):
        times, *_ = starts(env, tmp, f"{'tray' if tray else 'window'}-pair{i}", 1)
        mine += times
        floor += floor_starts(env, tmp, 1, tray=tray)
    return mine, floor


def toggles_and_rss(env: dict[str, str], tmp: Path, toggles: int) -> tuple[list[float], Any, Any]:
    """One process: idle RSS, then `memtray toggle` to popup shown, then RSS once litellm is warm."""
    from memtray.core.base import ipc
    from memtray.core.base.home import Home

    h = Home.resolve(Path(env["MEMTRAY_HOME"]))
    report = tmp / "report-toggle.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli"], cwd=str(ROOT),
                            env=dict(env, MEMTRAY_STARTUP_REPORT=str(report)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times: list[float] = []
    try:
        wait_for(report, "ready", 1, proc)
        time.sleep(5)
        rss = rss_breakdown(proc.pid)
        for n in range(1, toggles + 1):
            t1 = time.monotonic()
            ipc.request(h, {"argv": ["toggle"]}, lambda _m: None, timeout=30)
            shown = wait_for(report, "popup_shown", n, proc)
            times.append(shown["t"] - t1)
            ipc.request(h, {"argv": ["toggle"]}, lambda _m: None, timeout=30)  # hide again
            time.sleep(0.2)
        time.sleep(8)  # the first show warms litellm up on the worker
        rss_warm = rss_breakdown(proc.pid)
    finally:
        quit_and_wait(h, proc)
    return times, rss, rss_warm


def quit_and_wait(home: Any, proc: subprocess.Popen[bytes]) -> None:
    """Ask the instance to quit (as a user would), and kill it if it does not."""
    from memtray.core.base import ipc

    try:
        if proc.poll() is None:
            ipc.request(home, {"argv": ["quit"]}, lambda _m: None, timeout=30)
            proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def tray_host(env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """Start trayer (an XEmbed system tray, Debian package ``trayer``) on this X display."""
    if not env.get("DISPLAY") or shutil.which("trayer") is None:
        return None
    proc = subprocess.Popen(["trayer", "--edge", "top", "--align", "right", "--widthtype", "pixel",
                             "--width", "200", "--height", "24"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)  # until it owns the _NET_SYSTEM_TRAY selection
    return proc if proc.poll() is None else None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--toggles", type=int, default=10)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mtbench"))
    home = tmp / "home"
    env = dict(os.environ, MEMTRAY_HOME=str(home), XDG_RUNTIME_DIR=str(tmp), MEMTRAY_HOTKEY_BACKEND="none",
               XDG_CONFIG_HOME=str(tmp / "config"))
    env.pop("MEMTRAY_NO_DESKTOP", None)
    # pip writes .pyc files when it installs memtray; a shell that sets
    # PYTHONDONTWRITEBYTECODE would instead make every start recompile what changed
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.update({k: env[k] for k in ("MEMTRAY_HOME", "XDG_RUNTIME_DIR")})
    seed(home)
    platform = env.get("QT_QPA_PLATFORM") or ("xcb" if env.get("DISPLAY") else "?")
    ms = lambda xs: f"{statistics.median(xs) * 1000:.0f} ms (min {min(xs) * 1000:.0f}, max {max(xs) * 1000:.0f})"  # noqa: E731
    print(f"platform: {platform}; {args.runs} starts each (after a warm-up start), 200 messages in the session")
    window, litellm, aps, tray = starts(env, tmp, "window", args.runs)
    assert not any(tray)
    print(f"start -> window ready (no system tray: the main window shows), median: {ms(window)}")
    print(f"    litellm imported at ready: {any(litellm)}; apscheduler imported at ready: {any(aps)}")
    mine, floor = interleaved(env, tmp, args.runs, tray=False)
    ratio = statistics.median(mine) / statistics.median(floor)
    print(f"    side by side with bench/minimal_qt.py (one window, a label), interleaved: memtray {ms(mine)}, "
          f"minimal {ms(floor)}, ratio {ratio:.2f}x")
    host = tray_host(env)
    if host is None:
        print("start -> tray ready: not measured (needs an X display and `trayer`, Debian package trayer)")
    else:
        try:
            tray_times, litellm, aps, tray = starts(env, tmp, "tray", args.runs)
        finally:
            host.terminate()
            host.wait()
        if all(tray):
            print(f"start -> tray icon ready (trayer as the system tray), median: {ms(tray_times)}")
            print(f"    litellm imported at ready: {any(litellm)}; apscheduler imported at ready: {any(aps)}")
            host = tray_host(env)
            try:
                mine, floor = interleaved(env, tmp, args.runs, tray=True)
            finally:
                if host is not None:
                    host.terminate()
                    host.wait()
            ratio = statistics.median(mine) / statistics.median(floor)
            print(f"    side by side with bench/minimal_qt.py --tray, interleaved: memtray {ms(mine)}, "
                  f"minimal {ms(floor)}, ratio {ratio:.2f}x")
        else:
            print(f"start -> tray: Qt did not see trayer's tray in {tray.count(False)} of {len(tray)} starts")
    toggles, rss, rss_warm = toggles_and_rss(env, tmp, args.toggles)
    print(f"`memtray toggle` IPC -> popup show event, median of {len(toggles)}: {ms(toggles)}")
    for label, figure in (("idle RSS after start (5 s idle)", rss), ("RSS after the popup warmed litellm up", rss_warm)):
        total, top = figure
        print(f"{label}: {total / 1024:.0f} MiB; largest mappings:")
        for name, kb in top:
            print(f"    {kb / 1024:7.1f} MiB  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
