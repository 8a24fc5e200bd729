"""A purge on a synced home reaches the other devices through a tombstone that holds no trace of it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memtray.core.admin.purge import Matcher, follow_tombstones, purge

from tests.integration.sync_support import bare, contents, digest, open_app, say

SECRET = "hunter2-the-door-code"


def _holds(root: Path, text: str) -> list[str]:
    found = []
    for p in (root / "events").glob("*.jsonl"):
        if text.encode() in p.read_bytes():
            found.append(p.name)
    return found


def test_a_purge_reaches_every_device_and_says_what_the_remote_keeps(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    a, b, c = (open_app(tmp_path / n) for n in "abc")
    try:
        for app in (a, b, c):
            assert app.sync is not None
        follow_tombstones(b)  # b applies tombstones as it syncs; c does not (yet)
        say(a, f"the code is {SECRET}")
        say(b, f"b heard it too: {SECRET}")
        for app in (a, b, c, a):
            app.sync.sync(str(remote))  # type: ignore[union-attr]
        assert all(_holds(tmp_path / n, SECRET) for n in "abc")
        rep = purge(a, Matcher(SECRET))
        assert rep.events == 4  # a's message and its echo, and its copies of b's two
        tomb = [r for r in a.store.log.records() if r.type == "sync.purge"]
        assert len(tomb) == 1 and SECRET not in str(tomb[0].data)
        assert not _holds(tmp_path / "a", SECRET)
        a.sync.sync(str(remote))
        rb = b.sync.sync(str(remote))
        assert rb.purges == 1
        assert not _holds(tmp_path / "b", SECRET)  # its own message too: a named it by id
        assert any("[PURGED]" in t for t in contents(b))
        rc = c.sync.sync(str(remote))  # c cannot apply it here: kept pending, said
        assert rc.pending_purges == [tomb[0].id] and _holds(tmp_path / "c", SECRET)
        follow_tombstones(c)
        assert c.sync.sync(str(remote)).purges == 1  # type: ignore[union-attr]
        assert not _holds(tmp_path / "c", SECRET)
        assert c.sync.status()["pending_purges"] == []  # type: ignore[union-attr]
        for app in (a, b, c):
            app.sync.sync(str(remote))  # type: ignore[union-attr]
        assert digest(a) == digest(b) == digest(c)
        # what it cannot take back without a rewrite of the refs: the remote's history still has it
        blobs = subprocess.run(["git", "--git-dir", str(remote), "cat-file", "--batch-all-objects", "--batch"],
                               check=True, capture_output=True).stdout
        assert SECRET.encode() in blobs  # the old segments keep it: docs/SYNC.md says what that needs
    finally:
        a.close()
        b.close()
        c.close()
