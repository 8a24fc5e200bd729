"""Conversations a person can find: titles (the first line, an imported title, a name set
here), dates and previews in the Chats list, rename; the open conversation shows its
messages after a consolidation; a failed turn keeps its error mark and Retry."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.log.events import ImportItem, Message
from memtray.desktop.chatview import ErrorView, LoggedFailure, MessageView
from memtray.desktop.qt import QPushButton, Qt

from tests.fixtures.llm_server import error, reply, tool_call
from tests.fixtures.receipting import receipted

pytestmark = pytest.mark.gui


def _say(app: Any, session: str, *texts: str) -> None:
    for i, text in enumerate(texts):
        app.store.append(Message(role="user" if i % 2 == 0 else "assistant", content=text), session=session)


def _chats(qtbot: Any, desktop: Any) -> Any:
    desktop.open("chat")
    chats = desktop.window.chats
    qtbot.waitUntil(lambda: chats.sessions.count() > 0, timeout=10000)
    return chats


def _views(pane: Any) -> list[MessageView]:
    """The message views in the order they are shown."""
    col = pane.view.col
    found = [col.itemAt(i).widget() for i in range(col.count())]
    return [w for w in found if isinstance(w, MessageView)]


def _texts(pane: Any) -> list[str]:
    return [w.text for w in _views(pane)]


def test_titles_dates_and_previews(qtbot: Any, desktop: Any) -> None:
    app = desktop.app
    _say(app, "quick", "what's the weather like in Lyon?", "Mild, 14 degrees.")
    _say(app, "chat-20261201-101500", "Plan the trip to Lisbon\nwith the kids in May", "Flights first: …")
    _say(app, "chatgpt:conv-1", "hola", "¡Hola!")
    app.store.append(ImportItem(import_id="I", source="chatgpt", key="conv-1", kind="conversation", digest="d",
                                session="chatgpt:conv-1", messages=2, title="Spanish lessons"),
                     session="chatgpt:conv-1")
    chats = _chats(qtbot, desktop)
    qtbot.waitUntil(lambda: chats.item_for("chatgpt:conv-1") is not None, timeout=10000)
    quick, trip, imported = (chats.item_for(k) for k in ("quick", "chat-20261201-101500", "chatgpt:conv-1"))
    assert quick.title.toolTip() == "Quick chat" and quick.preview.toolTip() == "Mild, 14 degrees."
    assert trip.title.toolTip() == "Plan the trip to Lisbon" and trip.preview.toolTip() == "Flights first: …"
    assert imported.title.toolTip() == "Spanish lessons"
    assert all(":" in w.date.text() for w in (quick, trip, imported))  # today: a time of day
    # the newest first: the import came last
    first = chats.sessions.item(0).data(Qt.ItemDataRole.UserRole)
    assert first == "chatgpt:conv-1"


def test_rename_a_conversation(qtbot: Any, desktop: Any) -> None:
    _say(desktop.app, "chat-20261201-101500", "Plan the trip to Lisbon", "Flights first.")
    chats = _chats(qtbot, desktop)
    qtbot.waitUntil(lambda: chats.item_for("chat-20261201-101500") is not None, timeout=10000)
    chats.rename("chat-20261201-101500")
    dlg = chats.dialog
    assert dlg.name.text() == "Plan the trip to Lisbon"
    dlg.name.setText("   ")
    qtbot.mouseClick(dlg.ok_btn, Qt.MouseButton.LeftButton)
    assert dlg.isVisible() and dlg.message.isVisibleTo(dlg)
    dlg.name.setText("Lisbon in May")
    qtbot.mouseClick(dlg.ok_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: chats.item_for("chat-20261201-101500").title.toolTip() == "Lisbon in May",
                    timeout=10000)
    assert desktop.app.store.state.sessions["chat-20261201-101500"].title == "Lisbon in May"
    _say(desktop.app, "chat-20261201-101500", "and hotels?")  # a new message keeps the name
    qtbot.waitUntil(lambda: chats.item_for("chat-20261201-101500").preview.toolTip() == "and hotels?",
                    timeout=10000)
    assert chats.item_for("chat-20261201-101500").title.toolTip() == "Lisbon in May"


def test_the_open_conversation_shows_its_messages_after_a_consolidation(
    qtbot: Any, desktop: Any, llm_server: Any
) -> None:
    app = desktop.app
    _say(app, "chat-a", "I adopted a cat called Tom", "Congratulations on Tom!", "He likes tuna", "Noted.")
    llm_server.script(receipted(tool_call("save_memory", {"history_entry": "Tom the cat.", "memory_update":
                                                "# About the user\n\n- Has a cat called Tom\n", "removed_facts": []})))
    app.run(app.consolidation.consolidate("chat-a", archive_all=True, trigger="manual"))
    assert app.store.state.sessions["chat-a"].messages == []  # all in memory and the log now
    chats = _chats(qtbot, desktop)
    chats.refresh(select="chat-a")
    qtbot.waitUntil(lambda: "He likes tuna" in _texts(chats.pane), timeout=10000)
    assert _texts(chats.pane) == ["I adopted a cat called Tom", "Congratulations on Tom!", "He likes tuna", "Noted."]


def test_a_failed_turn_keeps_its_mark_and_retry(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    chats = _chats(qtbot, desktop)
    pane = chats.pane
    chats.refresh(select="chat-b")
    llm_server.script(error(401))
    with qtbot.waitSignal(pane.turn_done, timeout=30000):
        pane.send("hello there")
    assert pane._error is not None
    # another conversation and back: the card is built again from the log
    chats.refresh(select="quick")
    qtbot.waitUntil(lambda: pane.session == "quick" and pane._error is None, timeout=10000)
    chats.refresh(select="chat-b")
    qtbot.waitUntil(lambda: pane._error is not None and isinstance(pane._error.exc, LoggedFailure), timeout=10000)
    card = pane._error
    assert "401" in card.message.text()
    assert {"Open settings", "Retry"} <= {b.text() for b in card.findChildren(QPushButton)}
    user = next(w for w in _views(pane) if w.text == "hello there")
    assert user.tag.text() == "not answered"
    qtbot.waitUntil(lambda: chats.item_for("chat-b") is not None and "Not answered" in chats.item_for(
        "chat-b").preview.text(), timeout=10000)
    llm_server.script(reply("Hi!"))
    with qtbot.waitSignal(pane.turn_done, timeout=30000) as sig:
        card.retry.emit()
    assert sig.args[0] == "finished"
    qtbot.waitUntil(lambda: pane._error is None and "Hi!" in _texts(pane), timeout=10000)
    assert isinstance(card, ErrorView)
