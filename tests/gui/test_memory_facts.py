"""Manage memory in the app: the Facts tab lists what memory holds now with who wrote each
fact, and edits or forgets one fact, each as one revision with its reason."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.mcp import writes
from memtray.desktop.qt import Qt

pytestmark = pytest.mark.gui

MEM = "# About the user\n\n- Likes green tea\n- Lives in Lyon\n"


@pytest.fixture
def seeded(desktop: Any) -> Any:
    app = desktop.app
    mem = app.memory
    app.worker.call(lambda: mem.write(MEM, reason="user-edit", source="user"))
    app.worker.call(lambda: mem.remember("Plays the cello", "Hobbies", model="openai/test-model", source_seq=None))
    app.worker.call(lambda: writes.remember(mem, "Runs on Sundays", "Hobbies", "Claude Desktop"))
    return desktop


def _facts_tab(qtbot: Any, desktop: Any) -> Any:
    desktop.open("memory")
    browser = desktop.window.memory
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() >= 3, timeout=10000)
    tab = browser.facts_tab
    with qtbot.waitSignal(tab.shown, timeout=10000):
        browser.tabs.setCurrentWidget(tab)
    return browser, tab


def _memory_md(desktop: Any) -> str:
    return (desktop.app.home.memory / "MEMORY.md").read_text(encoding="utf-8")


def test_each_fact_says_who_wrote_it(qtbot: Any, seeded: Any) -> None:
    browser, tab = _facts_tab(qtbot, seeded)
    by = {f["text"]: f["by"] for f in tab.facts}
    assert by == {"Likes green tea": "you", "Lives in Lyon": "you", "Plays the cello": "a chat",
                  "Runs on Sundays": "Claude Desktop (MCP)"}
    assert "by Claude Desktop (MCP)" in tab.row("Runs on Sundays").toolTip()
    # the revision another assistant wrote is named as such in the list, not "From a chat"
    assert browser.list.topLevelItem(0).text(1) == "From Claude Desktop (MCP)"
    assert browser.list.topLevelItem(1).text(1) == "From a chat"


def test_edit_a_fact_from_the_browser(qtbot: Any, seeded: Any) -> None:
    browser, tab = _facts_tab(qtbot, seeded)
    fid = next(f["id"] for f in tab.facts if f["text"] == "Lives in Lyon")
    qtbot.mouseClick(tab.row("Lives in Lyon").buttons["Edit"], Qt.MouseButton.LeftButton)
    dlg = tab.dialog
    assert dlg is not None and dlg.isVisible() and dlg.text.text() == "Lives in Lyon"
    dlg.text.setText("   ")  # no words: said in the dialog, nothing written
    qtbot.mouseClick(dlg.ok_btn, Qt.MouseButton.LeftButton)
    assert dlg.isVisible() and "needs some words" in dlg.message.text()
    dlg.text.setText("Lives in Paris")
    dlg.reason.setText("moved in May")
    with qtbot.waitSignal(browser.changed, timeout=10000) as sig:
        qtbot.mouseClick(dlg.ok_btn, Qt.MouseButton.LeftButton)
    rev = sig.args[0]
    assert (rev.reason, rev.changed, rev.added, rev.removed) == ("user-edit", 1, 0, 0)
    assert "Lives in Paris" in _memory_md(seeded) and "Lyon" not in _memory_md(seeded)
    qtbot.waitUntil(lambda: any(f["text"] == "Lives in Paris" for f in tab.facts), timeout=10000)
    assert next(f for f in tab.facts if f["text"] == "Lives in Paris")["id"] == fid  # the same fact, reworded
    qtbot.waitUntil(lambda: browser.list.topLevelItem(0).text(1) == "Edited by you", timeout=10000)
    changed = seeded.app.worker.call(lambda: seeded.app.memory.diff(None, rev.rev)).changed
    assert [(o.text, n.text) for o, n in changed] == [("Lives in Lyon", "Lives in Paris")]


def test_forget_a_fact_from_the_browser(qtbot: Any, seeded: Any) -> None:
    browser, tab = _facts_tab(qtbot, seeded)
    fid = next(f["id"] for f in tab.facts if f["text"] == "Runs on Sundays")
    qtbot.mouseClick(tab.row("Runs on Sundays").buttons["Forget"], Qt.MouseButton.LeftButton)
    dlg = tab.dialog
    assert not dlg.text.isVisibleTo(dlg)
    dlg.reason.setText("I stopped running")
    with qtbot.waitSignal(browser.changed, timeout=10000) as sig:
        qtbot.mouseClick(dlg.ok_btn, Qt.MouseButton.LeftButton)
    assert (sig.args[0].reason, sig.args[0].removed) == ("user-edit", 1)
    assert "Sundays" not in _memory_md(seeded)
    qtbot.waitUntil(lambda: all(f["text"] != "Runs on Sundays" for f in tab.facts), timeout=10000)
    dropped = [d for d in seeded.app.worker.call(seeded.app.memory.dropped) if d["id"] == fid]
    assert dropped and dropped[-1]["reason"] == "I stopped running" and dropped[-1]["by"] == "user-edit"
    # the revision's Changes tab offers the fact back
    browser.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: any(r.kind == "removed" and r.fact.text == "Runs on Sundays" for r in browser.rows),
                    timeout=10000)


def test_a_change_from_the_terminal_reaches_the_open_facts_tab(qtbot: Any, seeded: Any) -> None:
    _browser, tab = _facts_tab(qtbot, seeded)
    mem = seeded.app.memory
    fid = next(f["id"] for f in tab.facts if f["text"] == "Plays the cello")
    with qtbot.waitSignal(tab.shown, timeout=10000):
        seeded.app.worker.call(lambda: mem.forget_fact(fid, "not any more"))
    assert all(f["id"] != fid for f in tab.facts)
