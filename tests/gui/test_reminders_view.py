"""Reminders in the app: the Reminders page (add as you would say it, next time, snooze,
cancel, following changes from any door) and a reminder notification's Snooze and Done,
from the D-Bus notification server and from the in-window banner."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memtray.core.base.clock import parse_ts
from memtray.desktop.qt import Qt

from tests.gui.test_notify import FakeNotificationServer, session_bus  # noqa: F401 (fixture)

pytestmark = pytest.mark.gui


def _page(qtbot: Any, desktop: Any) -> Any:
    desktop.open("reminders")
    page = desktop.window.reminders
    assert desktop.window.stack.currentWidget() is page
    return page


def _active(desktop: Any) -> dict[str, Any]:
    return {r.text: r for r in desktop.app.worker.call(desktop.app.reminders.reminders)}


def test_add_list_snooze_and_cancel(qtbot: Any, desktop: Any) -> None:
    page = _page(qtbot, desktop)
    page.new_text.setText("stand up")
    page.new_when.setText("every weekday at 9")
    with qtbot.waitSignal(page.shown, timeout=10000):
        qtbot.mouseClick(page.add_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: any(r.row["text"] == "stand up" for r in page.rows), timeout=10000)
    row = page.row("stand up")
    assert "every weekday at 09:00" in row.when.text() and "0 9 * * mon-fri" in row.when.toolTip()
    assert page.new_text.text() == "" and "Added" in page.status.text()

    page.new_text.setText("tea")
    page.new_when.setText("in 2 minutes")
    qtbot.keyClick(page.new_when, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: any(r.row["text"] == "tea" for r in page.rows), timeout=10000)
    assert page.rows[0].row["text"] == "tea"  # the soonest first
    assert "in 2 min" in page.row("tea").when.text()
    tea = _active(desktop)["tea"]
    qtbot.mouseClick(page.row("tea").snooze_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _active(desktop)["tea"].id != tea.id, timeout=10000)
    moved = _active(desktop)["tea"]
    assert parse_ts(moved.spec) > parse_ts(tea.spec)  # in 10 minutes now, not 2
    qtbot.waitUntil(lambda: page.row("tea").row["id"] == moved.id and "in 10 min" in page.row("tea").when.text(),
                    timeout=10000)
    qtbot.mouseClick(page.row("tea").cancel_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: [r.row["text"] for r in page.rows] == ["stand up"], timeout=10000)
    assert "tea" not in _active(desktop)


def test_what_it_does_not_understand_is_said_and_nothing_is_added(qtbot: Any, desktop: Any) -> None:
    page = _page(qtbot, desktop)
    page.new_text.setText("water the plants")
    page.new_when.setText("when the moon is full")
    page.add()
    qtbot.waitUntil(lambda: "not a date and time" in page.status.text(), timeout=10000)
    assert page.new_text.text() == "water the plants"  # kept for a second try
    assert _active(desktop) == {}


def test_the_page_follows_reminders_added_elsewhere(qtbot: Any, desktop: Any) -> None:
    page = _page(qtbot, desktop)
    svc = desktop.app.reminders
    with qtbot.waitSignal(page.shown, timeout=10000):
        desktop.app.worker.call(lambda: svc.schedule("call mum", at="tomorrow at noon"))
    qtbot.waitUntil(lambda: any(r.row["text"] == "call mum" for r in page.rows), timeout=10000)
    assert "12:00" in page.row("call mum").when.text()


def _fire(desktop: Any, text: str) -> Any:
    """Schedule ``text`` in a minute and deliver it now, as the scheduler does when it is due."""
    app = desktop.app
    svc = app.reminders
    r = app.worker.call(lambda: svc.schedule(text, at="in 1 minute"))
    later = datetime.now(UTC) + timedelta(minutes=1, seconds=5)
    assert [o.reminder for o in app.run(svc.fire_due([r.id], now=later))] == [r.id]
    return r


def test_banner_snooze_and_done(qtbot: Any, desktop: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtray.desktop.mainwindow import Banner

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    r = _fire(desktop, "take the pizza out")
    qtbot.waitUntil(lambda: any(b.title.startswith("Reminder") for b in desktop.window.findChildren(Banner)),
                    timeout=10000)
    banner = next(b for b in desktop.window.findChildren(Banner) if b.title.startswith("Reminder"))
    assert set(banner.buttons) == {"snooze", "done"}
    assert banner.buttons["snooze"].text() == "Snooze 10 min"
    banner.buttons["snooze"].click()
    qtbot.waitUntil(lambda: "take the pizza out" in _active(desktop), timeout=10000)
    again = _active(desktop)["take the pizza out"]
    assert again.id != r.id and again.kind == "at"
    left = parse_ts(again.spec) - datetime.now(UTC)
    assert timedelta(minutes=9) < left <= timedelta(minutes=10)
    # Done on the next one: nothing more is scheduled, and a one-shot still waiting is done
    r2 = _fire(desktop, "check the oven")
    qtbot.waitUntil(lambda: any(b.title.startswith("Reminder") and b is not banner and "done" in b.buttons
                                for b in desktop.window.findChildren(Banner)), timeout=10000)
    done = next(b for b in desktop.window.findChildren(Banner)
                if b.title.startswith("Reminder") and b is not banner and "done" in b.buttons)
    done.buttons["done"].click()
    assert "check the oven" not in _active(desktop) and r2.id not in {x.id for x in _active(desktop).values()}
    waiting = desktop.app.worker.call(lambda: desktop.app.reminders.schedule("later", at="in 5 minutes"))
    desktop.notification_action("done", f"reminder:{waiting.id}")
    qtbot.waitUntil(lambda: "later" not in _active(desktop), timeout=10000)
    assert desktop.app.store.state.reminders[waiting.id].active is False


@pytest.mark.usefixtures("session_bus")  # before `desktop`: its notifier connects to this bus
def test_snooze_from_the_dbus_notification(qtbot: Any, desktop: Any) -> None:
    server = FakeNotificationServer()
    server.click = "snooze"
    try:
        r = _fire(desktop, "stretch")
        qtbot.waitUntil(lambda: "stretch" in _active(desktop), timeout=10000)
        sent = next(b for b in server.received if b[3].startswith("Reminder"))
        actions = sent[5]
        assert actions[actions.index("snooze") + 1] == "Snooze 10 min"
        assert actions[actions.index("done") + 1] == "Done"
        assert _active(desktop)["stretch"].id != r.id
    finally:
        server.close()


def test_clicking_a_reminder_notification_opens_the_reminders_page(qtbot: Any, desktop: Any) -> None:
    svc = desktop.app.reminders
    r = desktop.app.worker.call(lambda: svc.schedule("stretch", at="in 5 minutes"))
    desktop.open("target", f"reminder:{r.id}")
    page = desktop.window.reminders
    assert desktop.window.stack.currentWidget() is page and page.highlight == r.id
