"""``memtray sync --status``: the documented shape, whatever the last sync did, for any remote."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.sync_support import bare
from tests.support import cli_here

#: docs/CLI.md, `memtray sync --status --json`
KEYS = {"remote", "device", "last_attempt", "last_success", "last_error", "hint", "failures", "imported",
        "pushed", "peers", "conflicts", "pending_heads", "pending_purges", "notes", "conflicts_pending"}


def _status(root: Path, *extra: str) -> dict[str, object]:
    out = cli_here(root, "sync", *extra, "--status", "--json")
    assert "Traceback" not in out.stderr
    body = json.loads(out.stdout)
    assert isinstance(body, dict)
    return body


def test_the_status_has_every_documented_key_after_a_failure_and_after_a_success(tmp_path: Path) -> None:
    root = tmp_path / "a"
    missing = tmp_path / "missing.git"
    assert cli_here(root, "sync", str(missing)).returncode == 1
    failed = _status(root)
    assert set(failed) >= KEYS
    assert failed["last_error"] and failed["hint"] and failed["last_success"] is None
    assert failed["peers"] == [] and failed["pushed"] == 0 and failed["failures"] == 1
    bare(missing)
    assert cli_here(root, "sync", "--clear", str(missing)).returncode == 0  # (this test has no keyring)
    ok = _status(root)
    assert set(ok) >= KEYS
    assert ok["last_error"] is None and ok["hint"] is None and ok["last_success"]


def test_status_of_another_remote_is_its_own_and_the_digest_compares_devices(tmp_path: Path) -> None:
    main, other = bare(tmp_path / "main.git"), bare(tmp_path / "other.git")
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        assert cli_here(root, "config", "set", "sync_remote", str(main)).returncode == 0
        assert cli_here(root, "config", "set", "sync_encrypt", "false").returncode == 0  # no keyring here
    assert cli_here(a, "remind", "add", "water the plants", "--at", "in 5h").returncode == 0
    assert _status(a)["digest"] != _status(b)["digest"]
    assert cli_here(a, "sync", "").returncode == 0  # an empty REMOTE: the configured one
    never = cli_here(a, "sync", str(other), "--status")
    assert never.stdout.strip() == f"never synced with {other}"
    assert _status(a, str(other))["remote"] == str(other) and _status(a, str(other))["last_success"] is None
    assert cli_here(a, "sync", str(other)).returncode == 0
    assert _status(a, str(other))["remote"] == str(other)
    assert _status(a)["remote"] == str(main)
    assert cli_here(b, "sync").returncode == 0 and cli_here(a, "sync").returncode == 0
    da, db = _status(a)["digest"], _status(b)["digest"]
    assert isinstance(da, str) and len(da) == 64 and da == db
    assert str(da)[:16] in cli_here(a, "sync", "--status").stdout


def test_a_remote_path_that_does_not_exist_says_how_to_create_it(tmp_path: Path) -> None:
    out = cli_here(tmp_path / "a", "sync", str(tmp_path / "nowhere.git"))
    assert out.returncode == 1 and "does not exist" in out.stderr
    assert f"git init --bare {tmp_path / 'nowhere.git'}" in out.stderr and "Traceback" not in out.stderr
