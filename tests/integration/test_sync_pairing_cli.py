"""``memtray sync setup|pair|devices|remove-device`` and ``--status`` as a user runs them (issue 33)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.integration.sync_support import bare
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
    assert removed == {"removed": b_id, "key_generation": 2, "synced": False}
    assert "removed" in cli(a, ka, "sync", "devices")
    # the keys are in the keyring files only: not in the data home, the log or the remote
    secret = json.loads(ka.read_text())
    for value in secret.values():
        for part in re.findall(r'"(?:sign|box|key)": "([^"]+)"', value):
            for path in [*a.rglob("*"), *Path(remote).rglob("*")]:
                if path.is_file():
                    assert part.encode() not in path.read_bytes(), path


def test_a_clear_remote_says_so(tmp_path: Path) -> None:
    remote = str(bare(tmp_path / "remote.git"))
    cli(tmp_path / "a", tmp_path / "k.json", "sync", remote)
    assert "encrypted: no" in cli(tmp_path / "a", tmp_path / "k.json", "sync", "--status")
    assert json.loads(cli(tmp_path / "a", tmp_path / "k.json", "sync", "--status", "--json"))["encrypted"] is False
