"""Two remotes: a purge republished through one leaves the other's older copies stale, not hostile."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from memtray.core.admin.purge import Matcher, purge
from memtray.core.admin.tombstones import follow_tombstones

from tests.integration.sync_support import (
    bare,
    commit_on,
    digest,
    homes,
    log_holds,
    remember,
    remote_holds,
    say,
    sync,
)

SECRET = "Zorgblatt-the-nickname"


@pytest.mark.clear_only("searches the remote's objects for the text in clear")
def test_after_a_purge_the_second_remote_is_caught_up_not_refused(tmp_path: Path) -> None:
    r1, r2 = bare(tmp_path / "r1.git"), bare(tmp_path / "r2.git")
    with homes(tmp_path, "ab") as (a, b):
        follow_tombstones(a)
        follow_tombstones(b)
        say(a, "hello from a")
        say(b, f"my nickname is {SECRET}")
        remember(b, f"User's nickname is {SECRET}")
        for remote in (r1, r2):
            sync(remote, a, b, a)
        assert remote_holds(r2, SECRET)
        purge(a, Matcher(SECRET))
        sync(r1, a, b, a, b)
        assert not log_holds(tmp_path / "a", SECRET) and not log_holds(tmp_path / "b", SECRET)
        # remote 2 still holds both streams at the epoch before the purge
        ra = a.sync.sync(str(r2))  # type: ignore[union-attr]
        assert ra.imported == 0
        assert any("older copy" in n and b.sync.device in n for n in ra.notes)  # type: ignore[union-attr]
        assert ra.republished  # its own stream there replaced (with a lease)
        rb = b.sync.sync(str(r2))  # type: ignore[union-attr]
        assert rb.imported == 0 and rb.republished
        assert not remote_holds(r2, SECRET)
        # and both go on syncing through either remote
        say(b, "after the purge, through remote 2")
        sync(r2, b, a)
        sync(r1, a, b)
        assert digest(a) == digest(b)
        assert all(not app.sync.status().get("last_error") for app in (a, b))  # type: ignore[union-attr]
        assert a.sync.sync(str(r2)).notes == []  # type: ignore[union-attr]


@pytest.mark.clear_only("writes a clear segment on the remote by hand")
def test_an_older_epoch_that_reaches_further_is_a_rewrite(tmp_path: Path) -> None:
    r1, r2 = bare(tmp_path / "r1.git"), bare(tmp_path / "r2.git")
    with homes(tmp_path, "ab") as (a, b):
        follow_tombstones(a)
        follow_tombstones(b)
        say(b, f"my nickname is {SECRET}")
        sync(r2, b, a)
        purge(b, Matcher(SECRET))
        sync(r1, b, a)
        # someone adds to b's old stream on remote 2 (epoch 0) beyond what a imported from b
        ref = f"refs/memtray/devices/{b.sync.device}/log"  # type: ignore[union-attr]
        line = subprocess.run(["git", "--git-dir", str(r2), "show", f"{ref}:memtray.json"], check=True,
                              capture_output=True, text=True).stdout
        commit_on(r2, ref, "memtray.json", line.replace('"last_seq": ', '"last_seq": 9').encode(), tmp_path, "x")
        rep = a.sync.sync(str(r2))  # type: ignore[union-attr]
        assert [r for r in rep.refused if "rewritten" in r["reason"]] and rep.imported == 0


def test_pushed_counts_what_each_remote_did_not_have(tmp_path: Path) -> None:
    r1, r2 = bare(tmp_path / "r1.git"), bare(tmp_path / "r2.git")
    with homes(tmp_path, "a") as (a,):
        say(a, "one")
        say(a, "two")
        assert sync(r1, a)[0].pushed == 4
        assert sync(r2, a)[0].pushed == 4  # a fresh remote gets the whole stream
        say(a, "three")
        assert sync(r2, a)[0].pushed == 2
        assert sync(r1, a)[0].pushed == 2  # r1 was one push behind
        assert sync(r1, a)[0].pushed == 0
