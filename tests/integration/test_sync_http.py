"""Sync over smart HTTP with credentials from git's own credential helper, never from memtray."""

from __future__ import annotations

from pathlib import Path

import pytest
from memtray.core.sync.gitcli import SyncError

from tests.integration.http_git import http_git
from tests.integration.sync_support import contents, digest, homes, say, served


def test_sync_over_http_with_the_users_credential_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = served(tmp_path)
    gitconfig = tmp_path / "gitconfig"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    with homes(tmp_path, "ab") as (a, b):
        with http_git(srv) as base:
            url = f"{base}/mem.git"
            say(a, "over http")
            # no credentials anywhere: one clear error at once (never a prompt that waits)
            with pytest.raises(SyncError, match="cannot reach the remote") as info:
                a.sync.sync(url)
            assert "credential" in info.value.hint
            # the user's git knows them (here: the store helper); memtray never sees them
            store = tmp_path / "git-credentials"
            store.write_text(f"{base.replace('http://', 'http://ada:s3cret-token@')}\n")
            store.chmod(0o600)
            gitconfig.write_text(f"[credential]\n\thelper = store --file={store}\n")
            assert a.sync.sync(url).pushed == 2
            assert b.sync.sync(url).imported == 2
            a.sync.sync(url)
            assert "over http" in contents(b) and digest(a) == digest(b)
        for root in (tmp_path / "a", tmp_path / "b"):
            for p in root.rglob("*"):
                if p.is_file() and "objects" not in p.parts:
                    assert b"s3cret-token" not in p.read_bytes(), p
