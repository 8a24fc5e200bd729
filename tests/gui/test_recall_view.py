"""Recall in the desktop: the Settings section saves it, and a reply that was given past
messages shows "recalled: N messages", whose click shows them (read from the log)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import config
from memtray.core.log.events import Message
from memtray.desktop.qt import Qt
from memtray.desktop.recall_view import RecalledLink

from tests.fixtures.llm_server import reply
from tests.gui.conftest import close_desktop, make_desktop

pytestmark = pytest.mark.gui


@pytest.fixture
def recall_desktop(qtbot: Any, configured_home: Any, runtime_dir: Path) -> Iterator[Any]:
    config.set_value(configured_home, "embedding_model", "openai/test-embedding")
    config.set_value(configured_home, "recall", True)
    d = make_desktop(qtbot, configured_home)
    yield d
    close_desktop(d)


def _append(app: Any, content: str, role: str, session: str) -> int:
    return int(app.write(lambda: app.store.append(Message(role=role, content=content),
                                                  session=session)).seq)


def _link(qtbot: Any, pane: Any) -> RecalledLink:
    def found() -> RecalledLink | None:
        msgs = pane.view.messages()
        return msgs[-1].findChild(RecalledLink) if msgs and msgs[-1].role == "assistant" else None

    qtbot.waitUntil(lambda: found() is not None, timeout=20000)
    link = found()
    assert link is not None
    return link


def test_a_reply_that_recalled_messages_shows_them_on_click(qtbot: Any, recall_desktop: Any,
                                                            llm_server: Any) -> None:
    app = recall_desktop.app
    old = _append(app, "Ada's maths teacher, Mr Okafor, wants to meet us on Thursday.", "user", "desk")
    _append(app, "Noted.", "assistant", "desk")
    _append(app, "The printer is broken again.", "user", "desk")
    app.run(app.search.backfill())

    pane = recall_desktop.popup.pane
    recall_desktop.show_popup()
    llm_server.script(reply("Your daughter's teacher is Mr Okafor."))
    with qtbot.waitSignal(pane.turn_done, timeout=90000) as sig:
        pane.send("What is my daughter's teacher called?")
    assert sig.args[0] == "finished"
    user = next(m for m in app.store.state.session("quick").messages if m["role"] == "user")
    seqs = user["recalled"]
    assert old in seqs

    link = _link(qtbot, pane)  # on the streamed reply, once the log's message took it over
    n = len(seqs)
    assert link.button.text() == f"recalled: {n} message{'s' if n != 1 else ''}"
    assert not link.panel.isVisibleTo(link)
    qtbot.mouseClick(link.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: any("Mr Okafor, wants to meet us" in t for t in link.texts()), timeout=10000)
    assert link.panel.isVisibleTo(link)
    shown = link.texts()
    assert any("session desk · you" in t for t in shown)  # date, session and who said it
    assert not any("echo" in t for t in shown)
    qtbot.mouseClick(link.button, Qt.MouseButton.LeftButton)
    assert not link.panel.isVisibleTo(link)  # a second click hides them

    before = pane.view.messages()[-1]
    pane.reload()  # rendered afresh from the log: the link is there too
    qtbot.waitUntil(lambda: bool(pane.view.messages()) and pane.view.messages()[-1] is not before, timeout=20000)
    assert pane.view.messages()[-1].findChild(RecalledLink) is not None
    assert pane.view.messages()[-2].findChild(RecalledLink) is None  # the user's message has none


def test_a_reply_without_recall_has_no_link(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    app = desktop.app
    _append(app, "Ada's maths teacher, Mr Okafor, wants to meet us.", "user", "desk")
    pane = desktop.popup.pane
    desktop.show_popup()
    llm_server.script(reply("No idea."))
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        pane.send("Who is Okafor?")  # recall is off by default
    qtbot.waitUntil(lambda: len(app.store.state.session("quick").messages) >= 2, timeout=10000)
    pane.reload()
    qtbot.waitUntil(lambda: len(pane.view.messages()) == 2, timeout=20000)
    assert all(m.findChild(RecalledLink) is None for m in pane.view.messages())


def test_settings_recall_section_saves_recall_and_limit(qtbot: Any, desktop: Any) -> None:
    desktop.open("settings")
    page = desktop.window.settings
    section = page.recall
    assert not section.enabled.isChecked() and section.limit.value() == 3  # off by default
    assert "by keywords only" in section.note.text()  # said plainly: none set, offline model off
    section.model.setText("none")
    assert "switched off" in section.note.text() and "by keywords only" in section.note.text()
    section.model.setText("local")
    from memtray.core.llm import localmodel

    if localmodel.missing(check_disabled=False) is None:
        assert "Offline embeddings" in section.note.text()
    else:
        assert "offline embedding model cannot be used" in section.note.text()
    section.enabled.setChecked(True)
    section.limit.setValue(5)
    section.model.setText("ollama/nomic-embed-text")
    assert "by keywords only" not in section.note.text()
    with qtbot.waitSignal(page.saved, timeout=10000):
        qtbot.mouseClick(page.save_btn, Qt.MouseButton.LeftButton)
    on_disk = config.load(desktop.app.home)
    assert on_disk.recall is True and on_disk.recall_limit == 5
    assert on_disk.embedding_model == "ollama/nomic-embed-text" and on_disk.embedding_api_base == ""
    assert desktop.app.agent.config.recall is True and desktop.app.agent.config.recall_limit == 5

    section.enabled.setChecked(False)
    section.model.setText("")
    with qtbot.waitSignal(page.saved, timeout=10000):
        page.save()
    on_disk = config.load(desktop.app.home)
    assert on_disk.recall is False and on_disk.embedding_model == "" and on_disk.recall_limit == 5
    page.load()
    assert not section.enabled.isChecked() and section.limit.value() == 5
