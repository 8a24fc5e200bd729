"""Encrypted remotes (issue 33): paired devices, sealed streams, nothing readable on the remote."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memtray.core.app import App

from tests.integration.sync_support import GIT, bare, contents, digest, homes, remember, say


def remote_objects(remote: Path) -> bytes:
    """Every object of a bare remote, loose and packed, reachable or not, concatenated."""
    subprocess.run([GIT, "--git-dir", str(remote), "repack", "-q"], check=True)  # packs too
    out = subprocess.run([GIT, "--git-dir", str(remote), "cat-file", "--batch", "--batch-all-objects"],
                         check=True, capture_output=True).stdout
    assert len(out) > 1000
    return out


def pair(url: Path, first: App, *others: App) -> None:
    """``memtray sync pair`` on ``first``, ``pair --join`` on each of ``others``."""
    assert first.sync is not None
    for other in others:
        assert other.sync is not None
        code = first.sync.pairing.invite(str(url))
        other.sync.pairing.join(str(url), code)


def test_two_paired_devices_sync_and_the_remote_holds_nothing_in_clear(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        assert a.sync is not None and b.sync is not None
        say(a, "my IBAN is FR76 3000 6000 0112 3456 7890 189")
        remember(a, "The user's dentist is Dr Okonkwo in Lyon")
        pair(remote, a, b)
        a.sync.sync(str(remote))
        say(b, "the cat is called Moustache")
        rb = b.sync.sync(str(remote))
        assert rb.encrypted and rb.imported >= 2
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        assert contents(a) == contents(b)
        assert "the cat is called Moustache" in contents(a)
        assert digest(a) == digest(b)
        blob = remote_objects(remote)
        for text in ("FR76", "IBAN", "Okonkwo", "Moustache", "dentist", "noted:"):
            assert text.encode() not in blob, text


def test_the_scan_finds_the_same_texts_on_a_clear_remote(tmp_path: Path) -> None:
    """The control of the scan above: without keys, the same sync leaves the texts readable."""
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        assert a.sync is not None and b.sync is not None
        say(a, "my IBAN is FR76 3000 6000 0112 3456 7890 189")
        remember(a, "The user's dentist is Dr Okonkwo in Lyon")
        assert not a.sync.sync(str(remote)).encrypted
        b.sync.sync(str(remote))
        blob = remote_objects(remote)
        for text in ("FR76", "Okonkwo", "noted:"):
            assert text.encode() in blob, text
