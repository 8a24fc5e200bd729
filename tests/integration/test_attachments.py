"""Attachments: stored by hash beside the log, sent as image parts or text, rebuilt on replay,
refused for a model without vision before anything is logged, purged and checked by the doctor."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from memtray.core.admin import doctor
from memtray.core.admin.purge import MARKER, Matcher, find_traces, purge
from memtray.core.agent.loop import NoVision, request_hash
from memtray.core.agent.timetravel import reconstruct
from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.attachments import AttachmentError, AttachmentStore, prepare
from memtray.core.log.eventlog import EventLog

from tests.fixtures.llm_server import ScriptedLLMServer, reply
from tests.fixtures.tiny_files import pdf_with_text, png

SECRET = "ghp_4Tq9x8Lm2Vb7Nc1Zr5Yw3Ks6Jd0Hf2Ga8Pe"


def _open(home: Home, server: ScriptedLLMServer, model: str = "openai/gpt-4o") -> App:
    return App.open(home, config=Config(model=model, api_base=server.base_url, llm_retries=0, llm_timeout=10.0,
                                        idle_consolidate_minutes=0), start_services=False)


def _user(request: Any) -> dict[str, Any]:
    return [m for m in request["messages"] if m["role"] == "user"][-1]


def _log_bytes(home: Home) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.events.glob("*.jsonl")))


def test_image_is_an_image_part_and_replay_rebuilds_the_same_prompt(home: Home, llm_server: ScriptedLLMServer) -> None:
    image = png()
    llm_server.script(reply("A red square."))
    app = _open(home, llm_server)
    try:
        app.run(app.agent.turn("quick", "what is this?", stream=False,
                               attachments=[prepare(image, "shot.png")]))
        tools = app.agent.tools.specs() or None
    finally:
        app.close()
    parts = _user(llm_server.requests[-1])["content"]
    assert parts[0]["type"] == "text" and parts[0]["text"].endswith("what is this?")
    assert parts[1] == {"type": "image_url",
                        "image_url": {"url": "data:image/png;base64," + base64.b64encode(image).decode()}}
    # the log holds the reference, never the bytes
    log = _log_bytes(home)
    assert base64.b64encode(image) not in log and image not in log
    import hashlib

    sha = hashlib.sha256(image).hexdigest()
    assert sha.encode() in log
    stored = home.root / "attachments" / sha[:2] / sha
    assert stored.read_bytes() == image and stored.stat().st_mode & 0o777 == 0o600

    app = _open(home, llm_server)  # replay from the log
    try:
        rebuilt = app.agent.messages_for("quick")
        answer = [r for r in app.store.log.records() if r.type == "message" and r.data["role"] == "assistant"][-1]
    finally:
        app.close()
    assert rebuilt[:-1] == llm_server.requests[-1]["messages"]
    assert request_hash("openai/gpt-4o", rebuilt[:-1], tools) == answer.data["request_hash"]
    # `memtray prompt at` rebuilds the very request too
    elog = EventLog.open(home.events, readonly=True)
    try:
        again = reconstruct(elog.records, [answer.seq], AttachmentStore(home.root).load)[answer.seq]
        blind = reconstruct(elog.records, [answer.seq])[answer.seq]
    finally:
        elog.close()
    assert again.match and again.messages == rebuilt[:-1]
    assert not blind.match  # without the store the image is missing: the check can fail


def test_pdf_and_text_files_are_sent_as_redacted_text(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _open(home, llm_server)
    try:
        files = [prepare(pdf_with_text("Invoice number 4471 due Friday"), "invoice.pdf"),
                 prepare(f"deploy token {SECRET}\n".encode(), "notes.txt")]
        app.run(app.agent.turn("quick", "summarise", stream=False, attachments=files))
    finally:
        app.close()
    content = _user(llm_server.requests[-1])["content"]
    assert isinstance(content, str)
    assert "[attached file: invoice.pdf]\nInvoice number 4471 due Friday" in content
    assert "[attached file: notes.txt]\ndeploy token [REDACTED:github-token]" in content
    assert SECRET not in content
    for p in (home.root / "attachments").rglob("*"):
        assert not p.is_file() or SECRET.encode() not in p.read_bytes()


def test_a_model_without_vision_gets_a_clear_error_and_nothing_is_logged(
    home: Home, llm_server: ScriptedLLMServer
) -> None:
    app = _open(home, llm_server, model="openai/gpt-3.5-turbo")
    try:
        before = app.store.state.last_seq
        with pytest.raises(NoVision) as err:
            app.run(app.agent.turn("quick", "look", stream=False, attachments=[prepare(png(), "shot.png")]))
        assert "openai/gpt-3.5-turbo cannot read images (shot.png)" in str(err.value)
        assert "model that reads images" in err.value.hint
        assert app.store.state.last_seq == before
        assert app.store.state.session("quick").count == 0
    finally:
        app.close()
    assert llm_server.requests == []
    assert not (home.root / "attachments").exists()


def test_a_binary_file_is_refused_with_a_clear_error() -> None:
    with pytest.raises(AttachmentError, match="neither text, a PDF nor an image"):
        prepare(b"\x00\xff\xfe\x01binary", "blob.bin")


def test_purge_removes_the_text_of_an_attachment(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _open(home, llm_server)
    try:
        app.run(app.agent.turn("quick", "keep this", stream=False,
                               attachments=[prepare(b"passport X12345678 expires 2031\n", "passport.txt")]))
        assert "attachments" in " ".join(find_traces(home, Matcher("X12345678")))
        purge(app, Matcher("X12345678"))
        assert find_traces(home, Matcher("X12345678")) == {}
        rebuilt = _user({"messages": app.agent.messages_for("quick")})["content"]
    finally:
        app.close()
    assert f"passport {MARKER} expires 2031" in rebuilt  # the reference follows the rewritten file
    assert [f for f in doctor.check_attachments(home) if not f.ok] == []


def test_doctor_reports_a_missing_or_damaged_attachment(home: Home, llm_server: ScriptedLLMServer) -> None:
    app = _open(home, llm_server)
    try:
        refs = [prepare(b"first file\n", "a.txt"), prepare(b"second file\n", "b.txt")]
        app.run(app.agent.turn("quick", "two files", stream=False, attachments=refs))
    finally:
        app.close()
    (ok,) = doctor.check_attachments(home)
    assert ok.ok and "2 referenced" in ok.title
    store = AttachmentStore(home.root)
    store.path(refs[0].ref.sha256).unlink()
    Path(store.path(refs[1].ref.sha256)).write_bytes(b"tampered\n")
    (bad,) = doctor.check_attachments(home)
    assert not bad.ok and bad.title == "2 attachment(s) missing or damaged"
    assert "a.txt" in bad.detail and "missing" in bad.detail
    assert "b.txt" in bad.detail and "damaged" in bad.detail
    assert any(f.code == "attachments" and not f.ok for f in doctor.check(home))


def test_cli_ask_attach_sends_a_pdf_and_refuses_an_image_for_a_text_model(
    home: Home, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    from memtray.core.base import config as cfgmod

    from tests.support import cli_here

    home.create()
    cfgmod.save(home, Config(model="openai/gpt-3.5-turbo", api_base=llm_server.base_url, llm_retries=0))
    pdf = tmp_path / "invoice.pdf"
    pdf.write_bytes(pdf_with_text("Invoice number 4471 due Friday"))
    shot = tmp_path / "shot.png"
    shot.write_bytes(png())
    ok = cli_here(home.root, "--no-daemon", "ask", "--attach", str(pdf), "when is it due?")
    assert ok.returncode == 0, ok.stderr
    assert "Invoice number 4471 due Friday" in _user(llm_server.requests[-1])["content"]
    sent = len(llm_server.requests)
    bad = cli_here(home.root, "--no-daemon", "ask", "--attach", str(shot), "what is this?")
    assert bad.returncode == 1
    assert "memtray: error: the model openai/gpt-3.5-turbo cannot read images (shot.png)" in bad.stderr
    assert "Traceback" not in bad.stderr and len(llm_server.requests) == sent
    missing = cli_here(home.root, "--no-daemon", "ask", "--attach", str(tmp_path / "nope.pdf"), "hi")
    assert missing.returncode == 1 and "memtray: error: cannot read" in missing.stderr
    assert b"what is this?" not in _log_bytes(home)
