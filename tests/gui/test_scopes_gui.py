"""Memory scopes in the desktop (issue 32): the quick chat's scope switch puts a conversation
in a scope (its request then carries that scope's facts and no other's), a bad name is said,
and the memory browser's Facts tab shows each scope and moves a fact between them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from memtray.core.memory import scopes
from memtray.desktop.qt import QLabel, Qt

from tests.fixtures.llm_server import reply

pytestmark = pytest.mark.gui

MEM = "# About the user\n\n## General\n- Lives in Lyon\n\n## Work\n- Reviews code at Acme on Fridays\n\n" \
      "## Family\n- Daughter Ada plays the cello\n"


@pytest.fixture
def scoped(desktop: Any) -> Any:
    mem = desktop.app.memory

    def seed() -> None:
        mem.write(MEM, reason="user-edit", source="user")
        ids = {w: next(f.id for f in mem.ledger().facts if w in f.text) for w in ("Acme", "Ada")}
        mem.move_fact(ids["Acme"], "work", "a work convention")
        mem.move_fact(ids["Ada"], "family", "about the family")

    desktop.app.worker.call(seed)
    return desktop


def _choose(qtbot: Any, switch: Any, data: str) -> None:
    index = switch.findData(data)
    assert index >= 0, switch.scopes()
    switch.setCurrentIndex(index)
    switch.activated.emit(index)  # what a click on the entry emits


def test_the_quick_chat_scope_switch(qtbot: Any, scoped: Any, llm_server: Any) -> None:
    d = scoped
    d.show_popup()
    switch = d.popup.scope_switch
    qtbot.waitUntil(lambda: switch.scopes() == ["global", "family", "work"], timeout=10000)
    assert switch.currentText() == "Global memory"

    with qtbot.waitSignal(switch.chosen, timeout=10000):
        _choose(qtbot, switch, "work")
    assert d.app.store.state.sessions["quick"].scope == "work"
    llm_server.script(reply("Fridays: the Acme review."))
    pane = d.popup.pane
    with qtbot.waitSignal(pane.turn_done, timeout=60000):
        pane.input.setPlainText("What do I do on Fridays?")
        qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    sent = json.dumps(llm_server.chat_requests[-1].json["messages"])
    assert "Reviews code at Acme" in sent and "Lives in Lyon" in sent and "cello" not in sent

    # "New scope…" asks for a name: a bad one is said and changes nothing, a good one is chosen
    said: list[str] = []
    switch.failed.connect(said.append)
    switch.ask_name = lambda: "../etc"
    _choose(qtbot, switch, "\x00new")
    qtbot.waitUntil(lambda: bool(said), timeout=10000)
    assert "not a scope name" in said[0] and switch.currentData() == "work"
    switch.ask_name = lambda: "Thesis"
    with qtbot.waitSignal(switch.chosen, timeout=10000):
        _choose(qtbot, switch, "\x00new")
    assert d.app.store.state.sessions["quick"].scope == "thesis" and switch.currentText() == "Scope: thesis"

    # a choice made elsewhere (the terminal's --scope) shows at once
    d.app.worker.call(lambda: scopes.choose(d.app.store, "quick", "family"))
    qtbot.waitUntil(lambda: switch.currentData() == "family", timeout=10000)


def test_the_browser_shows_scopes_and_moves_a_fact(qtbot: Any, scoped: Any) -> None:
    d = scoped
    d.open("memory")
    browser = d.window.memory
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() >= 3, timeout=10000)
    tab = browser.facts_tab
    with qtbot.waitSignal(tab.shown, timeout=10000):
        browser.tabs.setCurrentWidget(tab)
    assert {f["text"]: f["scope"] for f in tab.facts} == {
        "Lives in Lyon": "global", "Reviews code at Acme on Fridays": "work", "Daughter Ada plays the cello": "family"}
    texts = [lab.text() for lab in tab.widget().findChildren(QLabel)]
    assert "Global memory · MEMORY.md" in texts and "Scope: work · scopes/work.md" in texts

    acme = next(f["id"] for f in tab.facts if f["scope"] == "work")
    tab.ask_move = lambda fact, others: ("global", "it is about me everywhere") if "global" in others else None
    with qtbot.waitSignal(tab.shown, timeout=10000):
        qtbot.mouseClick(tab.row("Reviews code at Acme on Fridays").buttons["Move…"], Qt.MouseButton.LeftButton)
    moved = {f["id"]: f["scope"] for f in tab.facts}
    assert moved[acme] == "global"  # the same id, in another scope
    assert "Reviews code at Acme" in (d.app.home.memory / "MEMORY.md").read_text(encoding="utf-8")
    assert not (d.app.home.memory / "scopes" / "work.md").exists()
    # the revision says what moved, where and why (a move changes no words: no diff row would)
    qtbot.waitUntil(lambda: browser.list.topLevelItem(0).text(1) == "Moved between scopes", timeout=10000)
    with qtbot.waitSignal(browser.shown, timeout=10000):
        browser.list.setCurrentItem(browser.list.topLevelItem(0))
    moved = [r for r in browser.rows if "moved from work to global" in r.toolTip() + " ".join(
        lab.text() for lab in r.findChildren(QLabel))]
    assert len(moved) == 1 and "it is about me everywhere" in " ".join(lab.text() for lab in moved[0].findChildren(QLabel))


def test_the_chats_page_switch_follows_the_open_conversation(qtbot: Any, scoped: Any) -> None:
    d = scoped
    app = d.app
    app.worker.call(lambda: scopes.choose(app.store, "job", "work"))
    d.open("chat", "job")
    page = d.window.chats
    switch = page.scope_switch
    qtbot.waitUntil(lambda: switch.currentData() == "work", timeout=10000)
    with qtbot.waitSignal(switch.chosen, timeout=10000):
        _choose(qtbot, switch, "family")
    assert app.store.state.sessions["job"].scope == "family"
