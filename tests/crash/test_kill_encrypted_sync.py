"""kill -9 while pairing and during a sync with an encrypted remote (issue 33): the next try
completes, nothing is imported twice, the remote never holds a text in clear.

Real ``memtray`` processes that SIGKILL themselves at a named step (``crash_point``); each
home has its own keyring, a file that outlives the process as the OS keyring does
(``tests.support.FileKeyring``)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from memtray.core.base.faults import CRASH_ENV

from tests.crash.test_kill_sync import SECRET, _converged, _kill_receive_pack, _say, _state
from tests.integration.sync_support import GIT, bare, git, log_holds, remote_refs
from tests.support import cli_here, run_cli


def _cli(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command with the home's file keyring: in a child when it is to be killed, else in
    this process (cli_here: what the recovery runs is the same command, without a second of start)."""
    run = run_cli if CRASH_ENV in env else cli_here
    return run(root, *args, PYTHON_KEYRING_BACKEND="tests.support.FileKeyring",
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


def _paired(tmp_path: Path, names: str = "ab") -> tuple[Path, list[Path]]:
    """A bare remote and homes paired through it with the CLI, as a user pairs them (the first
    one set up, each other joined with a code it showed), each synced once."""
    remote = bare(tmp_path / "remote.git")
    roots = [tmp_path / n for n in names]
    _ok(_cli(roots[0], "sync", "setup"))
    for root in roots[1:]:
        _, code = _code(roots[0], remote)
        assert code is not None
        _ok(_cli(root, "sync", "pair", str(remote), "--join", code))
    for root in roots:
        _say(root, f"{root.name} before")
        _ok(_cli(root, "sync", str(remote)))
    return remote, roots


def test_kill_while_removing_a_device_then_the_next_sync_seals_with_a_key_the_others_have(tmp_path: Path) -> None:
    """kill -9 between the removal's two writes (the paired devices saved, the keyring not yet):
    the next sync takes the new key from what was saved; the device that stays reads what is
    written next, the removed one does not."""
    remote, (a, b, c) = _paired(tmp_path, "abc")
    for root in (a, b):
        _ok(_cli(root, "sync", str(remote)))  # both know c's id (and what it said) from its stream
    gone = next(d["device"] for d in json.loads(_ok(_cli(c, "sync", "devices", "--json")))["devices"] if d["this"])
    killed = _cli(a, "sync", "remove-device", gone, **{CRASH_ENV: "sync.removing"})
    assert killed.returncode == -9, killed.stderr
    assert "removed" in _ok(_cli(a, "sync", "devices"))  # the removal holds
    _say(a, "a after the removal")
    _ok(_cli(a, "sync", str(remote)))
    synced_b = _ok(_cli(b, "sync", str(remote)))  # a's new stream opens: sealed with the key b was handed
    refused = [line for line in synced_b.splitlines() if "its stream:" in line]
    assert all(gone in line and "was removed" in line for line in refused)  # c alone, if it pushed
    _ok(_cli(c, "sync", str(remote)))
    assert "a after the removal" in _converged(a, b)
    assert "a after the removal" not in _state(c)[1]
    assert _in_clear(remote, "a after the removal", "a before", "b before") == []


def test_receive_pack_killed_during_an_encrypted_sync_then_the_next_sync_completes(tmp_path: Path) -> None:
    remote, (a, b) = _paired(tmp_path)
    _say(a, "a new")
    before = remote_refs(remote)
    hook = _kill_receive_pack(remote)
    killed = _cli(a, "sync", str(remote))
    assert killed.returncode != 0 and "memtray: error:" in killed.stderr and "Traceback" not in killed.stderr
    assert remote_refs(remote) == before
    hook.unlink()
    _ok(_cli(a, "sync", str(remote)))
    assert "refused" not in _ok(_cli(b, "sync", str(remote)))
    assert {"a new", "a before", "b before"} <= _converged(a, b)
    git("--git-dir", str(remote), "fsck")


def test_a_purge_then_a_killed_sealed_republication_then_the_next_sync_completes(tmp_path: Path) -> None:
    remote, (a, b) = _paired(tmp_path)
    _say(a, f"the code is {SECRET}")
    _ok(_cli(a, "sync", str(remote)))
    _ok(_cli(b, "sync", str(remote)))
    assert log_holds(b, SECRET)
    purged = _cli(a, "purge", SECRET, "--yes")
    assert purged.returncode == 0, purged.stderr
    killed = _cli(a, "sync", str(remote), **{CRASH_ENV: "sync.pushed"})
    assert killed.returncode == -9, killed.stderr
    for root in (a, b, a, b):
        out = _cli(root, "sync", str(remote))
        assert out.returncode == 0 and "refused" not in out.stdout, out.stderr + out.stdout
    assert not log_holds(a, SECRET) and not log_holds(b, SECRET)
    assert {"a before", "b before", "the code is [PURGED]"} <= _converged(a, b)
