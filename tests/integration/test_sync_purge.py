"""A purge on a synced home reaches the other devices through a tombstone that holds no trace of it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
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
        # every device published its stream again as a new history of its own ref (with a lease):
        # nothing reachable on the remote holds it; the old objects go at the remote's next gc
        def remote_holds(objects: str) -> bool:
            cmd = ["git", "--git-dir", str(remote), "cat-file", "--batch", "--batch-all-objects"]
            if objects == "reachable":
                listed = subprocess.run(["git", "--git-dir", str(remote), "rev-list", "--objects", "--all"],
                                        check=True, capture_output=True, text=True).stdout
                names = "\n".join(line.split()[0] for line in listed.splitlines()) + "\n"
                cmd = ["git", "--git-dir", str(remote), "cat-file", "--batch"]
                return SECRET.encode() in subprocess.run(cmd, input=names.encode(), check=True,
                                                         capture_output=True).stdout
            return SECRET.encode() in subprocess.run(cmd, check=True, capture_output=True).stdout

        assert not remote_holds("reachable")
        assert remote_holds("all")  # until the remote collects its garbage (docs/SYNC.md)
        subprocess.run(["git", "--git-dir", str(remote), "gc", "--quiet", "--prune=now"], check=True)
        assert not remote_holds("all")
        # and the devices go on syncing normally after the republication
        say(b, "after the purge")
        b.sync.sync(str(remote))  # type: ignore[union-attr]
        for app in (a, c):
            assert app.sync.sync(str(remote)).imported == 2  # type: ignore[union-attr]
        assert digest(a) == digest(b) == digest(c)
    finally:
        a.close()
        b.close()
        c.close()


def test_a_purge_applied_on_sync_is_no_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    remote = bare(tmp_path / "remote.git")
    a, b = open_app(tmp_path / "a"), open_app(tmp_path / "b")
    try:
        assert a.sync is not None and b.sync is not None
        follow_tombstones(b)
        say(a, f"the code is {SECRET}")
        b.write(lambda: b.memory.remember("User has a door", None, model=None, source_seq=None))
        for app in (a, b, a):
            app.sync.sync(str(remote))
        purge(a, Matcher(SECRET))
        a.sync.sync(str(remote))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="memtray"):
            assert b.sync.sync(str(remote)).purges == 1
        # the memory history is rebuilt from the rewritten log, as a purge does: normal, not a warning
        made = [r for r in caplog.records if "memory commit(s) missing" in r.getMessage()]
        assert made and all(r.levelno == logging.INFO for r in made)
        applied = [r for r in caplog.records if "purge tombstone(s) from other devices" in r.getMessage()]
        assert applied and all(r.levelno == logging.INFO for r in applied)  # routine sync work
    finally:
        a.close()
        b.close()


class _Died(BaseException):
    """Stands for a kill -9 at a crash point."""


def test_killed_after_republishing_the_next_sync_builds_on_the_republished_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtray.core.sync import service

    remote = bare(tmp_path / "remote.git")
    a, b = open_app(tmp_path / "a"), open_app(tmp_path / "b")
    try:
        assert a.sync is not None and b.sync is not None
        say(a, f"pin {SECRET}")
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        purge(a, Matcher(SECRET))

        def die(name: str) -> None:
            if name == "sync.pushed":
                raise _Died

        monkeypatch.setattr(service, "crash_point", die)
        with pytest.raises(_Died):
            a.sync.sync(str(remote))  # the remote took the new history, the local ref did not move
        monkeypatch.setattr(service, "crash_point", lambda name: None)
        say(a, "later")
        rep = a.sync.sync(str(remote))
        assert rep.pushed == 2 and not rep.republished
        follow_tombstones(b)
        assert b.sync.sync(str(remote)).purges == 1
        assert not _holds(tmp_path / "b", SECRET) and "later" in contents(b)
        a.sync.sync(str(remote))
        assert digest(a) == digest(b)
    finally:
        a.close()
        b.close()


def test_a_device_that_joins_after_a_purge_gets_a_memory_repository_git_is_content_with(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    a, b, c = (open_app(tmp_path / n) for n in "abc")
    apps = (a, b, c)
    try:
        for app in apps:
            follow_tombstones(app)
        for n, app in enumerate(apps):
            say(app, f"message {n} about Porto")
            app.write(lambda app=app, n=n: app.memory.remember(f"User fact {n} from Porto", None, model=None,
                                                                source_seq=None))
        for app in (*apps, *apps):
            app.sync.sync(str(remote))  # type: ignore[union-attr]
        for n, app in enumerate(apps):  # each writes again before it hears of the others: merges
            app.write(lambda app=app, n=n: app.memory.remember(f"User second fact {n}", None, model=None,
                                                                source_seq=None))
        for app in (*apps, *apps):
            app.sync.sync(str(remote))  # type: ignore[union-attr]
        purge(a, Matcher("Porto"))
        for app in (*apps, *apps):
            app.sync.sync(str(remote))  # type: ignore[union-attr]
        assert digest(a) == digest(b) == digest(c)
        fresh = open_app(tmp_path / "fresh")
        follow_tombstones(fresh)  # as the CLI does: the tombstone it imports is applied to it too
        try:
            rep = fresh.sync.sync(str(remote))  # type: ignore[union-attr]
            assert not [n for n in rep.notes if "not mirrored" in n], rep.notes
            for app in (*apps, fresh):
                subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=app.home.memory, check=True,
                               capture_output=True, text=True)
            assert digest(fresh) == digest(a)
        finally:
            fresh.close()
    finally:
        for app in apps:
            app.close()
