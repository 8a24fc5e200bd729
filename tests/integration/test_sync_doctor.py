"""`memtray doctor` checks the sync state: the setting, repeated failures, the sync repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memtray.core.admin.doctor import check
from memtray.core.base.home import Home
from memtray.core.sync.gitcli import SyncError

from tests.integration.sync_support import bare, open_app, remember, say
from tests.support import cli_here


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
    rep = cli_here(root, "doctor", "--repair", "--yes")
    assert "removed sync/repo.git" in rep.stdout, rep.stdout + rep.stderr
    out = cli_here(root, "sync", str(remote), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["pushed"] == 0
    st = cli_here(root, "sync", "--status", "--json")
    assert json.loads(st.stdout)["last_error"] is None


def test_doctor_counts_the_merge_conflicts_waiting_now_not_the_last_syncs_list(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    a, b = open_app(tmp_path / "a"), open_app(tmp_path / "b")
    try:
        assert a.sync is not None and b.sync is not None
        for fact in ("Lives in Lyon", "Works at Acme"):
            remember(a, fact, "Me")
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        # b removes a fact that a rewords by hand: a conflict, kept for review on b
        b.write(lambda: b.memory.forget("F2", "changed jobs", model=None))
        md = a.home.memory / "MEMORY.md"
        md.write_text(md.read_text().replace("Works at Acme", "Works at Acme in sales"))
        assert a.write(a.memory.check_worktree)
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        [item] = b.write(b.memory.merge_conflicts)
        waiting = "note: 1 sync conflict(s) waiting for review (`memtray memory review`)"
        assert (True, waiting) in _sync_findings(b.home.root)
        b.write(lambda: b.memory.accept_review(item["id"]))
        assert b.sync.status()["conflicts"]  # the last sync's list still holds it
        assert not [t for _, t in _sync_findings(b.home.root) if "conflict" in t]
    finally:
        a.close()
        b.close()
