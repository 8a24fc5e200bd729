"""Sync through a real bare repository: two and three homes end in the same state."""

from __future__ import annotations

from pathlib import Path

import pytest
from memtray.core.log.origin import origin_of
from memtray.core.sync.gitcli import SyncError

from tests.integration.sync_support import (
    bare,
    contents,
    digest,
    git,
    homes,
    open_app,
    remember,
    say,
)


def test_two_homes_exchange_messages_and_end_in_the_same_state(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        say(a, "laptop one")
        say(b, "desktop one")
        assert a.sync is not None and b.sync is not None
        ra = a.sync.sync(str(remote))
        assert ra.pushed == 2 and ra.imported == 0
        rb = b.sync.sync(str(remote))
        assert rb.imported == 2 and rb.pushed == 2
        ra2 = a.sync.sync(str(remote))
        assert ra2.imported == 2 and ra2.pushed == 0
        assert contents(a) == contents(b) == {"laptop one", "noted: laptop one", "desktop one", "noted: desktop one"}
        assert digest(a) == digest(b)
        # imported events keep their id and carry where they were made
        imported = [r for r in a.store.log.records() if origin_of(r) is not None]
        assert {origin_of(r).device for r in imported} == {b.sync.device}  # type: ignore[union-attr]
        assert all(r.session == f"quick@{b.sync.device}" for r in imported)
        # the peer's messages are not part of this device's unconsolidated tail
        assert len(a.store.state.sessions["quick"].messages) == 2
        assert a.store.state.sessions[f"quick@{b.sync.device}"].unconsolidated == 0
        # syncing again changes nothing on either side
        before = (a.store.log.last_seq, b.store.log.last_seq)
        assert a.sync.sync(str(remote)).imported == 0
        assert b.sync.sync(str(remote)).imported == 0
        assert (a.store.log.last_seq, b.store.log.last_seq) == before
        # the remote holds one ref per device and nothing else
        refs = git("--git-dir", str(remote), "for-each-ref", "--format=%(refname)").splitlines()
        assert sorted(r for r in refs if r.endswith("/log")) == sorted(
            f"refs/memtray/devices/{d}/log" for d in (a.sync.device, b.sync.device))
        git("--git-dir", str(remote), "fsck", "--strict")


def test_three_homes_converge_whatever_the_order(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    apps = [open_app(tmp_path / n) for n in "abc"]
    try:
        for round_ in range(3):
            for i, app in enumerate(apps):
                say(app, f"round {round_} on {i}")
                assert app.sync is not None
                app.sync.sync(str(remote))
        for app in apps:  # one more pass brings everyone up to date
            assert app.sync is not None
            app.sync.sync(str(remote))
        digests = {digest(app) for app in apps}
        assert len(digests) == 1
        assert len(contents(apps[0])) == 18
    finally:
        for app in apps:
            app.close()


def test_imports_survive_a_reopen_and_a_lost_sync_repository(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    a, b = open_app(tmp_path / "a"), open_app(tmp_path / "b")
    say(a, "first")
    assert a.sync is not None and b.sync is not None
    a.sync.sync(str(remote))
    b.sync.sync(str(remote))
    a.close()
    b.close()
    import shutil

    shutil.rmtree(tmp_path / "a" / "sync")
    shutil.rmtree(tmp_path / "b" / "sync")
    with homes(tmp_path, "ab") as (a, b):
        say(a, "second")
        assert a.sync is not None and b.sync is not None
        assert a.sync.sync(str(remote)).pushed == 2  # only the new ones: the remote said where it was
        assert b.sync.sync(str(remote)).imported == 2  # the cursor lives in the log, not the sync repo
        assert digest(a) == digest(b)


def test_a_remote_url_with_a_password_is_refused(tmp_path: Path) -> None:
    with homes(tmp_path, "a") as [a]:
        with pytest.raises(SyncError, match="holds a password"):
            a.sync.sync("https://me:hunter2@example.invalid/repo.git")
        status = tmp_path / "a" / "sync" / "status.json"
        assert not status.exists() or "hunter2" not in status.read_text()
        from memtray.core.base.config import ConfigError, coerce

        with pytest.raises(ConfigError, match="password"):
            coerce("sync_remote", "https://me:hunter2@example.invalid/repo.git")


def test_sync_without_a_remote_says_how_to_set_one(tmp_path: Path) -> None:
    from tests.support import cli_here

    out = cli_here(tmp_path / "a", "sync")
    assert out.returncode == 1
    assert out.stderr.startswith("memtray: error: no sync remote is set") and "sync_remote" in out.stderr
    assert "Traceback" not in out.stderr
    st = cli_here(tmp_path / "a", "sync", "--status")
    assert st.returncode == 0 and st.stdout.strip() == "never synced"


@pytest.mark.clear_only("its second home is a CLI process never paired")
def test_the_counts_say_what_travelled_memory_revisions_are_merged_not_imported(tmp_path: Path) -> None:
    from tests.support import cli_here

    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "a") as [a]:
        say(a, "one")
        remember(a, "User likes tea")
        ra = a.sync.sync(str(remote))
        assert ra.pushed == 3  # two messages and one memory revision
    out = cli_here(tmp_path / "b", "sync", str(remote))
    assert out.returncode == 0, out.stderr
    assert "imported 2 (" in out.stdout
    assert "1 memory revision(s) of other devices merged into memory" in out.stdout
