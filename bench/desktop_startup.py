"""Desktop start-up figures: start to tray (or window) ready, side by side with the floor of
a Qt app (bench/minimal_qt.py); `memtray toggle` to popup shown; idle RSS.

    xvfb-run -a -s "-screen 0 1440x900x24" .venv/bin/python bench/desktop_startup.py [--runs 21]

Each start is a fresh process: ``python -m memtray.core.cli`` (what the
``memtray`` script runs) on the same data home (seeded with 200 messages and a
memory revision), and ``python bench/minimal_qt.py [--tray]`` (one window with a
label, or one tray icon). Both write "ready" to $MEMTRAY_STARTUP_REPORT
(monotonic clock, shared by processes on Linux) by the same definition: the
first Expose event that finds the window, or the tray icon's own X window,
exposed. The time is from just before ``Popen`` to that event. For the tray the
bench starts ``trayer`` (an XEmbed system tray, Debian package trayer) on the
X display, so "ready" means the icon was really embedded and mapped by a tray
host; without trayer the tray figures are not taken.

The machine may be loaded by other work: memtray and the floor are started in
turn (ABBA order, after one unmeasured start of each that writes the .pyc files
and warms the disk cache), and the figures are medians of ``--runs`` starts
each, with the load average before and after. Toggle latency is measured from
just before the IPC request until the popup's show event.
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

from memtray.core.log.events import Message

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def events(report: Path) -> list[dict[str, Any]]:
    if not report.exists():
        return []
    # complete lines only: one being written has no newline yet
    return [json.loads(line) for line in report.read_text().split("\n")[:-1] if line.strip()]


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
            app.store.append(Message(role="user", content=f"question {i}"), session="quick")
            app.store.append(Message(role="assistant", content=f"answer {i} " * 20), session="quick")
        mem = app.memory
        if mem is not None:
            app.worker.call(lambda: mem.write("# About the user\n\n- Likes tea\n", reason="agent", source="model"))


HEAVY = ("litellm", "apscheduler", "dulwich", "sqlite3", "keyring", "openai", "httpx", "mcp")


def start_memtray(env: dict[str, str], tmp: Path, label: str) -> dict[str, Any]:
    """One start of memtray, quit as a user would: its "ready" event, "t" made relative to Popen."""
    from memtray.core.base.home import Home

    report = tmp / f"report-{label}.jsonl"
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli"], cwd=str(ROOT),
                            env=dict(env, MEMTRAY_STARTUP_REPORT=str(report)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ready = wait_for(report, "ready", 1, proc)
        started = wait_for(report, "started", 1, proc)  # App open, listening, popup built
    finally:
        quit_and_wait(Home.resolve(Path(env["MEMTRAY_HOME"])), proc)
    ready["started"] = started["t"] - t0
    modules = ready.pop("modules", [])
    ready["heavy"] = sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})
    ready["modules"] = len(modules)
    return dict(ready, t=ready["t"] - t0)


def start_floor(env: dict[str, str], tmp: Path, label: str, *, tray: bool) -> dict[str, Any]:
    """One start of bench/minimal_qt.py: its "ready" event, "t" made relative to Popen."""
    report = tmp / f"report-{label}.jsonl"
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "minimal_qt.py"), *(["--tray"] if tray else [])],
                            cwd=str(ROOT), env=dict(env, MEMTRAY_STARTUP_REPORT=str(report)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ready = wait_for(report, "ready", 1, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return dict(ready, t=ready["t"] - t0)


def interleaved(env: dict[str, str], tmp: Path, runs: int, *, tray: bool) -> tuple[list[dict[str, Any]],
                                                                                     list[dict[str, Any]]]:
    """memtray and the minimal Qt program in turn (ABBA), after one unmeasured start of each."""
    kind = "tray" if tray else "window"
    start_memtray(env, tmp, f"{kind}-warm")
    start_floor(env, tmp, f"floor-{kind}-warm", tray=tray)
    mine: list[dict[str, Any]] = []
    floor: list[dict[str, Any]] = []
    for i in range(runs):
        if i % 2 == 0:
            mine.append(start_memtray(env, tmp, f"{kind}-{i}"))
            floor.append(start_floor(env, tmp, f"floor-{kind}-{i}", tray=tray))
        else:
            floor.append(start_floor(env, tmp, f"floor-{kind}-{i}", tray=tray))
            mine.append(start_memtray(env, tmp, f"{kind}-{i}"))
    return mine, floor


def python_pass(runs: int = 5) -> float:
    """`python -c pass`, the interpreter's own start on this minute (median)."""
    times = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.monotonic() - t0)
    return statistics.median(times)


def floor_rss(env: dict[str, str], tmp: Path, *, tray: bool = False) -> tuple[int, list[tuple[str, int]]]:
    """Idle RSS of bench/minimal_qt.py (one window or tray icon, nothing else), 5 s after it is ready."""
    report = tmp / "report-floor-rss.jsonl"
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "minimal_qt.py"), *(["--tray"] if tray else [])],
                            cwd=str(ROOT),
                            env=dict(env, MEMTRAY_STARTUP_REPORT=str(report)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(report, "ready", 1, proc)
        time.sleep(5)
        return rss_breakdown(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)


def toggles_and_rss(env: dict[str, str], tmp: Path, toggles: int,
                    tray: bool) -> tuple[list[float], Any, Any, Any]:
    """One process: RSS 5 s after start; RSS at idle (in the tray: 20 s after ready, with the model
    client still unloaded, since it loads when the user opens the popup or window; with no tray:
    once the start-time warm-up of the window case is done); then `memtray toggle` to popup
    shown, and RSS after the toggles, once the model client is loaded."""
    from memtray.core.base import ipc
    from memtray.core.base.home import Home

    h = Home.resolve(Path(env["MEMTRAY_HOME"]))
    report = tmp / f"report-toggle-{'tray' if tray else 'window'}.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli"], cwd=str(ROOT),
                            env=dict(env, MEMTRAY_STARTUP_REPORT=str(report)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times: list[float] = []
    try:
        ready = wait_for(report, "ready", 1, proc)
        assert bool(ready.get("tray")) == tray, ready
        time.sleep(5)
        rss = rss_breakdown(proc.pid)
        if tray:
            time.sleep(15)  # the deferred start (scheduler, sync, search) is long done
            warmed = [e for e in events(report) if e["event"] == "client_warm"]
            assert not warmed, "the model client was loaded in the tray before anything was opened"
        else:
            wait_for(report, "client_warm", 1, proc, timeout=300)
            time.sleep(5)
        rss_idle = rss_breakdown(proc.pid)
        for n in range(1, toggles + 1):
            t1 = time.monotonic()
            ipc.request(h, {"argv": ["toggle"]}, lambda _m: None, timeout=30)
            shown = wait_for(report, "popup_shown", n, proc)
            times.append(shown["t"] - t1)
            ipc.request(h, {"argv": ["toggle"]}, lambda _m: None, timeout=30)  # hide again
            time.sleep(0.2)
        wait_for(report, "client_warm", 1, proc, timeout=300)  # the first show loads it in the tray
        time.sleep(5)
        rss_warm = rss_breakdown(proc.pid)
    finally:
        quit_and_wait(h, proc)
    return times, rss, rss_idle, rss_warm


def quit_and_wait(home: Any, proc: subprocess.Popen[bytes]) -> None:
    """Ask the instance to quit (as a user would), and kill it if it does not."""
    from memtray.core.base import ipc

    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:  # the tray is shown before the instance listens: like `memtray quit`, ask again
                ipc.request(home, {"argv": ["quit"]}, lambda _m: None, timeout=30)
            except ipc.NoInstance:
                time.sleep(0.05)
                continue
            proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def tray_host(env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """Start trayer (an XEmbed system tray, Debian package ``trayer``) on this X display,
    and wait until it owns the system tray selection (as Qt will see it)."""
    if not env.get("DISPLAY") or shutil.which("trayer") is None:
        return None
    proc = subprocess.Popen(["trayer", "--edge", "top", "--align", "right", "--widthtype", "pixel",
                             "--width", "200", "--height", "24"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    probe = "from PySide6.QtWidgets import QApplication, QSystemTrayIcon as T; a = QApplication([]); " \
            "raise SystemExit(0 if T.isSystemTrayAvailable() else 1)"
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        if subprocess.run([sys.executable, "-c", probe], env=env, stderr=subprocess.DEVNULL).returncode == 0:
            return proc
        time.sleep(0.2)
    proc.terminate()
    proc.wait()
    return None


def side_by_side(label: str, mine: list[dict[str, Any]], floor: list[dict[str, Any]]) -> None:
    ms = lambda xs: f"{statistics.median(xs) * 1000:.0f} ms (min {min(xs) * 1000:.0f}, max {max(xs) * 1000:.0f})"  # noqa: E731
    m = [e["t"] for e in mine]
    f = [e["t"] for e in floor]
    ratio = statistics.median(m) / statistics.median(f)
    print(f"start -> {label}, {len(m)} starts each, interleaved:")
    print(f"    memtray            {ms(m)}")
    print(f"    bench/minimal_qt   {ms(f)}")
    print(f"    ratio of medians   {ratio:.2f}x")
    print(f"    memtray started    {ms([e['started'] for e in mine])} (the App open, the instance listening, "
          "the popup built: what follows ready)")
    mc = [e["cpu"] for e in mine if "cpu" in e]
    fc = [e["cpu"] for e in floor if "cpu" in e]
    if mc and fc:  # CPU time of the process itself up to ready: what the load does not stretch
        print(f"    CPU to ready       memtray {statistics.median(mc) * 1000:.0f} ms, minimal "
              f"{statistics.median(fc) * 1000:.0f} ms, ratio {statistics.median(mc) / statistics.median(fc):.2f}x")
    print(f"    exposed at ready: memtray {sum(bool(e.get('exposed')) for e in mine)}/{len(mine)}, "
          f"minimal {sum(bool(e.get('exposed')) for e in floor)}/{len(floor)}; modules imported by memtray at "
          f"ready: {statistics.median(e['modules'] for e in mine):.0f}; heavy ones among them: "
          f"{sorted({h for e in mine for h in e['heavy']}) or 'none'}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--toggles", type=int, default=10)
    ap.add_argument("--only", choices=("window", "tray", "rss"),
                    help="take only this start-up ratio (no toggles, RSS), or only toggles and RSS")
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
    load = os.getloadavg()
    print(f"platform: {platform}; {os.cpu_count()} cores; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"`python -c pass` {python_pass() * 1000:.0f} ms; 200 messages in the session")
    if args.only not in ("tray", "rss"):
        mine, floor = interleaved(env, tmp, args.runs, tray=False)
        assert not any(e["tray"] for e in mine), "a system tray was found: the window figure needs none"
        side_by_side("window ready (no system tray: the main window is the app's face)", mine, floor)
    if args.only not in ("window", "rss"):
        host = tray_host(env)
        if host is None:
            print("start -> tray icon ready: not measured (needs an X display and `trayer`, Debian package trayer)")
        else:
            try:
                mine, floor = interleaved(env, tmp, args.runs, tray=True)
            finally:
                host.terminate()
                host.wait()
            assert all(e["tray"] for e in mine), "memtray did not see trayer's system tray"
            side_by_side("tray icon ready (trayer embeds it)", mine, floor)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.only in ("window", "tray"):
        return 0
    host = tray_host(env)  # idle RSS as a tray app sits (the usual case), when a tray host is here
    try:
        toggles, rss, rss_idle, rss_warm = toggles_and_rss(env, tmp, args.toggles, tray=host is not None)
        floor = floor_rss(env, tmp, tray=host is not None)
    finally:
        if host is not None:
            host.terminate()
            host.wait()
    print(f"`memtray toggle` IPC -> popup show event, median of {len(toggles)}: {ms(toggles)}")
    face = "in the tray" if host is not None else "window, no tray"
    idle = ("memtray idle in the tray, 20 s after ready (model client not loaded: nothing opened yet)"
            if host is not None else "memtray idle once the window's warm-up import is done")
    for label, figure in ((f"minimal PySide6 program ({'a tray icon' if host is not None else 'one window'}), "
                           "idle 5 s after ready", floor),
                          (f"memtray 5 s after ready ({face})", rss),
                          (idle, rss_idle),
                          (f"memtray after {len(toggles)} popup toggles (model client loaded)", rss_warm)):
        total, top = figure
        print(f"{label}: {total / 1024:.0f} MiB; largest mappings:")
        for name, kb in top:
            print(f"    {kb / 1024:7.1f} MiB  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
