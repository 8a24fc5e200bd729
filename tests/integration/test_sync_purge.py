"""A purge on a synced home reaches the other devices through a tombstone that holds no trace of it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from memtray.core.admin.purge import Matcher, purge
from memtray.core.admin.tombstones import follow_tombstones

from tests.integration.sync_support import (
    bare,
    contents,
    digest,
    homes,
    log_holds,
    open_app,
    remember,
    remote_holds,
    say,
    sync,
)

SECRET = "hunter2-the-door-code"


@pytest.mark.clear_only("searches the remote's objects for the text in clear")
def test_a_purge_reaches_every_device_and_says_what_the_remote_keeps(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abc") as (a, b, c):
        for app in (a, b, c):
            assert app.sync is not None
        follow_tombstones(b)  # b applies tombstones as it syncs; c does not (yet)
        say(a, f"the code is {SECRET}")
        say(b, f"b heard it too: {SECRET}")
        sync(remote, a, b, c, a)
        assert all(log_holds(tmp_path / n, SECRET) for n in "abc")
        rep = purge(a, Matcher(SECRET))
        assert rep.events == 4  # a's message and its echo, and its copies of b's two
        tomb = [r for r in a.store.log.records() if r.type == "sync.purge"]
        assert len(tomb) == 1 and SECRET not in str(tomb[0].data)
        assert not log_holds(tmp_path / "a", SECRET)
        a.sync.sync(str(remote))
        rb = b.sync.sync(str(remote))
        assert rb.purges == 1
        assert not log_holds(tmp_path / "b", SECRET)  # its own message too: a named it by id
        assert any("[PURGED]" in t for t in contents(b))
        rc = c.sync.sync(str(remote))  # c cannot apply it here: kept pending, said
        assert rc.pending_purges == [tomb[0].id] and log_holds(tmp_path / "c", SECRET)
        follow_tombstones(c)
        assert c.sync.sync(str(remote)).purges == 1  # type: ignore[union-attr]
        assert not log_holds(tmp_path / "c", SECRET)
        assert c.sync.status()["pending_purges"] == []  # type: ignore[union-attr]
        sync(remote, a, b, c)
        assert digest(a) == digest(b) == digest(c)
        # every device published its stream again as a new history of its own ref (with a lease):
        # nothing reachable on the remote holds it; the old objects go at the remote's next gc
        assert not remote_holds(remote, SECRET)
        assert remote_holds(remote, SECRET, reachable=False)  # until the remote collects its garbage (docs/SYNC.md)
        subprocess.run(["git", "--git-dir", str(remote), "gc", "--quiet", "--prune=now"], check=True)
        assert not remote_holds(remote, SECRET, reachable=False)
        # and the devices go on syncing normally after the republication
        say(b, "after the purge")
        b.sync.sync(str(remote))  # type: ignore[union-attr]
        for app in (a, c):
            assert app.sync.sync(str(remote)).imported == 2  # type: ignore[union-attr]
        assert digest(a) == digest(b) == digest(c)


def test_a_purge_applied_on_sync_is_no_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        follow_tombstones(b)
        say(a, f"the code is {SECRET}")
        remember(b, "User has a door")
        sync(remote, a, b, a)
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


class _Died(BaseException):
    """Stands for a kill -9 at a crash point."""


def test_killed_after_republishing_the_next_sync_builds_on_the_republished_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtray.core.sync import service

    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
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
        assert not log_holds(tmp_path / "b", SECRET) and "later" in contents(b)
        a.sync.sync(str(remote))
        assert digest(a) == digest(b)


def test_a_device_that_joins_after_a_purge_gets_a_memory_repository_git_is_content_with(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abc") as (a, b, c):
        apps = (a, b, c)
        for app in apps:
            follow_tombstones(app)
        for n, app in enumerate(apps):
            say(app, f"message {n} about Porto")
            remember(app, f"User fact {n} from Porto")
        sync(remote, *apps, *apps)
        for n, app in enumerate(apps):  # each writes again before it hears of the others: merges
            remember(app, f"User second fact {n}")
        sync(remote, *apps, *apps)
        purge(a, Matcher("Porto"))
        sync(remote, *apps, *apps)
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


def test_a_purged_session_name_is_renamed_on_every_device(tmp_path: Path) -> None:
    """A session named after what is purged: the tombstone carries the new name; each device
    files its own events and its imported copies (``name@device``) under it."""
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abc") as (a, b, c):
        for app in (b, c):
            follow_tombstones(app)
        say(a, "plans for the launch", session="nightingale-launch")
        say(b, "b's notes too", session="nightingale-b")
        say(c, "unrelated", session="quick")
        sync(remote, a, b, c, a)
        assert all(log_holds(tmp_path / n, "nightingale") for n in "abc")
        purge(a, Matcher("nightingale"))
        sync(remote, a, b, c, a, b, c)
        for n, app in zip("abc", (a, b, c), strict=True):
            assert not log_holds(tmp_path / n, "nightingale"), n
            names = set(app.store.state.sessions)
            assert not any("nightingale" in s for s in names), (n, names)
        assert {s for s in b.store.state.sessions if s.startswith("[PURGED]") and "@" not in s} == {"[PURGED]-b"}
        assert f"[PURGED]-launch@{a.sync.device}" in b.store.state.sessions  # type: ignore[union-attr]
        assert digest(a) == digest(b) == digest(c)


def test_a_device_that_joins_after_a_purge_has_nothing_to_publish_again(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        say(a, f"the code is {SECRET}")
        sync(remote, a)
        purge(a, Matcher(SECRET))
        sync(remote, a)
        follow_tombstones(b)
        say(b, "hello, new here")
        rb = b.sync.sync(str(remote))  # type: ignore[union-attr]
        assert rb.purges == 1 and not rb.republished and rb.pushed == 2
        assert not log_holds(tmp_path / "b", SECRET) and not remote_holds(remote, SECRET)
