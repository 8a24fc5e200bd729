"""kill -9 in the middle of a sync, on this side or the remote's: the next sync completes.

The local side is a real ``memtray sync`` process that SIGKILLs itself at a named step
(``crash_point``): after the fetch, after an import write, after the push but before
the local ref moved. The remote side is a ``git receive-pack`` killed by its own
pre-receive hook while the push is under way. Afterwards every home replays the same
state, no event is imported twice and the remote's refs only ever moved forward.
"""

from __future__ import annotations

import collections
import subprocess
from pathlib import Path

import pytest
from memtray.core.base.faults import CRASH_ENV

from tests.integration.sync_support import (
    bare,
    contents,
    digest,
    git,
    log_holds,
    open_app,
    remote_holds,
    remote_refs,
    say,
)
from tests.support import cli_here, run_cli


def _say(root: Path, text: str, session: str = "quick") -> None:
    app = open_app(root)
    try:
        say(app, text, session)
    finally:
        app.close()


def _state(root: Path) -> tuple[str, set[str], list[str]]:
    app = open_app(root)
    try:
        ids = [r.id for r in app.store.log.records()]
        dups = [i for i, n in collections.Counter(ids).items() if n > 1]
        return digest(app), contents(app), dups
    finally:
        app.close()


def _sync(root: Path, remote: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``memtray sync --clear REMOTE`` (these homes have no keyring): in a child when it is to be
    killed, else in this process (cli_here: the same command, without a second of start)."""
    run = run_cli if CRASH_ENV in env else cli_here
    return run(root, "sync", "--clear", str(remote), **env)


def _two_synced_homes(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A bare remote and homes a and b that said something each and synced (a, b, a)."""
    remote = bare(tmp_path / "remote.git")
    a, b = tmp_path / "a", tmp_path / "b"
    _say(a, "a before")
    _say(b, "b before")
    for root in (a, b, a):
        assert _sync(root, remote).returncode == 0
    return remote, a, b


def _kill_receive_pack(remote: Path) -> Path:
    """A pre-receive hook on ``remote`` that kills the receiving git mid-push; its path."""
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nkill -9 $PPID\nsleep 5\nexit 1\n")
    hook.chmod(0o755)
    return hook


def _converged(a: Path, b: Path) -> set[str]:
    """Assert a and b hold the same state, no event twice and none imported from their own
    device id; what they said."""
    (da, ca, dups_a), (db, cb, dups_b) = _state(a), _state(b)
    assert dups_a == [] and dups_b == []
    assert _own_imports(a) == [] and _own_imports(b) == []
    assert ca == cb and da == db
    return ca


@pytest.mark.parametrize("step", ["sync.fetched", "sync.imported", "sync.pushed"])
def test_kill_during_sync_then_the_next_sync_completes(tmp_path: Path, step: str) -> None:
    remote, a, b = _two_synced_homes(tmp_path)
    _say(a, "a new")
    _say(b, "b new")
    assert _sync(b, remote).returncode == 0
    before = remote_refs(remote)
    killed = _sync(a, remote, **{CRASH_ENV: step})
    assert killed.returncode == -9, killed.stderr
    after_kill = remote_refs(remote)
    for ref, sha in before.items():  # whatever got through is a fast-forward
        git("--git-dir", str(remote), "merge-base", "--is-ancestor", sha, after_kill[ref])
    done = _sync(a, remote)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert _sync(b, remote).returncode == 0
    assert {"a new", "b new", "a before", "b before"} <= _converged(a, b)


def test_receive_pack_killed_on_the_remote_then_the_next_sync_completes(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    hook = _kill_receive_pack(remote)
    a, b = tmp_path / "a", tmp_path / "b"
    _say(a, "a one")
    killed = _sync(a, remote)
    assert killed.returncode != 0
    assert "memtray: error:" in killed.stderr and "Traceback" not in killed.stderr
    assert remote_refs(remote) == {}
    hook.unlink()
    assert _sync(a, remote).returncode == 0
    assert _sync(b, remote).returncode == 0
    assert _state(a)[0] == _state(b)[0]
    git("--git-dir", str(remote), "fsck")


@pytest.mark.parametrize("step", ["sync.new_device", "sync.pushed"])
def test_kill_while_a_copied_home_takes_a_new_device_id_then_it_completes(tmp_path: Path, step: str) -> None:
    import shutil

    remote = bare(tmp_path / "remote.git")
    a, copy = tmp_path / "a", tmp_path / "copy"
    _say(a, "shared")
    assert _sync(a, remote).returncode == 0
    shutil.copytree(a, copy)
    (copy / "memtray.lock").unlink(missing_ok=True)
    _say(a, "on a")
    _say(copy, "on the copy")
    assert _sync(a, remote).returncode == 0
    assert _sync(copy, remote).returncode == 1  # refused: two homes, one device id
    killed = run_cli(copy, "sync", "--new-device", str(remote), **{CRASH_ENV: step})
    assert killed.returncode == -9, killed.stderr
    if step == "sync.new_device":  # the id did not change: asked again, it goes through
        done = cli_here(copy, "sync", "--new-device", str(remote))
    else:  # the id changed and the push landed: a plain sync finishes
        done = _sync(copy, remote)
    assert done.returncode == 0, done.stderr
    assert _sync(a, remote).returncode == 0
    assert {"shared", "on a", "on the copy"} <= _converged(a, copy)


SECRET = "hunter2-the-door-code"


def _own_imports(root: Path) -> list[str]:
    """Event ids of ``root``'s log imported from its own device id (never right)."""
    app = open_app(root)
    try:
        me = app.sync.device if app.sync is not None else ""
        return [r.id for r in app.store.log.records() if (r.data.get("origin") or {}).get("device") == me]
    finally:
        app.close()


@pytest.mark.parametrize(("peer_saw_it", "session"), [(False, "quick"), (True, "quick"), (False, f"door {SECRET}")])
def test_a_purge_after_a_push_the_crash_kept_from_adopting_is_republished(
        tmp_path: Path, peer_saw_it: bool, session: str) -> None:
    """kill -9 after the push landed, before the local ref moved; then a local purge; then sync.
    The remote's copy of this device's stream differs from the purged log exactly where the
    purge's tombstone says (and in a session name the purge changed): that is this home's own
    push, not another home's."""
    remote, a, b = _two_synced_homes(tmp_path)
    _say(a, f"the code is {SECRET}", session)
    killed = _sync(a, remote, **{CRASH_ENV: "sync.pushed"})
    assert killed.returncode == -9, killed.stderr
    if peer_saw_it:  # b imported the segment a did not adopt before a purged
        assert _sync(b, remote).returncode == 0
        assert log_holds(b, SECRET)
    purged = cli_here(a, "purge", SECRET, "--yes")
    assert purged.returncode == 0, purged.stderr
    assert not log_holds(a, SECRET)
    done = _sync(a, remote)
    assert done.returncode == 0, done.stderr
    assert "another data home" not in done.stderr
    assert not remote_holds(remote, SECRET)  # republished: the old lines are unreachable
    for root in (b, a, b):
        out = _sync(root, remote)
        assert out.returncode == 0, out.stderr
    assert not log_holds(b, SECRET)
    assert {"a before", "b before", "the code is [PURGED]"} <= _converged(a, b)


@pytest.mark.parametrize("first", ["synced", "crashed after push"])
@pytest.mark.parametrize("where", ["sync.pushed", "receive-pack"])
def test_a_purge_then_a_killed_republication_then_the_next_sync_completes(
        tmp_path: Path, first: str, where: str) -> None:
    """The purge's republication push is killed: after it landed (this side) or while the
    remote received it; the next sync completes, with the secret gone everywhere."""
    remote, a, b = _two_synced_homes(tmp_path)
    _say(a, f"the code is {SECRET}")
    pushed = _sync(a, remote, **({CRASH_ENV: "sync.pushed"} if first == "crashed after push" else {}))
    assert pushed.returncode == (-9 if first == "crashed after push" else 0), pushed.stderr
    assert _sync(b, remote).returncode == 0
    assert cli_here(a, "purge", SECRET, "--yes").returncode == 0
    before = remote_refs(remote)
    if where == "receive-pack":
        hook = _kill_receive_pack(remote)
        killed = _sync(a, remote)
        assert killed.returncode != 0 and "Traceback" not in killed.stderr
        assert remote_refs(remote) == before  # nothing landed
        hook.unlink()
    else:
        killed = _sync(a, remote, **{CRASH_ENV: "sync.pushed"})
        assert killed.returncode == -9, killed.stderr
        assert remote_refs(remote) != before  # the new history landed, the local ref did not move
    for root in (a, b, a, b):
        out = _sync(root, remote)
        assert out.returncode == 0, out.stderr
    assert not log_holds(a, SECRET) and not log_holds(b, SECRET)
    assert not remote_holds(remote, SECRET)
    assert {"a before", "b before", "the code is [PURGED]"} <= _converged(a, b)
