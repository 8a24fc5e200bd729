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

from tests.integration.sync_support import bare, contents, digest, git, open_app, say
from tests.support import run_cli


def _say(root: Path, text: str) -> None:
    app = open_app(root)
    try:
        say(app, text)
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


def _refs(remote: Path) -> dict[str, str]:
    out = git("--git-dir", str(remote), "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split() for line in out.splitlines())


def _sync(root: Path, remote: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(root, "sync", str(remote), **env)


@pytest.mark.parametrize("step", ["sync.fetched", "sync.imported", "sync.pushed"])
def test_kill_during_sync_then_the_next_sync_completes(tmp_path: Path, step: str) -> None:
    remote = bare(tmp_path / "remote.git")
    a, b = tmp_path / "a", tmp_path / "b"
    _say(a, "a before")
    _say(b, "b before")
    for root in (a, b, a):
        assert _sync(root, remote).returncode == 0
    _say(a, "a new")
    _say(b, "b new")
    assert _sync(b, remote).returncode == 0
    before = _refs(remote)
    killed = _sync(a, remote, **{CRASH_ENV: step})
    assert killed.returncode == -9, killed.stderr
    after_kill = _refs(remote)
    for ref, sha in before.items():  # whatever got through is a fast-forward
        git("--git-dir", str(remote), "merge-base", "--is-ancestor", sha, after_kill[ref])
    done = _sync(a, remote)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert _sync(b, remote).returncode == 0
    da, ca, dups_a = _state(a)
    db, cb, dups_b = _state(b)
    assert dups_a == [] and dups_b == []
    assert ca == cb and {"a new", "b new", "a before", "b before"} <= ca
    assert da == db


def test_receive_pack_killed_on_the_remote_then_the_next_sync_completes(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nkill -9 $PPID\nsleep 5\nexit 1\n")  # the receiving git dies mid-push
    hook.chmod(0o755)
    a, b = tmp_path / "a", tmp_path / "b"
    _say(a, "a one")
    killed = _sync(a, remote)
    assert killed.returncode != 0
    assert "memtray: error:" in killed.stderr and "Traceback" not in killed.stderr
    assert _refs(remote) == {}
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
        done = run_cli(copy, "sync", "--new-device", str(remote))
    else:  # the id changed and the push landed: a plain sync finishes
        done = _sync(copy, remote)
    assert done.returncode == 0, done.stderr
    assert _sync(a, remote).returncode == 0
    da, ca, dups_a = _state(a)
    dc, cc, dups_c = _state(copy)
    assert dups_a == [] and dups_c == []
    assert ca == cc and {"shared", "on a", "on the copy"} <= ca
    assert da == dc
