"""Attachments travel with their messages: stored on every device by hash, checked, purged everywhere.

Device a sends an image and a text file through the real agent (real litellm against
the scripted server); b and c get the files with the messages, byte for byte, and can
build the same prompt from them. A stream without the file (an older memtray) leaves
the name and a doctor note, not a failure; a damaged blob on the remote is never
stored; a purge of a text inside an attached file reaches the copies on every device.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from memtray.core.admin import doctor
from memtray.core.admin.purge import Matcher, purge
from memtray.core.admin.tombstones import follow_tombstones
from memtray.core.app import App
from memtray.core.log.attachments import AttachmentStore, prepare, refs_of
from memtray.core.log.events import Message, Verbatim
from memtray.core.sync import attach

from tests.fixtures.llm_server import ScriptedLLMServer, reply
from tests.fixtures.tiny_files import png
from tests.integration.sync_support import bare, commit_on, git, homes, remote_holds, sync

NOTE = b"Meeting notes: the Nightingale launch moves to March.\n"


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / "attachments").glob("??/*")}


def _send(app: App, server: ScriptedLLMServer, text: str, *files: tuple[bytes, str]) -> None:
    server.script(reply("Got it."))
    app.run(app.agent.turn("quick", text, stream=False, attachments=[prepare(b, n) for b, n in files]), timeout=60)


def _attachment_findings(app: App) -> list[doctor.Finding]:
    return [f for f in doctor.check_attachments(app.home) if f.code.startswith("attachments")]


@pytest.mark.clear_only("lists the remote's attachment files by their hash (hidden on an encrypted remote)")
def test_attachments_reach_every_device_with_their_messages(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    remote = bare(tmp_path / "remote.git")
    image = png()
    with homes(tmp_path, "abc", model="openai/gpt-4o", api_base=llm_server.base_url, llm_retries=0,
               idle_consolidate_minutes=0) as (a, b, c):
        _send(a, llm_server, "what is this?", (image, "shot.png"), (NOTE, "notes.txt"))
        sync(remote, a, b, c)
        want = _files(tmp_path / "a")
        assert len(want) == 2 and hashlib.sha256(image).hexdigest() in want
        assert _files(tmp_path / "b") == want == _files(tmp_path / "c")
        for app in (b, c):
            assert all(f.ok for f in _attachment_findings(app)), _attachment_findings(app)
        # b opens a's message's files as a does: by the references the message holds
        msg = next(r for r in b.store.log.records() if r.type == "message" and r.data.get("attachments"))
        assert msg.session is not None and msg.session.startswith("quick@")
        assert {ref.name: AttachmentStore(b.home.root).load(ref.sha256) for ref in refs_of(msg.data)} == {
            "shot.png": image, "notes.txt": NOTE}
        # the files are in a's stream on the remote, under their hash, in the push that carried them
        listed = git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", f"refs/memtray/devices/{a.sync.device}/log")
        assert all(f"attachments/{sha[:2]}/{sha}" in listed.splitlines() for sha in want)
        # a later push does not carry them again, and syncing again stores nothing new
        assert sync(remote, b, c)[0].attachments == 0


def test_a_stream_without_the_file_or_with_a_damaged_one_leaves_the_name_and_a_note(
        tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    mp = pytest.MonkeyPatch()
    remote = bare(tmp_path / "remote.git")
    try:
        with homes(tmp_path, "abc", model="openai/gpt-4o", api_base=llm_server.base_url, llm_retries=0,
                   idle_consolidate_minutes=0) as (a, b, c):
            mp.setattr(attach, "files_to_push", lambda store, payloads: {})  # a memtray that does not carry them
            _send(a, llm_server, "keep these notes", (NOTE, "notes.txt"))
            sync(remote, a, b)
            mp.undo()
            assert _files(tmp_path / "b") == {}
            found = _attachment_findings(b)
            assert all(f.ok for f in found) and any(f.code == "attachments-peers" and "not synced" in f.detail
                                                     for f in found), found
            # someone puts a wrong file under the hash on the remote: c never stores it
            sha = hashlib.sha256(NOTE).hexdigest()
            commit_on(remote, f"refs/memtray/devices/{a.sync.device}/log", f"attachments/{sha[:2]}/{sha}",
                      b"not the notes", tmp_path, "a forged attachment")
            assert c.sync is not None
            c.sync.sync(str(remote))  # the messages come; the file, whose bytes lack its hash, does not
            assert sha not in _files(tmp_path / "c")
            assert any("keep these notes" in str(r.data.get("content")) for r in c.store.log.records())
    finally:
        mp.undo()


def test_a_purge_of_text_in_an_attached_file_reaches_every_copy(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab", model="openai/gpt-4o", api_base=llm_server.base_url, llm_retries=0,
               idle_consolidate_minutes=0) as (a, b):
        follow_tombstones(b)
        _send(a, llm_server, "file this", (NOTE, "notes.txt"))
        sync(remote, a, b)
        assert any(b"Nightingale" in data for data in _files(tmp_path / "b").values())
        purge(a, Matcher("Nightingale"))
        sync(remote, a, b, a)
        for home in ("a", "b"):
            files = _files(tmp_path / home)
            assert files and not any(b"Nightingale" in data for data in files.values()), (home, files)
        assert all(f.ok for f in _attachment_findings(b)), _attachment_findings(b)
        assert not remote_holds(remote, "Nightingale")


def _attach(app: App, text: str) -> None:
    item = prepare(NOTE, "notes.txt")
    AttachmentStore(app.home.root).put(item)
    app.store.append_many([(Message(role="user", content=text, attachments=[item.ref.to_data()]),
                            "quick", None)])


def test_a_tombstone_keeps_a_file_a_message_it_does_not_name_still_uses(tmp_path: Path) -> None:
    """The same bytes attached twice are one file: b's own message, not synced yet, attaches
    what a purges. Applying a's tombstone must not leave b's message without its file."""
    remote = bare(tmp_path / "remote.git")
    with homes(tmp_path, "ab", model="openai/x", idle_consolidate_minutes=0) as (a, b):
        follow_tombstones(b)
        _attach(a, "file this")
        sync(remote, a, b)
        _attach(b, "and here it is again, on b")
        purge(a, Matcher("Nightingale"))
        sync(remote, a, b)
        own = next(r for r in b.store.log.records() if r.type == "message" and "again" in str(r.data.get("content")))
        assert AttachmentStore(b.home.root).problem(refs_of(own.data)[0]) is None
        assert all(f.ok for f in doctor.check_attachments(b.home))


def test_odd_references_from_another_device_neither_break_sync_nor_hide_the_doctors_check(tmp_path: Path) -> None:
    """A peer's message whose attachment size is no number and whose hash is no hash: the sync
    and the purge clean-up skip it, and the doctor still checks (and fails) this device's own."""
    from memtray.core.log import attachments

    store = AttachmentStore(tmp_path / "x")
    odd = {"role": "user", "content": "hi", "attachments": [{"sha256": "../../etc/passwd", "size": None, "name": "odd"},
                                                            {"sha256": "ab" * 32, "size": "many", "name": "y"}]}
    assert [r.size for r in refs_of(odd)] == [0, 0]
    assert attach.files_to_push(store, [odd]) == {}
    attachments.remove(store, ["../../etc/passwd", "ab" * 32])  # names no file: nothing happens
    with homes(tmp_path, "a") as (a,):
        a.store.append_many([
            (Verbatim("message", {**odd, "origin": {"device": "d0ffee0ffee00", "seq": 1, "ts": "2026-12-01T00:00:00Z"}}),
             "quick@d0ffee0ffee00", None),
            (Message(role="user", content="mine", attachments=[{"sha256": "cd" * 32, "size": 1, "name": "lost.png"}]), "quick", None),
        ])
        found = doctor.check_attachments(a.home)
    assert any(not f.ok and "lost.png" in f.detail for f in found), found
