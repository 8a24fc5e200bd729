"""One-click undo of a bad consolidation: from the revision in the browser, from the
"memory updated" notification (D-Bus action, or the banner's button); the confirmation
lists exactly what will change."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.base import config

from tests.fixtures.llm_server import reply, tool_call
from tests.fixtures.receipting import receipted
from tests.gui.test_notify import FakeNotificationServer, session_bus  # noqa: F401 (fixture)

pytestmark = pytest.mark.gui

BEFORE = "# About the user\n\n- Likes green tea\n- Lives in Lyon\n- Has a cat named Mo\n"


class Confirm:
    """Stands in for the Yes/Cancel box: records the text, answers as told."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.texts: list[str] = []

    def __call__(self, _parent: Any, _title: str, text: str) -> bool:
        self.texts.append(text)
        return self.answer


def _memory(desktop: Any) -> str:
    return (desktop.app.home.memory / "MEMORY.md").read_text(encoding="utf-8")


def _bad_consolidation(qtbot: Any, desktop: Any, llm_server: Any, *, policy: str = "keep") -> str:
    """A consolidation that removes the cat for no good reason and invents a fact; returns its id."""
    app = desktop.app
    app.worker.call(lambda: app.memory.write(BEFORE, reason="agent", source="model"))
    if policy != app.config.drop_policy:
        config.set_value(app.home, "drop_policy", policy)
        app.reconfigure(config.load(app.home))
    pane = desktop.popup.pane
    llm_server.script(reply("ok"))
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        # the model takes a joke for a fact (the receipt check cannot tell: the user wrote the words;
        # "My friend Ada owns a yacht" it would hold, as someone else's)
        pane.send("I own a yacht. Just kidding, we went sailing on Ada's today")
    # keep: the cat is removed "for a reason"; review: it just goes, so it leaves and is held
    llm_server.script(receipted(tool_call("save_memory", {
        "history_entry": "Chatted.",
        "memory_update": "# About the user\n\n- Likes green tea\n- Lives in Lyon\n- Owns a yacht\n",
        "removed_facts": [{"fact": "Has a cat named Mo", "reason": "no longer relevant"}] if policy == "keep" else [],
    })))
    out = app.run(app.consolidation.archive("quick"))
    return str(out.consolidation)


def test_undo_button_on_the_bad_revision(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    _bad_consolidation(qtbot, desktop, llm_server)
    assert "Owns a yacht" in _memory(desktop) and "Has a cat" not in _memory(desktop)
    desktop.open("memory")
    browser = desktop.window.memory
    confirm = Confirm()
    browser.confirm = confirm
    qtbot.waitUntil(lambda: browser.current is not None and browser.undo_btn.isEnabled(), timeout=10000)
    assert browser.current.reason == "consolidation"  # the newest revision is selected: the bad one
    assert not browser.rollback_btn.isEnabled()  # what the user had before: greyed out on HEAD
    with qtbot.waitSignal(browser.changed, timeout=10000):
        browser.undo_btn.click()
    text = confirm.texts[0]
    assert "Removed:\n  • Owns a yacht" in text
    assert "Put back:\n  • Has a cat named Mo" in text
    assert text.count("•") == 2  # exactly what changes, nothing else
    assert _memory(desktop) == BEFORE


def test_undo_cancelled_changes_nothing(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    _bad_consolidation(qtbot, desktop, llm_server)
    desktop.open("memory")
    browser = desktop.window.memory
    browser.confirm = Confirm(answer=False)
    qtbot.waitUntil(lambda: browser.undo_btn.isEnabled(), timeout=10000)
    browser.undo_btn.click()
    qtbot.waitUntil(lambda: "Nothing was changed" in browser.status.text(), timeout=10000)
    assert "Owns a yacht" in _memory(desktop)


@pytest.mark.usefixtures("session_bus")  # before `desktop`: its notifier connects to this bus
def test_undo_from_the_dbus_notification(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    server = FakeNotificationServer()
    server.click = "undo"
    confirm = Confirm()
    desktop.main_window().memory.confirm = confirm
    try:
        cid = _bad_consolidation(qtbot, desktop, llm_server)
        qtbot.waitUntil(lambda: "Has a cat named Mo" in _memory(desktop), timeout=20000)
        memory_updated = next(b for b in server.received if b[3] == "Memory updated")
        actions = memory_updated[5]
        assert actions[actions.index("undo") + 1] == "Undo"
        # Review is offered exactly when something waits for it (here: what the user said of the
        # sailing trip, which nothing kept, is listed as not remembered)
        waiting = desktop.app.worker.call(desktop.app.memory.pending_review)
        assert ("review" in actions) == bool(waiting)
        assert _memory(desktop) == BEFORE and confirm.texts
        assert desktop.window.memory.current is not None
        assert cid
    finally:
        server.close()


def test_banner_offers_undo_and_review_when_something_was_held(
    qtbot: Any, desktop: Any, llm_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtray.desktop.mainwindow import Banner

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    _bad_consolidation(qtbot, desktop, llm_server, policy="review")
    qtbot.waitUntil(lambda: any(b.title == "Memory updated" for b in desktop.window.findChildren(Banner)),
                    timeout=10000)
    banner = next(b for b in desktop.window.findChildren(Banner) if b.title == "Memory updated")
    assert set(banner.buttons) == {"undo", "review"}
    banner.buttons["review"].click()
    browser = desktop.window.memory
    assert browser.tabs.currentWidget() is browser.review_tab
    desktop.notifier.notify("Memory updated", "again", kind="memory", target=banner.target)
    qtbot.waitUntil(lambda: any(b.title == "Memory updated" and b is not banner and "undo" in b.buttons
                                for b in desktop.window.findChildren(Banner)), timeout=10000)
    again = next(b for b in desktop.window.findChildren(Banner) if b.title == "Memory updated" and b is not banner)
    confirm = Confirm()
    browser.confirm = confirm
    with qtbot.waitSignal(browser.changed, timeout=10000):
        again.buttons["undo"].click()
    assert "Owns a yacht" not in _memory(desktop) and "Has a cat named Mo" in _memory(desktop)
