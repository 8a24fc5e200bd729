"""A full local disk during sync is named as such, for real: the data home on a small tmpfs.

Mounting needs root (``mount -t tmpfs``); elsewhere the test is skipped with the
reason, and the git message it reads is checked on its own below.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.sync.gitcli import FULL_HINT, SyncError, disk_full

from tests.integration.sync_support import bare, open_app, say, sync
from tests.support import small_tmpfs


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    yield from small_tmpfs(tmp_path, "8m")


def _fill(where: Path) -> None:
    n = 0
    for chunk in (1 << 20, 1 << 16, 4096, 512, 1):
        while True:
            n += 1
            fd = os.open(where / f"fill-{n:06d}", os.O_WRONLY | os.O_CREAT)
            try:
                if os.write(fd, b"\0" * chunk) < chunk:
                    break
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
            finally:
                os.close(fd)


def test_a_full_local_disk_is_named_not_an_unreachable_remote(tmp_path: Path, small_fs: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    peer, home = open_app(tmp_path / "peer"), open_app(small_fs / "home")
    try:
        say(peer, "first")
        sync(remote, peer, home)
        for i in range(50):
            say(peer, f"more {i} " + "x" * 2000)
        sync(remote, peer)
        _fill(small_fs)
        with pytest.raises(SyncError) as got:
            sync(remote, home)
        assert "disk is full" in str(got.value) and got.value.hint == FULL_HINT
        assert "reachable" not in (got.value.hint or "")
        for p in small_fs.glob("fill-*"):
            p.unlink()
        assert sync(remote, home)[0].imported == 100  # nothing was lost: the same sync works once freed
    finally:
        peer.close()
        home.close()


def test_git_saying_no_space_is_told_apart_by_side() -> None:
    local = "error: cannot lock ref 'refs/memtray/x': Unable to create '/h/sync/repo.git/x.lock': No space left on device"
    assert disk_full(local) and not disk_full(local, remote=True)
    theirs = "remote: error: unable to write file: No space left on device\nerror: unpack failed"
    assert disk_full(theirs, remote=True) and not disk_full(theirs)
    assert not disk_full("fatal: '/nowhere' does not appear to be a git repository")
