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
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
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
    with qtbot.waitSignal(pane.turn_done, timeout=90000) as sig:
        card.retry.emit()
    assert sig.args[0] == "finished"
    qtbot.waitUntil(lambda: pane._error is None and "Hi!" in _texts(pane), timeout=10000)
    assert isinstance(card, ErrorView)


def _keys(lst: Any) -> list[str]:
    return [lst.item(i).data(Qt.ItemDataRole.UserRole) for i in range(lst.count())]


def test_delete_undo_restore_and_pin(qtbot: Any, desktop: Any) -> None:
    app = desktop.app
    _say(app, "quick", "what's the weather like in Lyon?", "Mild.")
    _say(app, "chat-trip", "Plan the trip to Lisbon", "Flights first.")
    _say(app, "chat-monad", "What is a monad?", "A burrito.")
    chats = _chats(qtbot, desktop)
    qtbot.waitUntil(lambda: _keys(chats.sessions)[:3] == ["chat-monad", "chat-trip", "quick"], timeout=10000)
    # pin: on top, marked, and it stays there when another conversation moves
    chats.pin("chat-trip")
    qtbot.waitUntil(lambda: _keys(chats.sessions)[0] == "chat-trip", timeout=10000)
    assert chats.item_for("chat-trip").date.text().startswith("Pinned")
    _say(app, "quick", "and tomorrow?")
    qtbot.waitUntil(lambda: _keys(chats.sessions)[:2] == ["chat-trip", "quick"], timeout=10000)
    assert [a.text() for a in chats.menu_for("chat-trip").actions()] == ["Rename…", "Unpin", "Delete"]
    # delete the open conversation: it leaves the list, the pane moves on, Undo is offered
    chats.refresh(select="chat-monad")
    chats.delete("chat-monad")
    qtbot.waitUntil(lambda: "chat-monad" not in _keys(chats.sessions), timeout=10000)
    qtbot.waitUntil(lambda: chats.undo_bar.isVisibleTo(chats), timeout=10000)
    assert "What is a monad?" in chats.undo_text.text() and chats.pane.session != "chat-monad"
    assert chats.deleted_btn.isVisibleTo(chats) and chats.deleted_btn.text() == "Recently deleted (1)"
    assert app.store.state.sessions["chat-monad"].deleted is not None
    qtbot.mouseClick(chats.undo_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "chat-monad" in _keys(chats.sessions), timeout=10000)
    assert not chats.undo_bar.isVisibleTo(chats) and not chats.deleted_btn.isVisibleTo(chats)
    qtbot.waitUntil(lambda: chats.pane.session == "chat-monad", timeout=10000)
    qtbot.waitUntil(lambda: "A burrito." in _texts(chats.pane), timeout=10000)  # every message back
    # the Delete key deletes the current one; "Recently deleted" lists it; Restore brings it back
    chats.sessions.setFocus()
    chats.sessions.setCurrentRow(_keys(chats.sessions).index("quick"))
    qtbot.keyClick(chats.sessions, Qt.Key.Key_Delete)
    qtbot.waitUntil(lambda: "quick" not in _keys(chats.sessions), timeout=10000)
    chats.deleted_btn.click()
    assert chats.deleted.isVisibleTo(chats) and _keys(chats.deleted) == ["quick"]
    assert chats.deleted_item("quick").date.text().startswith("deleted")
    chats.deleted.setCurrentRow(0)
    qtbot.mouseClick(chats.restore_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "quick" in _keys(chats.sessions), timeout=10000)
    assert app.store.state.sessions["quick"].deleted is None and not chats.deleted_btn.isVisibleTo(chats)


def test_a_delete_from_the_terminal_shows_at_once(qtbot: Any, desktop: Any) -> None:
    from memtray.core.log import chats as chat_ops

    _say(desktop.app, "chat-x", "hello", "hi")
    chats = _chats(qtbot, desktop)
    qtbot.waitUntil(lambda: "chat-x" in _keys(chats.sessions), timeout=10000)
    desktop.app.worker.call(lambda: chat_ops.delete(desktop.app.store, "chat-x"))  # what `chats delete` runs
    qtbot.waitUntil(lambda: "chat-x" not in _keys(chats.sessions), timeout=10000)
    assert chats.deleted_btn.text() == "Recently deleted (1)"
    chats.delete("chat-x")  # a second delete (a stale menu): said in words, nothing changes
    qtbot.waitUntil(lambda: chats.status.isVisibleTo(chats), timeout=10000)
    assert "already deleted" in chats.status.text()


def test_the_open_conversation_has_its_own_model(qtbot: Any, configured_home: Any, llm_server: Any,
                                                 runtime_dir: Any) -> None:
    from tests.gui.conftest import close_desktop, make_desktop

    llm_server.models = ["test-model", "coder-1.5b"]  # before the window shows (it asks then)
    desktop = make_desktop(qtbot, configured_home)
    try:
        _own_model(qtbot, desktop)
    finally:
        close_desktop(desktop)


def _own_model(qtbot: Any, desktop: Any) -> None:
    app = desktop.app
    _say(app, "chat-a", "first", "one")
    _say(app, "chat-b", "second", "two")
    chats = _chats(qtbot, desktop)
    switch = chats.model_switch
    qtbot.waitUntil(lambda: "openai/coder-1.5b" in switch.models(), timeout=15000)
    chats.refresh(select="chat-a")
    index = switch.findData("openai/coder-1.5b")
    with qtbot.waitSignal(switch.chosen, timeout=10000):
        switch.setCurrentIndex(index)
        switch.activated.emit(index)
    assert app.store.state.sessions["chat-a"].model == "openai/coder-1.5b"
    chats.refresh(select="chat-b")  # another conversation: its own (the default)
    qtbot.waitUntil(lambda: switch.currentData() == "", timeout=10000)
    chats.refresh(select="chat-a")
    qtbot.waitUntil(lambda: switch.currentData() == "openai/coder-1.5b", timeout=10000)
    assert app.store.state.sessions["chat-b"].model is None
