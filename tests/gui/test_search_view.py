"""The main window's search field: Ctrl+K, results from the worker with where, who, when and
the matched words, a message opened in its conversation at that message (pages back),
a diary or memory result opened in the Memory page, nothing found, stale answers dropped."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from memtray.core.log.events import ImportItem, Message
from memtray.desktop.chatview import MessageView
from memtray.desktop.qt import QApplication, Qt
from memtray.desktop.search_view import marked

pytestmark = pytest.mark.gui


def _window(qtbot: Any, desktop: Any) -> Any:
    desktop.open("chat")
    win = desktop.window
    qtbot.waitUntil(lambda: win.attached and win.search_field.isEnabled(), timeout=10000)
    return win


def _search(qtbot: Any, win: Any, text: str) -> Any:
    win.search_field.setFocus()
    win.search_field.setText(text)
    page = win._search_page()
    qtbot.waitUntil(lambda: page.found is not None and page.found.query == text, timeout=10000)
    return page


def _filler(app: Any, session: str, n: int) -> None:
    app.store.append_many([(Message(role="user" if i % 2 == 0 else "assistant",
                                    content=f"small talk about the weather, number {i}"), session, None)
                           for i in range(n)])


def test_marked_escapes_and_bolds_the_matched_words() -> None:
    assert marked("a <b> & «lighthouse» …", "#ff0") == 'a &lt;b&gt; &amp; <b style="background:#ff0;">lighthouse</b> …'
    assert marked("cut «inside", "#ff0").endswith("inside</b>")


def test_search_field_finds_a_message_and_opens_it_where_it_was_said(qtbot: Any, desktop: Any) -> None:
    app = desktop.app
    session = "chatgpt:conv-7"
    app.store.append(Message(role="user", content="My grandfather was a lighthouse keeper in Brittany",
                             sent_at="2024-03-05T09:30:00.000Z"), session=session)
    target = app.store.state.last_seq
    app.store.append(Message(role="assistant", content="What a life! Which lighthouse?"), session=session)
    _filler(app, session, 70)  # the message is pages back when the conversation opens
    app.store.append(ImportItem(import_id="I", source="chatgpt", key="conv-7", kind="conversation", digest="d",
                                session=session, messages=72, title="Family stories"), session=session)
    _filler(app, "quick", 3)
    win = _window(qtbot, desktop)

    # the shortcut focuses the field from anywhere in the window
    win.chats.pane.input.setFocus()
    win.activateWindow()
    qtbot.keyClick(win.chats.pane.input, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(win.search_field.hasFocus, timeout=5000)

    seen: list[str] = []
    real = app.search.asearch

    async def spy(*a: Any, **kw: Any) -> Any:
        seen.append(threading.current_thread().name)
        return await real(*a, **kw)

    app.search.asearch = spy
    page = _search(qtbot, win, "who kept the lighthouse in Brittany?")
    assert win.search_shown and win.nav.currentRow() == -1
    assert seen and threading.main_thread().name not in seen  # searched on the worker
    first = page.item_widget(0)
    assert first is not None and first.hit.seq == target
    assert first.place.text() == "Family stories"  # the conversation's title, not its key
    assert "You" in first.when.text() and "2024" in first.when.text()
    assert "<b " in first.snippet.text() and "lighthouse</b>" in first.snippet.text().lower()
    assert "result" in page.status.text()

    # Enter on the result opens the conversation, loads back to the message and marks it
    qtbot.keyClick(win.search_field, Qt.Key.Key_Down)
    assert page.results.hasFocus() and page.results.currentRow() == 0
    qtbot.keyClick(page.results, Qt.Key.Key_Return)
    pane = win.chats.pane
    qtbot.waitUntil(lambda: pane.session == session and any(
        v.seq == target and v.marked for v in pane.view.messages()), timeout=15000)
    assert win.nav.currentRow() == 0 and not win.search_shown
    view = next(v for v in pane.view.messages() if v.seq == target)
    assert isinstance(view, MessageView) and "lighthouse keeper" in view.text
    # and it is scrolled into view, not left at the bottom of the conversation
    bar = pane.view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() < bar.maximum(), timeout=5000)
    top = view.mapTo(pane.view.widget(), view.rect().topLeft()).y()
    assert bar.value() <= top <= bar.value() + pane.view.viewport().height()


def test_nothing_found_says_so_and_esc_goes_back(qtbot: Any, desktop: Any) -> None:
    _filler(desktop.app, "quick", 4)
    win = _window(qtbot, desktop)
    desktop.open("reminders")
    qtbot.waitUntil(lambda: win.nav.currentRow() == 2, timeout=5000)
    page = _search(qtbot, win, "zebra quantum")
    assert page.results.count() == 0 and "No matches" in page.status.text()
    qtbot.keyClick(win.search_field, Qt.Key.Key_Escape)
    assert win.search_field.text() == "" and not win.search_shown and win.nav.currentRow() == 2


def test_a_diary_result_opens_the_memory_page(qtbot: Any, desktop: Any) -> None:
    app = desktop.app
    mem = app.memory
    app.worker.call(lambda: mem.remember("The allotment plot number is 47B", "Garden", model="openai/test-model",
                                         source_seq=None))
    win = _window(qtbot, desktop)
    page = _search(qtbot, win, "allotment plot")
    rows = [page.item_widget(i) for i in range(page.results.count())]
    memory = next(r for r in rows if r is not None and r.hit.kind in ("memory", "history"))
    assert memory.place.text() in ("Memory", "Diary")
    opened: list[str] = []
    win.memory.open_target = opened.append  # type: ignore[method-assign]
    page.results.itemClicked.emit(page.results.item(rows.index(memory)))
    assert opened == [f"memory:seq:{memory.hit.seq}"] and win.nav.currentRow() == 1


def test_an_answer_to_an_older_query_is_dropped(qtbot: Any, desktop: Any) -> None:
    app = desktop.app
    app.store.append(Message(role="user", content="the lighthouse at Ouessant"), session="quick")
    app.store.append(Message(role="user", content="a lightweight tent for the trip"), session="quick")
    win = _window(qtbot, desktop)
    real = app.search.asearch

    async def slow_first(query: str, **kw: Any) -> Any:
        if query == "lightweight":
            await asyncio.sleep(0.5)  # the older query answers after the newer was typed
        return await real(query, **kw)

    app.search.asearch = slow_first
    win.search_field.setText("lightweight")
    page = win._search_page()
    shown: list[str] = []
    page.shown.connect(lambda: shown.append(page.found.query if page.found else "(failed)"))
    page.run()  # at once, not after the pause in typing
    win.search_field.setText("lighthouse Ouessant")
    qtbot.waitUntil(lambda: bool(shown), timeout=10000)
    QApplication.processEvents()
    assert shown == ["lighthouse Ouessant"]  # the slow answer to "lightweight" was never shown
    assert "Ouessant" in page.item_widget(0).hit.snippet


def test_results_follow_the_width_of_the_window(qtbot: Any, desktop: Any) -> None:
    desktop.app.store.append(Message(role="user", content="the lighthouse at Ouessant " + "and the sea " * 40),
                             session="quick")
    win = _window(qtbot, desktop)
    win.resize(1200, 700)
    page = _search(qtbot, win, "lighthouse")
    win.resize(800, 700)
    qtbot.waitUntil(lambda: abs(page.item_widget(0).width() - (page.results.viewport().width() - 4)) <= 1,
                    timeout=5000)
    item = page.results.item(0)
    assert item.sizeHint().height() == page.item_widget(0).sizeHint().height()  # taller: the excerpt wraps more
