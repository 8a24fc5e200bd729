"""Attachments in the quick chat: a pasted screenshot reaches the model as an image part, a
pasted PDF as its text; chips can be removed; a model without vision is told before sending."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import config
from memtray.desktop.qt import QApplication, QImage, Qt, QUrl
from PySide6.QtCore import QMimeData

from tests.fixtures.llm_server import reply
from tests.fixtures.tiny_files import pdf_with_text

pytestmark = pytest.mark.gui


@pytest.fixture
def vision_home(configured_home: Any) -> Any:
    config.set_value(configured_home, "model", "openai/gpt-4o")  # litellm: supports vision
    return configured_home


@pytest.fixture
def vision_desktop(qtbot: Any, vision_home: Any, runtime_dir: Path) -> Any:
    from tests.gui.conftest import close_desktop, make_desktop

    d = make_desktop(qtbot, vision_home)
    yield d
    close_desktop(d)


def _paste(qtbot: Any, pane: Any) -> None:
    pane.input.setFocus()
    qtbot.keyClick(pane.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)


def _user(request: Any) -> dict[str, Any]:
    return [m for m in request["messages"] if m["role"] == "user"][-1]


def test_pasted_screenshot_reaches_the_model_as_an_image_part(qtbot: Any, vision_desktop: Any, llm_server: Any) -> None:
    llm_server.script(reply("A blue rectangle."))
    vision_desktop.show_popup()
    pane = vision_desktop.popup.pane
    shot = QImage(8, 5, QImage.Format.Format_RGB32)
    shot.fill(0x2040C0)
    QApplication.clipboard().setImage(shot)
    _paste(qtbot, pane)
    assert [i.ref.name for i in pane.attach.items] == ["screenshot-1.png"]
    assert pane.attach.isVisibleTo(pane) and pane.input.toPlainText() == ""
    qtbot.keyClicks(pane.input, "what is in this screenshot?")
    with qtbot.waitSignal(pane.turn_done, timeout=90000) as sig:
        qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    assert sig.args[0] == "finished"
    assert pane.attach.items == [] and not pane.attach.isVisibleTo(pane)
    assert pane.view.messages()[-2].text.endswith("what is in this screenshot?\n\nattached: screenshot-1.png")
    parts = _user(llm_server.chat_requests[-1])["content"]
    assert parts[0]["type"] == "text" and parts[0]["text"].endswith("what is in this screenshot?")
    assert parts[1]["type"] == "image_url"
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    got = QImage.fromData(base64.b64decode(url.split(",", 1)[1]))
    assert (got.width(), got.height()) == (8, 5) and got.pixelColor(3, 2).blue() == 0xC0


def test_pasted_pdf_reaches_the_model_as_text_and_a_chip_can_be_removed(
    qtbot: Any, vision_desktop: Any, llm_server: Any, tmp_path: Path
) -> None:
    llm_server.script(reply("It is due Friday."))
    vision_desktop.show_popup()
    pane = vision_desktop.popup.pane
    pdf = tmp_path / "invoice.pdf"
    pdf.write_bytes(pdf_with_text("Invoice number 4471 due Friday"))
    other = tmp_path / "other.txt"
    other.write_text("not this one\n")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(pdf)), QUrl.fromLocalFile(str(other))])
    QApplication.clipboard().setMimeData(mime)
    _paste(qtbot, pane)
    assert [i.ref.name for i in pane.attach.items] == ["invoice.pdf", "other.txt"]
    remove = [b for b in pane.attach.findChildren(type(pane.clip_btn)) if b.toolTip() == "Remove other.txt"]
    qtbot.mouseClick(remove[0], Qt.MouseButton.LeftButton)
    assert [i.ref.name for i in pane.attach.items] == ["invoice.pdf"]
    qtbot.keyClicks(pane.input, "when is it due?")
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    content = _user(llm_server.chat_requests[-1])["content"]
    assert "[attached file: invoice.pdf]\nInvoice number 4471 due Friday" in content
    assert "not this one" not in content


def test_a_model_without_vision_is_told_before_anything_is_sent(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    desktop.show_popup()
    pane = desktop.popup.pane
    config.set_value(desktop.app.home, "model", "openai/gpt-3.5-turbo")
    desktop.app.reconfigure(config.load(desktop.app.home))
    shot = QImage(4, 4, QImage.Format.Format_RGB32)
    shot.fill(0xFF0000)
    QApplication.clipboard().setImage(shot)
    _paste(qtbot, pane)
    qtbot.keyClicks(pane.input, "look")
    before = desktop.app.store.state.last_seq
    qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    assert "openai/gpt-3.5-turbo cannot read images (screenshot-1.png)" in pane.attach.error.text()
    assert pane.attach.error.isVisibleTo(pane)
    assert pane.input.toPlainText() == "look" and len(pane.attach.items) == 1  # nothing lost
    assert not pane.busy and desktop.app.store.state.last_seq == before
    assert llm_server.chat_requests == []


def test_a_file_dropped_on_the_input_becomes_a_chip(qtbot: Any, desktop: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QDragEnterEvent, QDropEvent

    def drop_on(widget: Any, mime: QMimeData) -> QDropEvent:
        args = (QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                Qt.KeyboardModifier.NoModifier)
        enter = QDragEnterEvent(*args)
        QApplication.sendEvent(widget, enter)  # Qt delivers a drop only after an accepted enter
        assert enter.isAccepted()
        drop = QDropEvent(QPointF(5, 5), *args[1:])
        QApplication.sendEvent(widget, drop)
        return drop

    desktop.show_popup()
    pane = desktop.popup.pane
    note = tmp_path / "notes.md"
    note.write_text("# Trip\n- leave at 9\n")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(note))])
    drop = drop_on(pane.input.viewport(), mime)
    assert drop.isAccepted()
    assert [(i.ref.name, i.ref.kind) for i in pane.attach.items] == [("notes.md", "text")]
    assert pane.input.toPlainText() == ""  # the file's path is not typed into the input
    bad = tmp_path / "blob.bin"
    bad.write_bytes(b"\x00\xff\xfe\x01")
    mime2 = QMimeData()
    mime2.setUrls([QUrl.fromLocalFile(str(bad))])
    drop_on(pane.input.viewport(), mime2)
    assert "blob.bin is neither text, a PDF nor an image" in pane.attach.error.text()
    assert [i.ref.name for i in pane.attach.items] == ["notes.md"]
