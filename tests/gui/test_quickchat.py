"""The quick chat: streaming replies, keys, stop, retry, errors inline, /new, clipboard, scroll-back."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.log.events import Message, SessionReset
from memtray.desktop.chatview import ErrorView, MessageView
from memtray.desktop.qt import QApplication, QLabel, Qt

from tests.fixtures.llm_server import hang, reply, reset_mid_stream, tool_call
from tests.fixtures.receipting import receipted

pytestmark = pytest.mark.gui


def _messages(pane: Any) -> list[MessageView]:
    return list(pane.view.messages())


def _errors(pane: Any) -> list[ErrorView]:
    return pane.findChildren(ErrorView)


def test_send_shows_streamed_markdown_reply(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    llm_server.script(reply("Here you go: **bold**\n\n```python\ndef f():\n    return 42\n```\nDone.", chunk_size=3))
    popup = desktop.popup
    desktop.show_popup()
    qtbot.waitUntil(popup.isVisible)
    pane = popup.pane
    assert popup.focusWidget() is pane.input  # the input is the focus of the popup when it opens
    qtbot.keyClicks(pane.input, "hello there")
    # the first turn of a process imports litellm (slow on a busy machine)
    with qtbot.waitSignal(pane.turn_done, timeout=90000) as sig:
        qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    assert sig.args[0] == "finished"
    msgs = pane.view.messages()
    assert [m.role for m in msgs][-2:] == ["user", "assistant"]
    assert msgs[-2].text == "hello there"
    last = msgs[-1]
    plain = last.body.toPlainText()
    assert "Here you go: bold" in plain and "**" not in plain  # rendered markdown
    assert "def f():" in plain and "Copy code" in plain
    assert last.codes == ["def f():\n    return 42"]
    # copy a code block, then the whole message
    last._anchor(__import__("PySide6.QtCore", fromlist=["QUrl"]).QUrl("memtray:copy-code/0"))
    assert QApplication.clipboard().text() == "def f():\n    return 42"
    last.copy()
    assert QApplication.clipboard().text().startswith("Here you go: **bold**")
    # the request went to the fixture server with the user's text
    assert "hello there" in llm_server.chat_requests[-1]["messages"][-1]["content"]
    assert pane.input.toPlainText() == ""


def test_tokens_are_coalesced_while_streaming(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    llm_server.script(reply("one two three four five six seven eight nine ten", chunk_size=2, chunk_delay=0.03))
    pane = desktop.popup.pane
    desktop.show_popup()
    flushes: list[int] = []
    pane.send("count")
    view = pane._streaming
    assert view is not None and view.streaming
    orig = view.append

    def spy(delta: str) -> None:
        flushes.append(len(delta))
        orig(delta)

    view.append = spy  # type: ignore[method-assign]
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        pass
    # 25 two-character deltas arrive in fewer, larger timer flushes
    assert flushes and max(flushes) > 2 and len(flushes) < 25
    assert view.text == "one two three four five six seven eight nine ten"


def test_shift_enter_is_a_newline_and_esc_hides(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    popup = desktop.popup
    desktop.show_popup()
    qtbot.waitUntil(popup.isVisible)
    pane = popup.pane
    qtbot.keyClicks(pane.input, "line one")
    qtbot.keyClick(pane.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(pane.input, "line two")
    assert pane.input.toPlainText() == "line one\nline two"
    assert not pane.busy and llm_server.chat_requests == []
    qtbot.keyClick(pane.input, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not popup.isVisible())
    assert pane.input.toPlainText() == "line one\nline two"  # kept for next time


def test_stop_mid_stream_then_retry(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    llm_server.script(hang("partial answer "), reply("the full answer"))
    pane = desktop.popup.pane
    desktop.show_popup()
    pane.send("tell me")
    # the whole partial text, not its first chunk: Stop keeps what was shown when it was clicked
    qtbot.waitUntil(lambda: pane._streaming is not None and "partial answer" in pane._streaming.text,
                    timeout=90000)
    assert pane.send_btn.text() == "Stop"
    with qtbot.waitSignal(pane.turn_done, timeout=90000) as sig:
        qtbot.mouseClick(pane.send_btn, Qt.MouseButton.LeftButton)
    assert sig.args[0] == "cancelled"
    stopped = pane.view.messages()[-1]
    assert stopped.tag.text() == "stopped" and stopped.text.startswith("partial answer")
    assert pane.retry_btn.isVisibleTo(pane) and pane.send_btn.text() == "Send"
    with qtbot.waitSignal(pane.turn_done, timeout=90000) as sig:
        qtbot.mouseClick(pane.retry_btn, Qt.MouseButton.LeftButton)
    assert sig.args == ["finished", "the full answer"]
    assert pane.view.messages()[-1].text == "the full answer"


def test_esc_mid_stream_hides_and_the_reply_still_arrives(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    llm_server.script(reply("slow but sure", chunk_size=2, chunk_delay=0.05))
    popup = desktop.popup
    desktop.show_popup()
    popup.pane.send("hi")
    qtbot.keyClick(popup.pane.input, Qt.Key.Key_Escape)
    assert not popup.isVisible()
    with qtbot.waitSignal(popup.pane.turn_done, timeout=90000) as sig:
        pass
    assert sig.args == ["finished", "slow but sure"]
    desktop.toggle_popup()
    assert popup.isVisible() and popup.pane.view.messages()[-1].text == "slow but sure"


def test_provider_failing_mid_stream_shows_error_with_hint_and_retry(
    qtbot: Any, desktop: Any, llm_server: Any
) -> None:
    llm_server.script(reset_mid_stream("half of it "), reply("recovered"))
    pane = desktop.popup.pane
    desktop.show_popup()
    with qtbot.waitSignal(pane.turn_done, timeout=90000) as sig:
        pane.send("go")
    assert sig.args[0] == "failed"
    errs = _errors(pane)
    assert len(errs) == 1
    assert errs[0].message.text()
    assert errs[0].hint.text()  # what to do
    interrupted = pane.view.messages()[-1]
    assert interrupted.tag.text() == "interrupted" and interrupted.text.startswith("half of it")
    with qtbot.waitSignal(pane.turn_done, timeout=90000) as sig:
        errs[0].retry.emit()
    assert sig.args == ["finished", "recovered"]
    qtbot.waitUntil(lambda: not _errors(pane))


def test_auth_failure_offers_settings(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    from tests.fixtures.llm_server import error

    llm_server.script(error(401))
    pane = desktop.popup.pane
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        pane.send("hi")
    err = _errors(pane)[0]
    assert "key" in err.hint.text().lower()
    with qtbot.waitSignal(desktop.nav.open) as sig:
        err.settings.emit()
    assert sig.args[0] == "settings"
    assert desktop.window.stack.currentWidget() is desktop.window.settings


def test_new_archives_through_consolidation_then_resets(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    pane = desktop.popup.pane
    llm_server.script(reply("noted"))
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        pane.send("I like green tea")
    llm_server.script(receipted(tool_call("save_memory", {
        "history_entry": "Talked about tea.", "memory_update": "# About the user\n\n- Likes green tea\n",
        "removed_facts": [],
    })))
    qtbot.keyClicks(pane.input, "/new")
    qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: pane.status.text() == "New conversation.", timeout=20000)
    state = desktop.app.store.state
    assert "Likes green tea" in state.memory
    assert state.sessions["quick"].messages == []
    # the reset reaches the view from the log: the conversation starts afresh under a divider
    qtbot.waitUntil(lambda: pane.view.messages() == [], timeout=10000)
    assert any(isinstance(w, QLabel) and "new conversation" in w.text()
               for w in pane.view.widget().findChildren(QLabel))


def test_new_failure_keeps_the_session(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    pane = desktop.popup.pane
    llm_server.script(reply("noted"))
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        pane.send("remember this")
    llm_server.script(reply("I refuse to call tools"))
    pane.new_session()
    qtbot.waitUntil(lambda: bool(_errors(pane)), timeout=20000)
    assert len(desktop.app.store.state.sessions["quick"].messages) == 2
    assert "consolidation failed" in _errors(pane)[0].message.text()


def test_clipboard_as_context(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    QApplication.clipboard().setText("def broken(): pass")
    pane = desktop.popup.pane
    pane.clip_btn.setChecked(True)
    assert "def broken" in pane.clip_preview.text()
    llm_server.script(reply("fixed"))
    qtbot.keyClicks(pane.input, "what is wrong?")
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    sent = llm_server.chat_requests[-1]["messages"][-1]["content"]
    assert "def broken(): pass" in sent and sent.rstrip().endswith("what is wrong?")
    assert not pane.clip_btn.isChecked()  # one message only


def test_scrollback_reads_older_messages_from_the_log(qtbot: Any, configured_home: Any, runtime_dir: Any) -> None:
    from memtray.core.app import App

    from tests.gui.conftest import close_desktop, make_desktop

    with App.open(configured_home) as app:
        for i in range(3):
            app.store.append(Message(role="user", content=f"old question {i}"), session="quick")
            app.store.append(Message(role="assistant", content=f"old answer {i}"), session="quick")
        app.store.append(SessionReset(reason="user"), session="quick")
        app.store.append(Message(role="user", content="new question"), session="quick")
    d = make_desktop(qtbot, configured_home)
    try:
        pane = d.popup.pane
        qtbot.waitUntil(lambda: [m.text for m in pane.view.messages()] == ["new question"], timeout=10000)
        pane.load_older()
        qtbot.waitUntil(lambda: len(pane.view.messages()) == 7, timeout=10000)
        texts = [m.text for m in pane.view.messages()]
        assert texts[0] == "old question 0" and texts[-1] == "new question"
        assert not pane.view.more.isVisible()
    finally:
        close_desktop(d)


def test_long_sessions_render_one_page_first(qtbot: Any, configured_home: Any, runtime_dir: Any) -> None:
    from memtray.core.app import App
    from memtray.desktop.chatpane import PAGE

    from tests.gui.conftest import close_desktop, make_desktop

    with App.open(configured_home) as app:
        for i in range(15):
            app.store.append(Message(role="user", content=f"q{i}"), session="quick")
            app.store.append(Message(role="assistant", content=f"a{i}"), session="quick")
    d = make_desktop(qtbot, configured_home)
    try:
        pane = d.popup.pane
        qtbot.waitUntil(lambda: len(pane.view.messages()) == PAGE, timeout=10000)
        assert pane.view.messages()[-1].text == "a14"
        assert pane.view.more.isVisibleTo(pane)
        pane.load_older()
        assert [m.text for m in pane.view.messages()][:2] == ["q0", "a0"]
        assert len(pane.view.messages()) == 30
    finally:
        close_desktop(d)


def test_show_earlier_only_when_there_is_something_earlier(
    qtbot: Any, configured_home: Any, runtime_dir: Any
) -> None:
    from memtray.core.app import App

    from tests.gui.conftest import close_desktop, make_desktop

    with App.open(configured_home) as app:
        # another session's messages come first in the log: they are not "earlier" here
        app.store.append(Message(role="user", content="elsewhere"), session="chat-1")
        app.store.append(Message(role="user", content="first here"), session="other")
        app.store.append(Message(role="user", content="old"), session="reset-one")
        app.store.append(SessionReset(reason="user"), session="reset-one")
        app.store.append(Message(role="user", content="after the reset"), session="reset-one")
    d = make_desktop(qtbot, configured_home)
    try:
        pane = d.popup.pane
        for session, texts, earlier in (("quick", [], False), ("other", ["first here"], False),
                                        ("reset-one", ["after the reset"], True)):
            pane.set_session(session)
            qtbot.waitUntil(lambda t=texts: [m.text for m in pane.view.messages()] == t, timeout=10000)
            assert pane.view.more.isVisibleTo(pane) is earlier, session
    finally:
        close_desktop(d)
