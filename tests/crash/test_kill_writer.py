"""SIGKILL a log writer at random moments, many times: no acknowledged event is ever lost.

A fork server (tests/crash/forkserver.py) pays the interpreter start-up once, so
each kill cycle costs a fork, a few appends and a reopen: 200 kills (CI; set
``MEMTRAY_CRASH_KILLS``) run in well under a minute. Half of the writers split
every append into several ``write`` calls so kills also land mid-record. After
every kill the home is reopened as the writer would and checked: every
acknowledged seq present, seq gapless, at most one torn record cut, and
checkpoint + tail equal to a full replay.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from memtray.core.base.home import Home
from memtray.core.log.segments import verify
from memtray.core.log.store import Store

from tests.crash.harness import ForkServer, check_log, kill_writer

KILLS = int(os.environ.get("MEMTRAY_CRASH_KILLS", "200"))
WRITER = Path(__file__).with_name("writer.py")


@pytest.mark.slow
def test_sigkill_loop_loses_no_acknowledged_event(tmp_path: Path) -> None:
    rng = random.Random(1234)
    home = tmp_path / "home"
    acked: set[int] = set()
    cuts = checked = 0
    killed_mid_run = 0
    with ForkServer() as server:
        for _ in range(KILLS):
            child = kill_writer(server, home, rng)
            assert child.status == 9, f"the writer ended without being killed: {child.lines[-3:]}"
            killed_mid_run += child.killed_by_us
            acked.update(child.acked)
            result = check_log(home, acked)
            cuts += result.cut
            checked += result.events
    count, damages = verify(home / "events")
    assert damages == [] and count >= len(acked)
    assert killed_mid_run == KILLS
    assert len(acked) > KILLS  # the writers really wrote between kills
    print(f"\ncrash figures (writer): {KILLS} kills survived, {len(acked)} events acknowledged, "
          f"{checked} events checked, {cuts} torn records cut")


def test_plain_writer_script_still_works(tmp_path: Path) -> None:
    """writer.py (a fresh interpreter per run) for ad-hoc use: it writes, acks and exits."""
    home = tmp_path / "home"
    out = subprocess.run([sys.executable, str(WRITER), str(home), "5", "4096"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert [ln for ln in out.stdout.splitlines() if ln.startswith("ack")] == [f"ack {i}" for i in range(1, 6)]


def test_second_writer_gets_a_clear_message(tmp_path: Path) -> None:
    home = Home.resolve(tmp_path / "h")
    store = Store.open(home)
    code = (
        "import sys\n"
        "from memtray.core.base.home import Home\n"
        "from memtray.core.log.store import Store\n"
        "from memtray.core.base.errors import AlreadyRunning\n"
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
