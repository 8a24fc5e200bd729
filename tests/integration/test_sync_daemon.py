"""`memtray sync` forwarded to a running daemon, and a purge made elsewhere applied by it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memtray.core.base.home import Home

from tests.integration.sync_support import bare, open_app, say
from tests.support import ROOT, cli_env, run_cli

SECRET = "correct-horse-battery-9"


def _holds(root: Path) -> bool:
    return any(SECRET.encode() in p.read_bytes() for p in (root / "events").glob("*.jsonl"))


def test_sync_through_a_running_daemon_and_a_purge_from_another_device(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    a, b = tmp_path / "a", tmp_path / "b"
    app = open_app(b)
    try:
        say(app, f"the meeting place is {SECRET}")  # not a secret to redaction: the user purges it
    finally:
        app.close()
    Home(a).create()
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "daemon"], env=cli_env(a),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()
        assert "memtray daemon: ready" in line, line + proc.stderr.read()
        assert run_cli(b, "sync", "--clear", str(remote)).returncode == 0  # a remote in clear, asked for
        out = run_cli(a, "sync", str(remote))  # forwarded: the daemon holds a
        assert out.returncode == 0, out.stderr
        assert "imported 2" in out.stdout
        assert _holds(a)
        purged = run_cli(b, "purge", SECRET, "--yes")
        assert purged.returncode == 0, purged.stderr
        assert run_cli(b, "sync", str(remote)).returncode == 0
        out = run_cli(a, "sync", str(remote))
        assert out.returncode == 0, out.stderr
        assert "applied 1 purge(s) made on other devices" in out.stdout
        assert not _holds(a)
        status = run_cli(a, "sync", "--status")
        assert status.returncode == 0 and "last sync:" in status.stdout
    finally:
        proc.terminate()
        proc.communicate(timeout=120)
