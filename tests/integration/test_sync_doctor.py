"""`memtray doctor` checks the sync state: the setting, repeated failures, the sync repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memtray.core.admin.doctor import check
from memtray.core.base.home import Home
from memtray.core.sync.gitcli import SyncError

from tests.integration.sync_support import bare, open_app, say
from tests.support import run_cli


def _sync_findings(root: Path) -> list[tuple[bool, str]]:
    return [(f.ok, f.title) for f in check(Home(root)) if f.code.startswith("sync")]


def test_doctor_follows_the_sync_state(tmp_path: Path) -> None:
    root = tmp_path / "a"
    remote = bare(tmp_path / "remote.git")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'read-only mirror' >&2\nexit 1\n")
    hook.chmod(0o755)
    app = open_app(root)
    try:
        assert app.sync is not None
        assert _sync_findings(root) == [(True, "note: sync is not set up (see `memtray sync`)")]
        say(app, "x")
        with pytest.raises(SyncError):
            app.sync.sync(str(remote))
        assert (True, "warning: the last sync failed (retried automatically)") in _sync_findings(root)
        for _ in range(2):
            with pytest.raises(SyncError):
                app.sync.sync(str(remote))
        assert (False, "sync keeps failing") in _sync_findings(root)
        hook.unlink()
        app.sync.sync(str(remote))
        titles = _sync_findings(root)
        assert all(ok for ok, _ in titles) and any(t.startswith("sync: device ") for _, t in titles)
        assert (True, "sync repository passes git fsck") in titles
    finally:
        app.close()
    # a damaged cache: the doctor says so and its repair removes it; the next sync rebuilds it
    objects = root / "sync" / "repo.git" / "objects"
    for p in objects.rglob("*"):
        if p.is_file() and len(p.parent.name) == 2:
            p.unlink()
    assert (False, "the sync repository is damaged") in _sync_findings(root)
    rep = run_cli(root, "doctor", "--repair", "--yes")
    assert "removed sync/repo.git" in rep.stdout, rep.stdout + rep.stderr
    out = run_cli(root, "sync", str(remote), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["pushed"] == 0
    st = run_cli(root, "sync", "--status", "--json")
    assert json.loads(st.stdout)["last_error"] is None
