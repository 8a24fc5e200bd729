"""Sync against remotes that misbehave: each failure is one clear message and changes nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from memtray.core.app import App
from memtray.core.base.clock import Clock
from memtray.core.sync.gitcli import SyncError
from memtray.core.sync.service import NotMemtrayRemote
from memtray.core.sync.stream import log_ref

from tests.integration.sync_support import (
    GIT,
    bare,
    commit_on,
    contents,
    digest,
    git,
    homes,
    open_app,
    remember,
    remote_refs,
    say,
    sync,
)


def test_a_remote_that_rejects_pushes_changes_nothing_and_the_next_sync_catches_up(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'quota exceeded for this repository' >&2\nexit 1\n")
    hook.chmod(0o755)
    with homes(tmp_path, "a") as [a]:
        say(a, "kept locally")
        with pytest.raises(SyncError, match="rejected the push: quota exceeded") as info:
            a.sync.sync(str(remote))
        assert "Nothing was changed" in info.value.hint
        assert remote_refs(remote) == {}
        assert a.sync.repo().git.rev(log_ref(a.sync.device)) is None  # local ref did not move either
        st = a.sync.status()
        assert st["last_error"].startswith("the remote rejected") and st["failures"] == 1
        hook.unlink()
        assert a.sync.sync(str(remote)).pushed == 2
        assert a.sync.status()["last_error"] is None


def _push_by_hand(tmp_path: Path, remote: Path, ref: str, files: dict[str, str]) -> None:
    """Someone else's commit holding ``files`` (none: an empty commit), pushed to ``ref``."""
    work = tmp_path / "work"
    git("init", "-q", str(work))
    for name, text in files.items():
        (work / name).write_text(text)
        git("-C", str(work), "add", name)
    git("-C", str(work), "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "x")
    git("-C", str(work), "push", "-q", str(remote), f"HEAD:{ref}")


def test_a_remote_that_is_not_a_memtray_remote_is_refused_unless_asked(tmp_path: Path) -> None:
    remote = bare(tmp_path / "code.git")
    _push_by_hand(tmp_path, remote, "refs/heads/main", {"README": "someone's project\n"})
    before = remote_refs(remote)
    with homes(tmp_path, "a") as [a]:
        say(a, "hello")
        with pytest.raises(NotMemtrayRemote, match="not a memtray remote"):
            a.sync.sync(str(remote))
        assert remote_refs(remote) == before
        rep = a.sync.sync(str(remote), init=True)
        assert rep.pushed == 2
        after = remote_refs(remote)
        assert after["refs/heads/main"] == before["refs/heads/main"]  # what it held is untouched


def test_a_remote_taken_with_init_before_anything_was_pushed_stays_taken(tmp_path: Path) -> None:
    remote = bare(tmp_path / "code.git")
    _push_by_hand(tmp_path, remote, "refs/heads/main", {})
    with homes(tmp_path, "a") as [a]:
        assert a.sync.sync(str(remote), init=True).pushed == 0  # nothing to push yet: no stream there
        assert a.sync.sync(str(remote)).pushed == 0  # the next automatic sync is not refused
        say(a, "hello")
        assert a.sync.sync(str(remote)).pushed == 2


def test_a_vanished_remote_is_one_message(tmp_path: Path) -> None:
    remote = bare(tmp_path / "usb" / "remote.git")
    with homes(tmp_path, "a") as [a]:
        say(a, "x")
        a.sync.sync(str(remote))
        shutil.rmtree(tmp_path / "usb")
        say(a, "y")
        with pytest.raises(SyncError, match="cannot reach the remote"):
            a.sync.sync(str(remote))
        assert "Traceback" not in a.sync.status()["last_error"]


def _commit_segment(remote: Path, ref: str, payload: bytes, tmp: Path) -> None:
    """Add a segment to the stream at ``ref`` on the remote by hand (a damaged peer push)."""
    commit_on(remote, ref, "segments/000000/000000009000.jsonl", payload, tmp, "damaged")


@pytest.mark.clear_only("writes a clear line into a stream by hand (a sealed stream refuses it whole)")
def test_a_damaged_line_on_the_remote_is_refused_and_the_rest_goes_on(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        say(b, "good")
        b.sync.sync(str(remote))
        # a flipped byte in a line of b's stream (the checksum no longer matches)
        line = b.store.log.tail(1)[0]
        from memtray.core.log.events import legacy_line

        bad = legacy_line(line._replace(seq=9000)).replace(b"noted", b"nOted")
        _commit_segment(remote, log_ref(b.sync.device), bad, tmp_path)
        say(a, "mine")
        rep = a.sync.sync(str(remote))
        [refused] = rep.refused
        assert refused["reason"] == "damaged (checksum mismatch)" and refused["source"]["name"] == b.sync.device
        assert "000000009000.jsonl line 1" in refused["source"]["where"]
        assert "good" in contents(a) and "nOted: good" not in contents(a)  # the good segment came in
        assert log_ref(a.sync.device) in remote_refs(remote)  # and a pushed its own
        assert a.sync.status()["refusals"] == 1


def test_a_stream_rewritten_by_someone_else_is_refused_on_both_sides(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        say(a, "one")
        a.sync.sync(str(remote))
        say(b, "two")
        b.sync.sync(str(remote))
        a.sync.sync(str(remote))
        # someone force-pushes b's ref back to an unrelated history (here: a's own stream)
        git("--git-dir", str(remote), "update-ref", log_ref(b.sync.device),
            git("--git-dir", str(remote), "rev-parse", log_ref(a.sync.device)))
        say(a, "three")
        before = remote_refs(remote)
        seq = a.store.log.last_seq
        rep = a.sync.sync(str(remote))  # b's stream is refused for this sync; a's own push goes on
        assert [r for r in rep.refused if "rewritten by someone else" in r["reason"]]
        assert a.store.log.last_seq == seq and rep.imported == 0
        after = remote_refs(remote)
        assert after[log_ref(b.sync.device)] == before[log_ref(b.sync.device)]
        assert after[log_ref(a.sync.device)] != before[log_ref(a.sync.device)]
        # and b, whose own stream it is, refuses to build on it
        with pytest.raises(SyncError, match=r"rewritten by someone else|says it belongs to"):
            b.sync.sync(str(remote))
        assert remote_refs(remote)[log_ref(b.sync.device)] == before[log_ref(b.sync.device)]


class _Skewed(Clock):
    def __init__(self, offset: timedelta) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


def test_a_device_whose_clock_is_hours_off_converges(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    a = open_app(tmp_path / "a")
    b = open_app(tmp_path / "b", clock=_Skewed(timedelta(hours=-7)))  # b lives in the past
    try:
        assert a.sync is not None and b.sync is not None
        for i in range(3):
            say(a, f"a{i}")
            a.sync.sync(str(remote))
            say(b, f"b{i}")
            b.sync.sync(str(remote))
        a.sync.sync(str(remote))
        assert digest(a) == digest(b)
        assert {f"b{i}" for i in range(3)} <= contents(a)
    finally:
        a.close()
        b.close()


def test_imported_messages_are_shown_and_searched_with_the_time_they_were_said(tmp_path: Path) -> None:
    from memtray.core.log.transcript import earlier

    remote = bare(tmp_path / "remote.git")
    a = open_app(tmp_path / "a", clock=_Skewed(timedelta(hours=3)))  # imports 3 h after b said it
    b = open_app(tmp_path / "b")
    c = open_app(tmp_path / "c", clock=_Skewed(timedelta(hours=-7)))  # c's clock is 7 h behind b's
    try:
        assert a.sync is not None and b.sync is not None and c.sync is not None
        say(b, "zebra crossing")
        b.sync.sync(str(remote))
        a.sync.sync(str(remote))
        c.sync.sync(str(remote))
        said = next(r.ts for r in b.store.log.records() if r.data.get("content") == "zebra crossing")
        assert a.search is not None and c.search is not None
        hit = a.search.search("zebra")[0]
        assert hit.ts == said  # not the import time, 3 h later
        page = earlier(a.store.log, f"quick@{b.sync.device}", 0)
        assert [m["ts"] for m in page.messages][:1] == [said]
        # a peer clock ahead of this one cannot date a message after it arrived: capped there
        arrived = next(r.ts for r in c.store.log.records() if r.data.get("content") == "zebra crossing")
        assert arrived < said and c.search.search("zebra")[0].ts == arrived
    finally:
        a.close()
        b.close()
        c.close()
    # an index written before this rule (import times, no 'said_at' mark) is rebuilt once on opening
    import sqlite3

    from memtray.core.base.home import Home
    from memtray.core.search.service import index_path

    db = sqlite3.connect(index_path(Home(tmp_path / "a")))
    with db:
        db.execute("UPDATE documents SET ts = '2026-01-01T00:00:00.000Z'")
        db.execute("DELETE FROM meta WHERE key = 'said_at'")
    db.close()
    with homes(tmp_path, "a") as [a]:
        assert a.search is not None and a.search.search("zebra")[0].ts == said


def test_one_device_offline_for_thousands_of_events_then_syncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtray.core.sync import service

    monkeypatch.setattr(service, "IMPORT_BATCH", 300)  # several import writes, each with its cursor
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        for i in range(500):
            say(b, f"offline {i}", session=f"s{i % 7}")
        say(a, "meanwhile")
        a.sync.sync(str(remote))
        rb = b.sync.sync(str(remote))
        assert rb.pushed == 1000 and rb.imported == 2
        ra = a.sync.sync(str(remote))
        assert ra.imported == 1000
        pulled = [r for r in a.store.log.records() if r.type == "sync.pulled"]
        assert len(pulled) == 4  # 300 + 300 + 300 + 100
        assert digest(a) == digest(b)


def test_a_memtray_ref_that_holds_something_else_is_refused(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    _push_by_hand(tmp_path, remote, "refs/memtray/devices/d000000000bad/log", {"notes.txt": "not a stream\n"})
    with homes(tmp_path, "a") as [a]:
        say(a, "hello")
        seq = a.store.log.last_seq
        rep = a.sync.sync(str(remote))  # that ref is refused; a's own stream is pushed beside it
        assert [r for r in rep.refused if "is not a memtray stream" in r["reason"]]
        assert a.store.log.last_seq == seq and log_ref(a.sync.device) in remote_refs(remote)


class _Died(BaseException):
    """Stands for a kill -9 at a crash point (nothing after it runs)."""


def test_a_sync_stopped_between_import_writes_imports_the_rest_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtray.core.sync import service

    monkeypatch.setattr(service, "IMPORT_BATCH", 50)
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        for i in range(100):
            say(b, f"m{i}")
        b.sync.sync(str(remote))

        def die(name: str) -> None:
            if name == "sync.imported":
                raise _Died

        monkeypatch.setattr(service, "crash_point", die)
        with pytest.raises(_Died):
            a.sync.sync(str(remote))
        assert len(contents(a)) == 50  # one write of 50 made it
        monkeypatch.setattr(service, "crash_point", lambda name: None)
        assert a.sync.sync(str(remote)).imported == 150  # the same commit: the rest is not skipped
        assert digest(a) == digest(b)


def _copied(tmp_path: Path, remote: Path, said: str) -> tuple[App, App]:
    """Home ``a`` says ``said`` and syncs, then is copied to ``copy`` (the README's backup: copy
    the folder, device id and all); both open, for the caller to close."""
    a = open_app(tmp_path / "a")
    say(a, said)
    sync(remote, a)
    a.close()
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    (tmp_path / "copy" / "memtray.lock").unlink(missing_ok=True)
    a, c = open_app(tmp_path / "a"), open_app(tmp_path / "copy")
    assert a.sync is not None and c.sync is not None
    return a, c


@pytest.mark.clear_only("--new-device on a home with keys is not supported yet (docs/SYNC.md, limits)")
def test_a_copied_home_is_refused_then_becomes_a_device_of_its_own_without_losing_or_doubling(
        tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    a, c = _copied(tmp_path, remote, "before the copy")
    try:
        old = a.sync.device
        assert c.sync.device == old
        say(a, "on the original")
        say(c, "on the copy")  # the same seqs as the original's, other events
        assert a.sync.sync(str(remote)).pushed == 2
        remember(a, "User likes tea")
        assert a.sync.sync(str(remote)).pushed == 1
        before, seq = remote_refs(remote), c.store.log.last_seq
        with pytest.raises(SyncError, match="another data home pushed under the same device id") as info:
            c.sync.sync(str(remote))
        assert "memtray sync --new-device" in (info.value.hint or "")
        assert remote_refs(remote) == before and c.store.log.last_seq == seq  # nothing lost, nothing moved
        assert "on the copy" in contents(c)
        rep = c.sync.sync(str(remote), new_device=True)
        new = c.sync.device
        assert rep.new_device == new != old and a.sync.device == old
        # its own two messages and the revision that merged the original's memory; the original's two new ones
        assert rep.pushed == 3 and rep.imported == 2
        assert rep.merged_heads == 1 and "User likes tea" in c.store.state.memory  # and its memory
        ra = a.sync.sync(str(remote))
        assert ra.imported == 2 and ra.merged_heads == 1
        assert contents(a) == contents(c) == {"before the copy", "noted: before the copy", "on the original",
                                              "noted: on the original", "on the copy", "noted: on the copy"}
        assert digest(a) == digest(c)
        for app in (a, c):  # the shared history is in each log once, not published twice
            assert sum(r.type == "message" for r in app.store.log.records()) == 6
        # both go on syncing normally, the copy reopened under its new id too
        c.close()
        c = open_app(tmp_path / "copy")
        assert c.sync is not None and c.sync.device == new
        say(a, "later")
        assert a.sync.sync(str(remote)).pushed == 2
        remember(c, "User owns a bike")
        rc = c.sync.sync(str(remote))
        assert rc.imported == 2 and rc.pushed >= 1
        a.sync.sync(str(remote))
        c.sync.sync(str(remote))
        assert "User owns a bike" in a.store.state.memory and "User likes tea" in c.store.state.memory
        assert digest(a) == digest(c)
    finally:
        a.close()
        c.close()


@pytest.mark.parametrize("original_purged", [False, True])
def test_a_copied_home_that_purged_is_still_refused(tmp_path: Path, original_purged: bool) -> None:
    """A purge's tombstone explains only the lines of the events it names, as it rewrote them:
    the other home's events (other ids) still differ, and the copy is refused as before."""
    from memtray.core.admin.purge import Matcher, purge

    remote = bare(tmp_path / "remote.git")
    a, c = _copied(tmp_path, remote, "before the copy, in Porto")
    try:
        say(a, "on the original, in Porto")
        if original_purged:  # the remote then holds a republication, a higher epoch
            purge(a, Matcher("Porto"))
        assert a.sync.sync(str(remote)).republished is original_purged
        say(c, "on the copy, in Porto")
        rep = purge(c, Matcher("Porto"))  # names the shared events and the copy's own, by id
        assert rep.events == 4
        tomb = [r for r in c.store.log.records() if r.type == "sync.purge"]
        assert len(tomb) == 1 and len(tomb[0].data["events"]) == 4
        before, seq = remote_refs(remote), c.store.log.last_seq
        with pytest.raises(SyncError, match="another data home pushed under the same device id"):
            c.sync.sync(str(remote))
        assert remote_refs(remote) == before and c.store.log.last_seq == seq
        assert "on the copy, in [PURGED]" in contents(c)
    finally:
        a.close()
        c.close()


def _tamper_first_segment(remote: Path, ref: str, tmp: Path) -> None:
    """A child commit on ``ref`` that rewrites one line of its OLDEST segment (a valid checksum)."""
    from memtray.core.log.events import decode_raw, legacy_line

    head = git("--git-dir", str(remote), "rev-parse", ref)
    path = git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", head, "--", "segments").splitlines()[0]
    lines = subprocess.run([GIT, "--git-dir", str(remote), "show", f"{head}:{path}"], check=True,
                           capture_output=True).stdout.splitlines(keepends=True)
    rec = decode_raw(lines[0].rstrip(b"\n"))
    lines[0] = legacy_line(rec._replace(data={**rec.data, "content": "forged"}))
    commit_on(remote, ref, path, b"".join(lines), tmp, "tampered")


@pytest.mark.clear_only("decodes the remote's segment by hand")
def test_an_old_segment_changed_on_the_remote_is_refused_and_its_owner_republishes(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        say(b, "one")
        b.sync.sync(str(remote))
        a.sync.sync(str(remote))
        say(b, "two")
        b.sync.sync(str(remote))
        _tamper_first_segment(remote, log_ref(b.sync.device), tmp_path)
        tampered, seq = remote_refs(remote)[log_ref(b.sync.device)], a.store.log.last_seq
        # a peer that imported that segment refuses the changed copy (and only it)
        rep = a.sync.sync(str(remote))
        [refused] = [r for r in rep.refused if re.search(r"rewritten: segments/.* changed after it was imported",
                                                          r["reason"])]
        assert "memtray sync --republish" in refused["hint"]
        assert a.store.log.last_seq == seq
        # the owner never adopts a copy of its own stream that differs from its log
        with pytest.raises(SyncError, match="memtray does not adopt it"):
            b.sync.sync(str(remote))
        assert remote_refs(remote)[log_ref(b.sync.device)] == tampered
        from memtray.core.admin.doctor import check
        from memtray.core.base.home import Home

        said = [f.detail for f in check(Home(tmp_path / "b")) if f.code == "sync" and not f.title.startswith("sync:")]
        assert any("memtray sync --republish" in d for d in said), said  # the doctor names the repair
        # the repair the hint names: the owner publishes its stream again from its log
        rep = b.sync.sync(str(remote), republish=True)
        assert rep.republished and rep.pushed == 4
        assert remote_refs(remote)[log_ref(b.sync.device)] != tampered
        a.sync.sync(str(remote))
        fresh = open_app(tmp_path / "fresh")
        try:
            assert fresh.sync is not None
            fresh.sync.sync(str(remote))
            for app in (a, b, fresh):
                assert "forged" not in contents(app)
            assert contents(fresh) == contents(a) == contents(b)
        finally:
            fresh.close()
