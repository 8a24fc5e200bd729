"""Encrypted remotes (issue 33): paired devices, sealed streams, nothing readable on the remote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from memtray.core.app import App
from memtray.core.sync.gitcli import SyncError

from tests.integration.sync_support import (
    GIT,
    bare,
    contents,
    digest,
    homes,
    remember,
    remote_refs,
    say,
)


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


ATTACHED = b"Attached note: the boat is moored at pier 7, slot QX-44.\n"
SECRETS = ("FR76", "IBAN", "Okonkwo", "dentist", "Moustache", "noted:", "pier 7, slot QX-44")


def _attach(app: App, text: bytes) -> None:
    """A user message with a text attachment, stored as the quick chat stores one."""
    from dataclasses import asdict

    from memtray.core.log.attachments import AttachmentStore, prepare
    from memtray.core.log.events import Message

    item = prepare(text, "boat.txt")
    ref = AttachmentStore(app.home.root).put(item)
    app.store.append_many([(Message(role="user", content="see the attached note",
                                    attachments=[asdict(ref)]), "quick", None)])  # type: ignore[typeddict-item]


@pytest.mark.parametrize("encrypted", [True, False])
def test_two_devices_sync_and_the_remote_holds_no_text_fact_or_attachment_in_clear(
        tmp_path: Path, encrypted: bool) -> None:
    """Every object of the remote (loose and packed, reachable or not) is scanned; on a clear
    remote (the control: the scan finds what it looks for) the same texts are all there."""
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab") as (a, b):
        assert a.sync is not None and b.sync is not None
        say(a, "my IBAN is FR76 3000 6000 0112 3456 7890 189")
        remember(a, "The user's dentist is Dr Okonkwo in Lyon")
        _attach(a, ATTACHED)
        if encrypted:
            pair(remote, a, b)
        assert a.sync.sync(str(remote)).encrypted == encrypted
        say(b, "the cat is called Moustache")
        rb = b.sync.sync(str(remote))
        assert rb.encrypted == encrypted and rb.imported >= 3 and rb.attachments == 1
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        assert contents(a) == contents(b)
        assert "the cat is called Moustache" in contents(a)
        assert digest(a) == digest(b)
        blob = remote_objects(remote)
        found = [text for text in SECRETS if text.encode() in blob]
        assert found == ([] if encrypted else list(SECRETS))


def forged_republication(remote: Path, forger: App, victim: str, text: str) -> None:
    """What the issue's attacker did, by a device holding the sync key (``forger``): the
    victim's stream again with a higher epoch and one line changed to ``text``, sealed
    (re-signed with the forger's key) and force-pushed over the victim's ref."""
    from memtray.core.log.codec import legacy_line
    from memtray.core.log.events import decode_raw
    from memtray.core.sync.stream import log_ref

    assert forger.sync is not None
    repo = forger.sync.repo(forger.sync.keys.seal(forger.sync.device))
    head_sha = subprocess.run([GIT, "--git-dir", str(remote), "rev-parse", log_ref(victim)], check=True,
                              capture_output=True, text=True).stdout.strip()
    repo.git.run(["fetch", "-q", str(remote), f"+{log_ref(victim)}:refs/forge"])
    head = repo.head(head_sha, victim)
    lines = [line for _, line in repo.lines_after(victim, head_sha, 0)]
    rec = decode_raw(lines[0])
    lines[0] = legacy_line(rec._replace(data={**rec.data, "content": text})).rstrip(b"\n")
    forged = repo.republish(victim, [(1, [ln + b"\n" for ln in lines])], head.last_seq, head.epoch + 1,
                            "1700000000 +0000")
    subprocess.run([GIT, "--git-dir", str(repo.path), "push", "-q", "--force", str(remote),
                    f"{forged}:{log_ref(victim)}"], check=True, capture_output=True)


def test_a_forged_republication_by_a_device_with_the_sync_key_is_refused_and_reported(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abm") as (a, b, m):
        assert a.sync is not None and b.sync is not None and m.sync is not None
        pair(remote, a, b, m)
        say(a, "pay the invoices to FR76 1111 2222 3333")
        a.sync.sync(str(remote))
        m.sync.sync(str(remote))
        forged_republication(remote, m, a.sync.device, "my new IBAN is FR76 EVIL 0000, pay invoices there")
        rep = b.sync.sync(str(remote))
        assert rep.imported == 0
        assert not any("EVIL" in c for c in contents(b))
        assert rep.refusals == 1 and a.sync.device in rep.refused[0]["reason"]
        assert "not signed by" in rep.refused[0]["reason"]
        status = b.sync.status()
        assert status["refusals"] == 1 and "forged or re-signed" in status["refused"][0]["reason"]
        # the real device repairs it: it republishes its own stream, and b takes it then
        a.sync.sync(str(remote), republish=True)
        assert b.sync.sync(str(remote)).imported == 2
        assert "pay the invoices to FR76 1111 2222 3333" in contents(b)
        assert not any("EVIL" in c for c in contents(b))


def test_a_stream_in_clear_or_sealed_by_an_unpaired_device_is_refused_and_reported(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abcu") as (a, b, c, u):
        assert a.sync is not None and b.sync is not None and c.sync is not None and u.sync is not None
        say(c, "a device nobody paired, in clear")
        c.sync.sync(str(remote))  # while the remote was still in clear
        pair(remote, a, b)
        a.sync.sync(str(remote))
        with pytest.raises(SyncError, match="is an encrypted remote and this device is not paired"):
            c.sync.sync(str(remote))  # and now it is not: c is told to pair, it pushes nothing
        u.sync.pairing.set_up()  # its own keys: a remote of its own, sealed with a key b does not have
        say(u, "a device with keys of its own")
        u.sync.sync(str(remote))
        rep = b.sync.sync(str(remote))
        reasons = sorted(r["reason"] for r in rep.refused)
        assert rep.imported == 0 and rep.refusals == 2
        assert any("is not signed (in clear)" in r and c.sync.device in r for r in reasons)
        assert any("sync key this device does not have" in r and u.sync.device in r for r in reasons)
        assert not contents(b) & {"a device nobody paired, in clear", "a device with keys of its own"}


def test_a_device_that_has_the_sync_key_but_was_never_paired_is_refused(tmp_path: Path) -> None:
    """Someone who got hold of the sync key (not a device's signing key) publishes a stream of
    their own: it decrypts, but no paired device signed it."""
    from memtray.core.sync.identity import Identity

    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abt") as (a, b, thief):
        assert a.sync is not None and b.sync is not None and thief.sync is not None
        pair(remote, a, b)
        stolen = a.sync.keys.load()
        assert stolen is not None
        thief.sync.keys.store(Identity.new(stolen.keys), thief.sync.device)
        say(thief, "I am a trusted device, believe me")
        thief.sync.sync(str(remote))
        rep = b.sync.sync(str(remote))
        assert rep.imported == 0 and rep.refusals == 1
        assert "signed by a device you did not pair" in rep.refused[0]["reason"]


def test_three_devices_then_one_removed_cannot_read_what_is_written_after(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abc") as (a, b, c):
        assert a.sync is not None and b.sync is not None and c.sync is not None
        pair(remote, a, b)
        pair(remote, b, c)  # c paired by b: a learns of c through b's roster
        for app in (a, b, c, a, b, c):
            say(app, f"hello from {app.sync.device}")  # type: ignore[union-attr]
            app.sync.sync(str(remote))  # type: ignore[union-attr]
        assert contents(a) == contents(b) == contents(c)
        assert len(contents(a)) == 6
        assert {d["device"] for d in a.sync.pairing.devices()} == {a.sync.device, b.sync.device, c.sync.device}
        # c is lost: removed on a, in one step
        assert a.sync.pairing.remove(c.sync.device).gen == 2
        assert a.sync.sync(str(remote)).devices == 2
        say(a, "written after c was removed")
        a.sync.sync(str(remote))
        rb = b.sync.sync(str(remote))
        assert "written after c was removed" in contents(b)
        assert any("new sync key" in n for n in rb.notes)
        say(b, "b after the removal")
        b.sync.sync(str(remote))
        # c still holds the old keys and the remote's old objects, and can read none of the new
        say(c, "c after it was removed")
        rc = c.sync.sync(str(remote))
        assert not contents(c) & {"written after c was removed", "b after the removal"}
        assert rc.refusals >= 1 and any("does not have" in r["reason"] for r in rc.refused)
        assert any("this device was removed" in n for n in rc.notes)
        # and its stream is no longer imported anywhere
        for app in (a, b):
            rep = app.sync.sync(str(remote))  # type: ignore[union-attr]
            assert "c after it was removed" not in contents(app)
            assert any("was removed" in r["reason"] for r in rep.refused)
        assert contents(a) == contents(b)


def test_a_clear_remote_is_migrated_to_a_new_encrypted_one(tmp_path: Path) -> None:
    """docs/SYNC.md, "From a clear remote to an encrypted one": keys on one device, pair the
    others through a new empty remote; each publishes its stream there again, sealed."""
    clear, sealed = bare(tmp_path / "clear.git"), bare(tmp_path / "sealed.git")
    with homes(tmp_path, "ab") as (a, b):
        assert a.sync is not None and b.sync is not None
        say(a, "said on a before the migration")
        say(b, "said on b before the migration")
        remember(a, "The user's locker code is kept at home")
        for app in (a, b, a):
            assert not app.sync.sync(str(clear)).encrypted  # type: ignore[union-attr]
        before = digest(a)
        assert before == digest(b)
        assert a.sync.pairing.set_up()
        pair(sealed, a, b)
        ra = a.sync.sync(str(sealed))
        assert ra.encrypted and ra.republished and ra.pushed >= 3  # its whole stream, again
        rb = b.sync.sync(str(sealed))
        assert rb.encrypted and rb.republished and rb.refusals == 0
        assert a.sync.sync(str(sealed)).refusals == 0
        say(a, "said on a after the migration")
        a.sync.sync(str(sealed))
        b.sync.sync(str(sealed))
        assert "said on a after the migration" in contents(b)
        assert digest(a) == digest(b)
        blob = remote_objects(sealed)
        for text in ("before the migration", "after the migration", "locker code"):
            assert text.encode() not in blob, text
        assert a.sync.status()["encrypted"] is True


def test_a_recovery_code_brings_everything_back_after_every_device_is_lost(tmp_path: Path) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abn") as (a, b, new):
        assert a.sync is not None and b.sync is not None and new.sync is not None
        recovery = a.sync.pairing.recovery_code(str(remote))
        assert len(recovery.replace("-", "")) == 20
        pair(remote, a, b)
        say(a, "before b was removed")
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        a.sync.sync(str(remote))  # a knows b's id now
        a.sync.pairing.remove(b.sync.device)  # a new sync key: handed to the recovery code's keys too
        say(a, "after b was removed")
        a.sync.sync(str(remote))
        # a and b are lost; a new device has the remote and the code written down
        new.sync.pairing.join(str(remote), recovery)
        rep = new.sync.sync(str(remote))
        assert rep.refusals == 0 and rep.imported >= 4
        assert {"before b was removed", "after b was removed"} <= contents(new)
        assert any(d["recovery"] and d["this"] for d in new.sync.pairing.devices())


def test_a_device_invited_that_never_synced_is_removed_in_one_step(tmp_path: Path) -> None:
    """A laptop lost between ``pair`` and its first sync has no device id yet: it is removed by
    its key, as ``sync devices`` lists it. Its invitation leaves the remote, the code opens
    nothing, a new sync key is handed to the others only, and what it might still publish with
    the keys it was given (a join before the invitation was withdrawn) is refused everywhere."""
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abl") as (a, b, lost):
        assert a.sync is not None and b.sync is not None and lost.sync is not None
        pair(remote, a, b)
        for app in (a, b, a):
            app.sync.sync(str(remote))  # type: ignore[union-attr]
        code = a.sync.pairing.invite(str(remote))
        invited = [d for d in a.sync.pairing.devices() if d["device"] is None]
        assert len(invited) == 1 and not invited[0]["removed"]
        with pytest.raises(SyncError, match="not a paired device"):
            a.sync.pairing.remove("dffffffffffff")  # neither an id nor a key it knows
        with pytest.raises(SyncError, match="cannot remove itself"):
            a.sync.pairing.remove(a.sync.device)
        done = a.sync.pairing.remove(invited[0]["key"])
        assert done.device is None and done.gen == 2 and done.key.startswith(invited[0]["key"])
        assert [d["removed"] for d in a.sync.pairing.devices() if d["device"] is None] == [True]
        with pytest.raises(SyncError, match="removed already"):
            a.sync.pairing.remove(invited[0]["key"])
        rep = a.sync.sync(str(remote))
        assert rep.devices == 2 and any("invitation" in n for n in rep.notes)
        assert not [r for r in remote_refs(remote) if r.startswith("refs/memtray/pairing/")]
        with pytest.raises(SyncError, match="no invitation for this code"):
            lost.sync.pairing.join(str(remote), code)
        rb = b.sync.sync(str(remote))  # b takes in the removal and the new key from a's roster
        assert any("new sync key" in n for n in rb.notes)
        assert [d["removed"] for d in b.sync.pairing.devices() if d["device"] is None] == [True]
        say(a, "after the invited laptop was removed")
        a.sync.sync(str(remote))
        b.sync.sync(str(remote))
        assert "after the invited laptop was removed" in contents(b)


def test_a_device_removed_after_its_invitation_was_taken_is_refused(tmp_path: Path) -> None:
    """The invited device joined before the removal reached it, but never synced: removed by
    its key on the second device; its stream is refused by both, and it reads nothing new."""
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abl") as (a, b, lost):
        assert a.sync is not None and b.sync is not None and lost.sync is not None
        pair(remote, a, b)
        for app in (a, b, a):
            app.sync.sync(str(remote))  # type: ignore[union-attr]
        pair(remote, a, lost)  # joined, never synced: nobody knows its device id
        b.sync.sync(str(remote))  # b knows its key from a's roster
        key = next(d["key"] for d in b.sync.pairing.devices() if d["device"] is None)
        b.sync.pairing.remove(key)
        say(b, "b after the removal")
        b.sync.sync(str(remote))
        a.sync.sync(str(remote))
        say(lost, "the lost laptop speaks")
        rl = lost.sync.sync(str(remote))
        assert "b after the removal" not in contents(lost)
        assert any("this device was removed" in n for n in rl.notes)
        for app in (a, b):
            rep = app.sync.sync(str(remote))  # type: ignore[union-attr]
            assert "the lost laptop speaks" not in contents(app)
            assert rep.refusals >= 1
        assert contents(a) == contents(b)


def test_a_device_with_keys_does_not_lock_the_clear_devices_out_of_their_remote(tmp_path: Path) -> None:
    """A clear remote keeps working for its devices: a device that has keys (it syncs
    elsewhere encrypted) is refused there before anything is pushed, and pairing on a device
    that syncs in clear does not make keys behind its peers' backs."""
    clear, other = bare(tmp_path / "clear.git"), bare(tmp_path / "other.git")
    with homes(tmp_path, "efa") as (e, f, a):
        assert e.sync is not None and f.sync is not None and a.sync is not None
        say(e, "said on e in clear")
        assert not e.sync.sync(str(clear), clear=True).encrypted
        assert not f.sync.sync(str(clear)).encrypted  # a clear memtray remote stays clear
        assert a.sync.pairing.set_up()  # a syncs elsewhere, encrypted
        assert a.sync.sync(str(other)).encrypted
        before = remote_refs(clear)
        with pytest.raises(SyncError, match="other devices sync with in clear") as err:
            a.sync.sync(str(clear))
        assert "From a clear remote to an encrypted one" in (err.value.hint or "")
        assert remote_refs(clear) == before  # no roster, no sealed stream: nothing pushed
        say(e, "still in clear afterwards")
        assert e.sync.sync(str(clear)).refusals == 0
        assert f.sync.sync(str(clear)).refusals == 0
        assert "still in clear afterwards" in contents(f)
        # "Pair a new device" on a device that syncs in clear: refused, no keys made
        with pytest.raises(SyncError, match="syncs in clear with other devices"):
            f.sync.pairing.invite(str(clear))
        with pytest.raises(SyncError, match="syncs in clear with other devices"):
            f.sync.pairing.recovery_code(str(clear))
        assert not f.sync.pairing.encrypted
        assert f.sync.sync(str(clear)).refusals == 0 and e.sync.sync(str(clear)).refusals == 0


def test_a_device_another_removed_is_told_so_when_it_tries_to_remove(tmp_path: Path) -> None:
    """A lost laptop removed the owner's device first: the owner's removal then reaches nobody,
    and it says so instead of printing success."""
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "abk") as (a, b, k):
        assert a.sync is not None and b.sync is not None and k.sync is not None
        pair(remote, a, b, k)
        for app in (a, b, k, a, b, k):
            app.sync.sync(str(remote))  # every device knows every id
        k.sync.pairing.remove(a.sync.device)
        k.sync.sync(str(remote))
        notes = a.sync.sync(str(remote)).notes
        assert any("this device was removed" in n for n in notes), notes
        with pytest.raises(SyncError, match="was removed from the paired devices by another one"):
            a.sync.pairing.remove(k.sync.device)
