"""``memtray sync --status``: the documented shape, whatever the last sync did, for any remote."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.sync_support import bare
from tests.support import run_cli

#: docs/CLI.md, `memtray sync --status --json`
KEYS = {"remote", "device", "last_attempt", "last_success", "last_error", "hint", "failures", "imported",
        "pushed", "peers", "conflicts", "pending_heads", "pending_purges", "notes", "conflicts_pending"}


def _status(root: Path, *extra: str) -> dict[str, object]:
    out = run_cli(root, "sync", *extra, "--status", "--json")
    assert "Traceback" not in out.stderr
    body = json.loads(out.stdout)
    assert isinstance(body, dict)
    return body


def test_the_status_has_every_documented_key_after_a_failure_and_after_a_success(tmp_path: Path) -> None:
    root = tmp_path / "a"
    missing = tmp_path / "missing.git"
    assert run_cli(root, "sync", str(missing)).returncode == 1
    failed = _status(root)
    assert KEYS <= set(failed)
    assert failed["last_error"] and failed["hint"] and failed["last_success"] is None
    assert failed["peers"] == [] and failed["pushed"] == 0 and failed["failures"] == 1
    bare(missing)
    assert run_cli(root, "sync", str(missing)).returncode == 0
    ok = _status(root)
    assert KEYS <= set(ok)
    assert ok["last_error"] is None and ok["hint"] is None and ok["last_success"]
