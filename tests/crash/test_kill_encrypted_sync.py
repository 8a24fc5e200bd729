"""kill -9 while pairing and during a sync with an encrypted remote (issue 33): the next try
completes, nothing is imported twice, the remote never holds a text in clear.

Real ``memtray`` processes that SIGKILL themselves at a named step (``crash_point``); each
home has its own keyring, a file that outlives the process as the OS keyring does
(``tests.support.FileKeyring``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from memtray.core.base.faults import CRASH_ENV

from tests.crash.test_kill_sync import _converged, _say
from tests.integration.sync_support import GIT, bare, git, remote_refs
from tests.support import run_cli


def _cli(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(root, *args, PYTHON_KEYRING_BACKEND="tests.support.FileKeyring",
                   MEMTRAY_TEST_KEYRING=str(root.parent / f"keyring-{root.name}.json"), **env)


def _ok(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return str(out.stdout)


def _code(root: Path, remote: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], str | None]:
    out = _cli(root, "sync", "pair", str(remote), **env)
    found = re.search(r"pairing code: (\S+)", out.stdout)
    return out, found.group(1) if found else None


def _in_clear(remote: Path, *texts: str) -> list[str]:
    blob = subprocess.run([GIT, "--git-dir", str(remote), "cat-file", "--batch", "--batch-all-objects"],
                          check=True, capture_output=True).stdout
    return [t for t in texts if t.encode() in blob]


@pytest.mark.parametrize("step", ["pair.roster", "sync.keys_stored", "pair.joined"])
def test_kill_while_pairing_then_pairing_again_completes(tmp_path: Path, step: str) -> None:
    remote = bare(tmp_path / "remote.git")
    a, b = tmp_path / "a", tmp_path / "b"
    _say(a, "a before pairing")
    _ok(_cli(a, "sync", "setup"))
    _ok(_cli(a, "sync", str(remote)))
    if step == "pair.roster":  # the inviting side dies before the invitation is on the remote
        killed, code = _code(a, remote, **{CRASH_ENV: step})
        assert killed.returncode == -9 and code is None
        _, code = _code(a, remote)
    else:  # the joining side dies with its keys half or wholly stored
        _, code = _code(a, remote)
        assert code is not None
        killed = _cli(b, "sync", "pair", str(remote), "--join", code, **{CRASH_ENV: step})
        assert killed.returncode == -9, killed.stderr
    assert code is not None
    _ok(_cli(b, "sync", "pair", str(remote), "--join", code))
    assert not [r for r in remote_refs(remote) if r.startswith("refs/memtray/pairing/")]  # used up
    _say(b, "b after pairing")
    _ok(_cli(b, "sync", str(remote)))
    _ok(_cli(a, "sync", str(remote)))
    assert {"a before pairing", "b after pairing"} <= _converged(a, b)
    assert _in_clear(remote, "a before pairing", "b after pairing") == []


@pytest.mark.parametrize("step", ["sync.fetched", "sync.imported", "sync.pushed"])
def test_kill_during_an_encrypted_sync_then_the_next_sync_completes(tmp_path: Path, step: str) -> None:
    remote = bare(tmp_path / "remote.git")
    a, b = tmp_path / "a", tmp_path / "b"
    _ok(_cli(a, "sync", "setup"))
    _, code = _code(a, remote)
    assert code is not None
    _ok(_cli(b, "sync", "pair", str(remote), "--join", code))
    _say(a, "a before")
    _say(b, "b before")
    for root in (a, b, a):
        _ok(_cli(root, "sync", str(remote)))
    _say(a, "a new")
    _say(b, "b new")
    _ok(_cli(b, "sync", str(remote)))
    before = remote_refs(remote)
    killed = _cli(a, "sync", str(remote), **{CRASH_ENV: step})
    assert killed.returncode == -9, killed.stderr
    after = remote_refs(remote)
    for ref, sha in before.items():  # whatever got through is a fast-forward
        git("--git-dir", str(remote), "merge-base", "--is-ancestor", sha, after[ref])
    _ok(_cli(a, "sync", str(remote)))
    _ok(_cli(b, "sync", str(remote)))
    assert "refused" not in _ok(_cli(a, "sync", str(remote)))
    assert {"a new", "b new", "a before", "b before"} <= _converged(a, b)
    assert _in_clear(remote, "a new", "b new", "a before", "b before") == []
