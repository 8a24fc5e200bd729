"""``memtray sync setup|pair|devices|remove-device`` and ``--status`` as a user runs them (issue 33)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.integration.sync_support import bare, remote_holds, remote_refs
from tests.support import run_cli


def cli(root: Path, keyring: Path, *args: str) -> str:
    out = run_cli(root, *args, PYTHON_KEYRING_BACKEND="tests.support.FileKeyring",
                  MEMTRAY_TEST_KEYRING=str(keyring))
    assert "Traceback" not in out.stderr
    assert out.returncode == 0, out.stderr
    return str(out.stdout)


def test_set_up_pair_list_and_remove_devices_from_the_command_line(tmp_path: Path) -> None:
    remote = str(bare(tmp_path / "remote.git"))
    a, b = tmp_path / "a", tmp_path / "b"
    ka, kb = tmp_path / "keyring-a.json", tmp_path / "keyring-b.json"  # one OS keyring per computer
    said = cli(a, ka, "sync", "setup")
    assert "every paired device is lost" in said  # the set-up says it plainly
    cli(a, ka, "sync", remote)
    status = json.loads(cli(a, ka, "sync", "--status", "--json"))
    assert status["encrypted"] is True and status["devices"] == 1
    assert "encrypted: yes" in cli(a, ka, "sync", "--status")
    shown = cli(a, ka, "sync", "pair", remote)
    code = re.search(r"pairing code: (\S+)", shown)
    assert code is not None and "every paired device is lost" in shown
    joined = cli(b, kb, "sync", "pair", remote, "--join", code.group(1).lower())  # typed as it comes
    assert "paired with device" in joined
    listed = json.loads(cli(b, kb, "sync", "devices", "--json"))
    assert listed["encrypted"] and len(listed["devices"]) == 2
    b_id = next(d["device"] for d in listed["devices"] if d["this"])
    # a knows b's key from the moment it invited it, and its device id from b's first sealed stream
    assert None in {d["device"] for d in json.loads(cli(a, ka, "sync", "devices", "--json"))["devices"]}
    # the code was used: it opens nothing any more
    again = run_cli(tmp_path / "c", *("sync", "pair", remote, "--join", code.group(1)),
                    PYTHON_KEYRING_BACKEND="tests.support.FileKeyring", MEMTRAY_TEST_KEYRING=str(tmp_path / "kc"))
    assert again.returncode == 1 and "no invitation for this code" in again.stderr
    assert "Traceback" not in again.stderr
    cli(a, ka, "sync", remote)
    assert b_id in {d["device"] for d in json.loads(cli(a, ka, "sync", "devices", "--json"))["devices"]}
    removed = json.loads(cli(a, ka, "sync", "remove-device", b_id, "--json"))
    assert removed == {"removed": b_id, "device": b_id, "key": next(d["key"] for d in listed["devices"] if d["this"]),
                       "key_generation": 2, "synced": False}
    assert "removed" in cli(a, ka, "sync", "devices")
    # the keys are in the keyring files only: not in the data home, the log or the remote
    secret = json.loads(ka.read_text())
    for value in secret.values():
        for part in re.findall(r'"(?:sign|box|key)": "([^"]+)"', value):
            for path in [*a.rglob("*"), *Path(remote).rglob("*")]:
                if path.is_file():
                    assert part.encode() not in path.read_bytes(), path


def test_a_new_remote_is_encrypted_by_default_and_in_clear_only_when_asked(tmp_path: Path) -> None:
    """What a new user gets: the first sync with a new remote makes the device's keys and seals
    everything; ``--clear`` keeps a new remote in clear; a clear remote in use stays clear for
    every device that joins it, and says how to move to an encrypted one."""
    sealed, clear = str(bare(tmp_path / "sealed.git")), str(bare(tmp_path / "clear.git"))
    a, b, c, d = (tmp_path / n for n in "abcd")
    keyring = {n: tmp_path / f"keyring-{n}.json" for n in "abcd"}
    assert run_cli(a, "remind", "add", "water the ficus Bartholomew", "--at", "in 5h").returncode == 0
    first = cli(a, keyring["a"], "sync", sealed)
    assert "a new remote, encrypted" in first and "every paired device is lost" in first
    # the pairing command it prints works as printed (a one-off sync sets no sync_remote)
    assert f"`memtray sync pair {sealed}` here" in first
    assert "code" in cli(a, keyring["a"], "sync", "pair", sealed).lower()
    status = json.loads(cli(a, keyring["a"], "sync", "--status", "--json"))
    assert status["encrypted"] is True and status["devices"] == 1
    assert not _in_remote(sealed, "Bartholomew")
    # a device nobody paired is told to pair, and pushes nothing
    refused = run_cli(b, "sync", sealed, PYTHON_KEYRING_BACKEND="tests.support.FileKeyring",
                      MEMTRAY_TEST_KEYRING=str(keyring["b"]))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "is an encrypted remote and this device is not paired" in refused.stderr
    assert "memtray sync pair --join CODE" in refused.stderr
    assert len(_stream_refs(sealed)) == 1
    # --clear, asked for: a plain remote, and the status says what that means
    assert run_cli(c, "remind", "add", "feed the cat Clementine", "--at", "in 5h").returncode == 0
    said = cli(c, keyring["c"], "sync", "--clear", clear)
    assert "in clear" in said and "From a clear remote to an encrypted one" in said
    assert _in_remote(clear, "Clementine")  # the control: what is in clear is found
    assert "encrypted: no" in cli(c, keyring["c"], "sync", "--status")
    assert "From a clear remote to an encrypted one" in cli(c, keyring["c"], "sync", "--status")
    # another device joining that clear remote keeps it clear (no keys made), and reads it
    joined = json.loads(cli(d, keyring["d"], "sync", clear, "--json"))
    assert joined["encrypted"] is False and joined["keys_created"] is False and joined["imported"] >= 1
    assert json.loads(cli(d, keyring["d"], "sync", "devices", "--json"))["encrypted"] is False
    assert json.loads(cli(d, keyring["d"], "sync", "--status", "--json"))["encrypted"] is False


def test_no_keyring_never_means_a_new_remote_in_clear_without_being_asked(tmp_path: Path) -> None:
    remote = str(bare(tmp_path / "remote.git"))
    assert run_cli(tmp_path / "a", "remind", "add", "water the plants", "--at", "in 5h").returncode == 0
    out = run_cli(tmp_path / "a", "sync", remote)  # run_cli's keyring is the null one: not secure
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "could not be made" in out.stderr and "memtray sync --clear REMOTE" in out.stderr
    assert _stream_refs(remote) == []
    wrong = run_cli(tmp_path / "a", "sync", "setup", "--clear")
    assert wrong.returncode == 1 and "`--clear` goes with `memtray sync [REMOTE]`" in wrong.stderr
    assert run_cli(tmp_path / "a", "sync", "--clear", remote).returncode == 0
    assert len(_stream_refs(remote)) == 1


def _stream_refs(remote: str) -> list[str]:
    return [r for r in remote_refs(Path(remote)) if r.endswith("/log")]


def _in_remote(remote: str, text: str) -> bool:
    return remote_holds(Path(remote), text, reachable=False)
