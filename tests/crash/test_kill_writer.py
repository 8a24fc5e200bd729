"""SIGKILL a writer at random moments: every acknowledged seq survives, seq is gapless."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memtray.core.eventlog import verify
from memtray.core.home import Home
from memtray.core.projections import replay
from memtray.core.store import Store

WRITER = Path(__file__).with_name("writer.py")
KILLS = int(os.environ.get("MEMTRAY_CRASH_KILLS", "25"))


def _run_and_kill(home: Path, rng: random.Random) -> list[int]:
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(home), "100000", "4096"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    acked: list[int] = []
    line = proc.stdout.readline()
    assert line.startswith("start"), line
    deadline = rng.randint(1, 60)
    for _ in range(deadline):
        line = proc.stdout.readline()
        if line.startswith("ack"):
            acked.append(int(line.split()[1]))
    time.sleep(rng.random() * 0.01)
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate()
    acked += [int(ln.split()[1]) for ln in rest.splitlines() if ln.startswith("ack")]
    return acked


@pytest.mark.slow
def test_sigkill_loop_loses_no_acknowledged_event(tmp_path: Path) -> None:
    rng = random.Random(1234)
    home = tmp_path / "home"
    all_acked: list[int] = []
    for _ in range(KILLS):
        all_acked += _run_and_kill(home, rng)
        store = Store.open(Home.resolve(home), segment_bytes=4096)
        seqs = [r.seq for r in store.log.records()]
        assert seqs == list(range(1, len(seqs) + 1)), "seq must be gapless"
        assert set(all_acked) <= set(seqs), "an acknowledged event was lost"
        assert len(store.log.cut) <= 1
        # checkpointed + tail state equals a full replay
        full = replay(store.log.records())
        assert store.state.to_json() == full.to_json()
        store.close()
    count, damages = verify(home / "events")
    assert damages == [] and count >= len(set(all_acked))


def test_second_writer_gets_a_clear_message(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store = Store.open(home)
    code = (
        "import sys\n"
        "from memtray.core.home import Home\n"
        "from memtray.core.store import Store\n"
        "from memtray.core.errors import AlreadyRunning\n"
        "try:\n"
        f"    Store.open(Home.resolve({str(home.root)!r}))\n"
        "except AlreadyRunning as e:\n"
        "    print('refused:', e); sys.exit(3)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 3, out.stderr
    assert f"pid {os.getpid()}" in out.stdout and "another memtray process" in out.stdout
    store.close()
    out2 = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out2.returncode == 0, out2.stdout + out2.stderr
