"""Lifecycle: a tray start, and quitting while a consolidation is in flight."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.fixtures.llm_server import hang, reply

pytestmark = pytest.mark.gui


def test_tray_start_shows_no_window_and_the_tray_toggles(qtbot: Any, configured_home: Any, runtime_dir: Any) -> None:
    from tests.gui.conftest import close_desktop, make_desktop

    d = make_desktop(qtbot, configured_home, tray_available=True)
    try:
        assert d.tray is not None and d.tray.icon.isVisible()
        assert d.window is None  # nothing but the tray at start
        labels = [a.text() for a in d.tray.menu.actions() if a.text()]
        assert labels[0].startswith("Quick chat") and labels[-1] == "Quit memtray"
        d.tray.toggle.emit()
        assert d.popup.isVisible()
        d.tray.toggle.emit()
        assert not d.popup.isVisible()
        next(a for a in d.tray.menu.actions() if a.text() == "Memory").trigger()
        assert d.window is not None and d.window.isVisible()
        d.window.close()  # with a tray, closing the window only hides it
        assert d.tray.icon.isVisible()
    finally:
        close_desktop(d)


def test_closing_during_a_consolidation(qtbot: Any, configured_home: Any, runtime_dir: Any, llm_server: Any) -> None:
    from memtray.core.app import App

    from tests.gui.conftest import close_desktop, make_desktop

    d = make_desktop(qtbot, configured_home)
    quits: list[bool] = []
    d.quit = lambda: quits.append(True)  # type: ignore[method-assign]
    pane = d.popup.pane
    llm_server.script(reply("noted"))
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        pane.send("keep this")
    llm_server.script(hang())
    pane.new_session()
    qtbot.waitUntil(lambda: any(c.status == "started" for c in d.app.store.state.consolidations.values()),
                    timeout=10000)
    d.window.close()  # no tray: closing the window quits
    qtbot.waitUntil(lambda: quits == [True], timeout=5000)
    t0 = time.monotonic()
    close_desktop(d)
    assert time.monotonic() - t0 < 30
    with App.open(configured_home) as app:
        assert [m["content"] for m in app.store.state.sessions["quick"].messages] == ["keep this", "noted"]
        assert all(c.status != "completed" for c in app.store.state.consolidations.values())
