"""The desktop follows the log: open views update from store changes, without a click.

Every change reaches the views through the bridge (a signal emitted on the worker,
queued to the GUI thread); nothing here calls refresh() or switches a tab.
"""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.log.events import Message

from tests.fixtures.llm_server import reply, tool_call
from tests.fixtures.receipting import receipted

pytestmark = pytest.mark.gui

REV1 = "# About the user\n\n- Likes green tea\n- Lives in Lyon\n"


def _texts(pane: Any) -> list[str]:
    return [m.text for m in pane.view.messages()]


def _main_chat(qtbot: Any, desktop: Any) -> Any:
    window = desktop.main_window()
    window.present()
    pane = window.chats.pane
    assert pane.session == "quick"
    qtbot.waitUntil(lambda: pane._shown is not None, timeout=10000)  # its first snapshot arrived
    return pane


def test_a_message_sent_from_the_popup_appears_in_the_open_main_window(qtbot: Any, desktop: Any,
                                                                        llm_server: Any) -> None:
    main = _main_chat(qtbot, desktop)
    assert _texts(main) == []
    popup = desktop.popup.pane
    desktop.show_popup()
    llm_server.script(reply("Green tea it is."))
    with qtbot.waitSignal(popup.turn_done, timeout=90000):
        popup.send("I like green tea")
    qtbot.waitUntil(lambda: _texts(main) == ["I like green tea", "Green tea it is."], timeout=10000)
    # the popup shows the same conversation once: its own views took the logged messages over
    qtbot.waitUntil(lambda: popup._live == [], timeout=10000)
    assert _texts(popup) == ["I like green tea", "Green tea it is."]

    # a turn from another front end (a forwarded `memtray ask --session quick`) reaches both
    app = desktop.app
    llm_server.script(reply("Noted: Lyon."))
    app.run(app.agent.turn("quick", "I live in Lyon", stream=False))
    want = ["I like green tea", "Green tea it is.", "I live in Lyon", "Noted: Lyon."]
    qtbot.waitUntil(lambda: _texts(main) == want and _texts(popup) == want, timeout=10000)

    # /new from the terminal starts both views afresh
    llm_server.script(receipted(tool_call("save_memory", {
        "history_entry": "Tea, Lyon.", "memory_update": "# About the user\n\n- Likes green tea\n- Lives in Lyon\n",
        "removed_facts": [],
    })))
    from memtray.core.agent.reset import new_session

    app.run(new_session(app.agent, app.consolidation, "quick"))
    qtbot.waitUntil(lambda: _texts(main) == [] and _texts(popup) == [], timeout=10000)


def test_a_session_started_elsewhere_appears_in_the_conversation_list(qtbot: Any, desktop: Any) -> None:
    window = desktop.main_window()
    window.present()
    sessions = window.chats.sessions

    def keys() -> list[str]:
        from memtray.desktop.qt import Qt

        return [str(sessions.item(i).data(Qt.ItemDataRole.UserRole)) for i in range(sessions.count())]

    qtbot.waitUntil(lambda: keys() == ["quick"], timeout=10000)
    desktop.app.write(lambda: desktop.app.store.append(
        Message(role="user", content="from the terminal"), session="cli"))
    qtbot.waitUntil(lambda: keys() == ["quick", "cli"], timeout=10000)  # the quick chat stays on top


def test_a_consolidation_updates_the_open_memory_browser(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    from memtray.core.base import config

    app = desktop.app
    app.write(lambda: app.memory.write(REV1, reason="agent", source="model"))
    config.set_value(app.home, "drop_policy", "review")
    app.refresh_settings()
    desktop.open("memory")
    browser = desktop.window.memory
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() == 1 and bool(browser.rows), timeout=10000)
    assert browser.review_btn.text() == "Review"
    qtbot.waitUntil(lambda: len(browser.timeline.points) == 1, timeout=10000)

    llm_server.script(reply("sure"))
    app.run(app.agent.turn("quick", "I moved to Paris", stream=False))
    # the model drops "Lives in Lyon" without saying so: held for review
    llm_server.script(receipted(tool_call("save_memory", {
        "history_entry": "Moved.", "memory_update": "# About the user\n\n- Likes green tea\n- Lives in Paris\n",
        "removed_facts": [],
    })))
    app.run(app.consolidation.archive("quick"))

    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() == 2, timeout=10000)
    qtbot.waitUntil(lambda: browser.review_btn.text() == "Review (1)", timeout=10000)
    assert browser.list.topLevelItem(0).text(1) == "Consolidation"
    assert [r.reason for r in browser.revisions] == ["consolidation", "agent"]
    qtbot.waitUntil(lambda: len(browser.timeline.points) == 2, timeout=10000)
    assert any("Lives in Lyon" in str(c.item["text"]) for c in browser.review_tab.cards)

    # accepting the review from the terminal (`memtray memory review accept`) empties the count here
    item = app.memory.pending_review()[0]
    app.write(lambda: app.memory.accept_review(item["id"]))
    qtbot.waitUntil(lambda: browser.review_btn.text() == "Review", timeout=10000)
