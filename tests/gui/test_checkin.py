"""The quick chat's check-in (issue 32): facts due for a check are asked about in one line
with one-click answers, each a revision; a notification asks the same with its buttons."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.memory.dated import NO_LONGER
from memtray.desktop.qt import Qt

pytestmark = pytest.mark.gui

# check dates long past: due on any day the test runs, so the wall clock decides nothing
MEMORY = """## Now
- Training for the Berlin marathon (check after 2001-01-01)
- Looking for a flat in Graz (check after 2001-02-01)
- Learning Japanese (check after 2001-03-01)
- Lives in Graz
- Plays chess (check after 2199-01-01)
"""


def _seed(desktop: Any) -> dict[str, str]:
    app = desktop.app
    app.worker.call(lambda: app.memory.write(MEMORY, reason="user-edit", source="user"))
    return {f.text.split(" (")[0]: f.id for f in app.memory.ledger().facts}


def _settle(qtbot: Any, desktop: Any) -> None:
    """The check-in's last question to the worker answered (none is cut off by the teardown)."""
    box = desktop.popup.checkin
    qtbot.waitUntil(lambda: not box.follower.in_flight and not desktop.bridge.busy, timeout=20000)


def _text(desktop: Any, fid: str) -> str | None:
    f = desktop.app.memory.ledger().get(fid)
    return None if f is None else f.text


def test_the_check_in_asks_and_each_click_is_a_revision(qtbot: Any, desktop: Any) -> None:
    ids = _seed(desktop)
    popup = desktop.popup
    desktop.show_popup()
    box = popup.checkin
    qtbot.waitUntil(lambda: box.isVisible() and box.current is not None, timeout=10000)
    assert box.question.text() == "Still training for the Berlin marathon?  (+2 more)"
    assert "Berlin marathon" in box.detail.text()
    with qtbot.waitSignal(box.answered, timeout=10000) as sig:
        qtbot.mouseClick(box.yes_btn, Qt.MouseButton.LeftButton)
    assert sig.args == [ids["Training for the Berlin marathon"], "yes"]
    assert "checked " in str(_text(desktop, ids["Training for the Berlin marathon"]))
    assert desktop.app.memory.revisions()[0].reason == "review"
    # the next one comes up by itself
    qtbot.waitUntil(lambda: box.question.text().startswith("Still looking for a flat in Graz?"), timeout=10000)
    with qtbot.waitSignal(box.answered, timeout=10000):
        qtbot.mouseClick(box.no_btn, Qt.MouseButton.LeftButton)
    fid = ids["Looking for a flat in Graz"]
    assert _text(desktop, fid) is None
    assert [d["reason"] for d in desktop.app.memory.dropped() if d["id"] == fid] == [NO_LONGER]
    qtbot.waitUntil(lambda: box.question.text() == "Still learning Japanese?", timeout=10000)
    qtbot.mouseClick(box.edit_btn, Qt.MouseButton.LeftButton)
    assert box.edit_row.isVisible() and box.edit.text() == "Learning Japanese"
    box.edit.clear()
    qtbot.keyClicks(box.edit, "Learning Japanese, level N3")
    with qtbot.waitSignal(box.answered, timeout=10000):
        qtbot.keyClick(box.edit, Qt.Key.Key_Return)
    assert str(_text(desktop, ids["Learning Japanese"])).startswith("Learning Japanese, level N3 (checked ")
    # nothing left to ask: the line says what the last answer did, and no question
    qtbot.waitUntil(lambda: box.current is None and not box.question.isVisible(), timeout=10000)
    assert box.status.text() == "Memory updated."
    assert "Plays chess (check after 2199-01-01)" in desktop.app.store.state.memory  # not due: never asked
    _settle(qtbot, desktop)


def test_later_skips_a_question_for_this_run(qtbot: Any, desktop: Any) -> None:
    _seed(desktop)
    desktop.show_popup()
    box = desktop.popup.checkin
    qtbot.waitUntil(lambda: box.current is not None, timeout=10000)
    qtbot.mouseClick(box.later_btn, Qt.MouseButton.LeftButton)
    assert box.question.text().startswith("Still looking for a flat in Graz?")
    before = desktop.app.store.state.memory
    box.refresh()
    qtbot.waitSignal(box.follower.shown, timeout=10000)
    assert box.question.text().startswith("Still looking for a flat in Graz?")
    assert desktop.app.store.state.memory == before  # "later" writes nothing
    _settle(qtbot, desktop)


def test_a_check_in_notification_answers_with_its_buttons(qtbot: Any, desktop: Any) -> None:
    ids = _seed(desktop)
    fid = ids["Learning Japanese"]
    target = f"check:{fid}"
    assert desktop.actions.offered("memory", target) == [("yes", "Yes"), ("no-longer", "No longer"), ("edit", "Edit…")]
    desktop.notification_action("no-longer", target)
    qtbot.waitUntil(lambda: _text(desktop, fid) is None, timeout=10000)
    assert [d["reason"] for d in desktop.app.memory.dropped() if d["id"] == fid] == [NO_LONGER]
    desktop.notification_action("edit", f"check:{ids['Plays chess']}")  # the quick chat has the field
    qtbot.waitUntil(desktop.popup.isVisible, timeout=10000)
    _settle(qtbot, desktop)


def test_the_check_in_asks_only_about_facts_the_chats_scope_sees(qtbot: Any, desktop: Any) -> None:
    """A work chat is never asked about a family fact (issue 32: scopes' facts stay apart)."""
    from memtray.core.memory import scopes

    ids = _seed(desktop)
    app = desktop.app
    app.worker.call(lambda: app.memory.move_fact(ids["Training for the Berlin marathon"], "family", "family life"))
    app.worker.call(lambda: app.memory.move_fact(ids["Learning Japanese"], "work", "for the Tokyo office"))
    popup = desktop.popup
    session = popup.pane.session
    app.worker.call(lambda: scopes.choose(app.store, session, "work"))
    desktop.show_popup()
    box = popup.checkin
    box.refresh()
    qtbot.waitUntil(lambda: box.isVisible() and box.current is not None and not box.follower.in_flight,
                    timeout=10000)
    asked = {d["id"] for d in box.due}
    assert asked == {ids["Looking for a flat in Graz"], ids["Learning Japanese"]}  # global + work
    app.worker.call(lambda: scopes.choose(app.store, session, "family"))
    qtbot.waitUntil(lambda: {d["id"] for d in box.due} == {ids["Looking for a flat in Graz"],
                                                            ids["Training for the Berlin marathon"]}, timeout=10000)
    _settle(qtbot, desktop)


def test_a_restart_does_not_ask_again_about_the_same_check_date(
        qtbot: Any, configured_home: Any, runtime_dir: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The notification that asks "Still true?" is asked once per check date, durably: a
    restart the same day (or the next) does not notify again; after "yes" the next check
    date asks again. The clock is injected; the sweep is the desktop's maintenance task."""
    from datetime import UTC, datetime

    from memtray.core.app import App
    from memtray.core.base.clock import FakeClock
    from memtray.core.cli.main import serve
    from memtray.desktop.main import Desktop
    from memtray.desktop.qt import QApplication

    from tests.gui.conftest import close_desktop

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")  # the banner: no session bus
    clock = FakeClock(datetime(2027, 7, 12, 8, 0, tzinfo=UTC))

    def start() -> Any:
        d = Desktop(App.open(configured_home, clock=clock), QApplication.instance(), serve,
                    tray_available=False, show_dialogs=False, warm_up=False)
        d.start()
        return d

    def asked(d: Any) -> list[str]:
        d.app.scheduler.run_maintenance("dated-facts")
        QApplication.processEvents()
        return [s.target for s in d.notifier.history if s.title == "Still true?"]

    d = start()
    try:
        d.app.worker.call(lambda: d.app.memory.write(
            "## Now\n- Training for the Berlin marathon (check after 2027-07-10)\n- Lives in Graz\n",
            reason="user-edit", source="user"))
        fid = next(f.id for f in d.app.memory.ledger().facts if "marathon" in f.text)
        qtbot.waitUntil(lambda: asked(d) == [f"check:{fid}"], timeout=10000)
        assert asked(d) == [f"check:{fid}"]  # the same run: once
    finally:
        close_desktop(d)
    clock.advance(3 * 3600)  # the same day, after a restart
    d = start()
    try:
        assert asked(d) == []
        clock.advance(86_400)  # the next day: the same check date, still not asked again
        assert asked(d) == []
        d.app.worker.call(lambda: d.app.memory.check_fact(fid, "yes", clock.now().date()))
        text = d.app.memory.ledger().get(fid).text
        assert "checked 2027-07-13" in text
        clock.advance(120 * 86_400)  # past the next check date: asked again
        qtbot.waitUntil(lambda: asked(d) == [f"check:{fid}"], timeout=10000)
        events = [r.data for r in d.app.store.log.records() if r.type == "checkin.asked"]
        assert [(e["fact"], e["day"]) for e in events] == [(fid, "2027-07-12"), (fid, "2027-11-10")]
        assert events[0]["review_after"] == "2027-07-10" and events[1]["review_after"] > "2027-07-13"
    finally:
        close_desktop(d)
