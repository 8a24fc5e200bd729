"""The memory browser: roll back and restore a fact through the UI; MEMORY.md and git HEAD follow."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from memtray.desktop.qt import Qt

from tests.fixtures.llm_server import tool_call
from tests.fixtures.receipting import receipted

pytestmark = pytest.mark.gui

REV1 = "# About the user\n\n- Likes green tea\n- Lives in Lyon\n"
# a hand edit that removes one fact and adds another (one rewritten in place would be a rewording)
REV2 = "# About the user\n\n- Works as a nurse\n- Likes green tea\n"


def _git_head(memory_dir: Path) -> str:
    git = shutil.which("git")
    assert git, "the real git binary is needed for this test"
    out = subprocess.run([git, "-C", str(memory_dir), "log", "--format=%H %s"], capture_output=True, text=True,
                         check=True, timeout=30)
    return out.stdout.splitlines()[0].split()[0]


def _memory_md(desktop: Any) -> str:
    return (desktop.app.home.memory / "MEMORY.md").read_text(encoding="utf-8")


@pytest.fixture
def seeded(desktop: Any) -> Any:
    mem = desktop.app.memory
    desktop.app.worker.call(lambda: mem.write(REV1, reason="agent", source="model", model="openai/test-model"))
    desktop.app.worker.call(lambda: mem.write(REV2, reason="user-edit", source="user"))
    return desktop


def _browser(qtbot: Any, desktop: Any) -> Any:
    desktop.open("memory")
    browser = desktop.window.memory
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() >= 2 and bool(browser.rows), timeout=10000)
    return browser


def _row(browser: Any, kind: str, text: str) -> Any:
    return next(r for r in browser.rows if r.kind == kind and text in r.fact.text)


def test_revision_list_and_fact_diff(qtbot: Any, seeded: Any) -> None:
    browser = _browser(qtbot, seeded)
    top = browser.list.topLevelItem(0)
    assert top.text(1) == "Edited by you" and top.text(3) == "+1 −1 ~0"
    assert _row(browser, "removed", "Lives in Lyon")
    assert _row(browser, "added", "Works as a nurse")
    assert "Works as a nurse" in browser.text.toPlainText()
    assert not browser.rollback_btn.isEnabled()  # HEAD: nothing to roll back to


def test_rollback_through_the_browser(qtbot: Any, seeded: Any) -> None:
    browser = _browser(qtbot, seeded)
    memdir = seeded.app.home.memory
    head_before = _git_head(memdir)
    assert "Works as a nurse" in _memory_md(seeded)
    older = browser.list.topLevelItem(1)
    with qtbot.waitSignal(browser.shown, timeout=10000):
        browser.list.setCurrentItem(older)
    assert browser.rollback_btn.isEnabled()
    browser.confirm = lambda *_a: True
    with qtbot.waitSignal(browser.changed, timeout=10000) as sig:
        qtbot.mouseClick(browser.rollback_btn, Qt.MouseButton.LeftButton)
    assert sig.args[0].reason == "rollback"
    text = _memory_md(seeded)
    assert "Lives in Lyon" in text and "Works as a nurse" not in text
    head_after = _git_head(memdir)
    assert head_after != head_before and head_after == sig.args[0].rev
    qtbot.waitUntil(lambda: browser.list.topLevelItem(0).text(1) == "Rolled back", timeout=10000)


def test_rollback_can_be_cancelled(qtbot: Any, seeded: Any) -> None:
    browser = _browser(qtbot, seeded)
    head = _git_head(seeded.app.home.memory)
    with qtbot.waitSignal(browser.shown, timeout=10000):
        browser.list.setCurrentItem(browser.list.topLevelItem(1))
    browser.confirm = lambda *_a: False
    browser.rollback_current()
    qtbot.wait(200)
    assert _git_head(seeded.app.home.memory) == head


def test_restore_a_dropped_fact_through_the_browser(qtbot: Any, seeded: Any) -> None:
    browser = _browser(qtbot, seeded)
    memdir = seeded.app.home.memory
    head_before = _git_head(memdir)
    row = _row(browser, "removed", "Lives in Lyon")
    lyon = row.fact.id
    assert lyon.startswith("F")  # the diff is by fact id
    with qtbot.waitSignal(browser.changed, timeout=10000) as sig:
        qtbot.mouseClick(row.buttons["Restore"], Qt.MouseButton.LeftButton)
    assert sig.args[0].reason == "restore"
    text = _memory_md(seeded)
    assert "Lives in Lyon" in text and "Works as a nurse" in text
    assert _git_head(memdir) != head_before
    back = seeded.app.worker.call(lambda: seeded.app.memory.ledger().get(lyon))
    assert back is not None and back.text == "Lives in Lyon"  # restored by id, with its id


def test_why_shows_where_a_fact_came_from(qtbot: Any, seeded: Any) -> None:
    browser = _browser(qtbot, seeded)
    row = _row(browser, "added", "Works as a nurse")
    row.buttons["Why?"].click()
    qtbot.waitUntil(lambda: browser.why_dialog is not None and browser.why_dialog.isVisible(),
                    timeout=10000)
    assert browser.why_dialog.info["fact"]["text"] == "Works as a nurse"
    assert browser.why_dialog.info["fact"]["id"] == row.fact.id  # asked by id
    browser.why_dialog.close()


def test_as_of_selects_the_revision_in_force(qtbot: Any, seeded: Any) -> None:
    from memtray.desktop.qt import QDateTime

    browser = _browser(qtbot, seeded)
    browser.as_of.setDateTime(QDateTime.currentDateTime().addSecs(60))
    browser.show_as_of()
    qtbot.waitUntil(lambda: "as of" in browser.status.text(), timeout=10000)
    assert browser.list.currentItem() is browser.list.topLevelItem(0)
    browser.as_of.setDateTime(QDateTime.currentDateTime().addYears(-5))
    browser.show_as_of()
    qtbot.waitUntil(lambda: "no memory yet" in browser.status.text(), timeout=10000)


def test_review_and_redo_after_a_consolidation(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    from memtray.core.base import config

    app = desktop.app
    app.worker.call(lambda: app.memory.write(REV1, reason="agent", source="model"))
    config.set_value(app.home, "drop_policy", "review")
    app.reconfigure(config.load(app.home))
    pane = desktop.popup.pane
    llm_server.script(tool_call("noop", {}), )
    llm_server.reset()
    from tests.fixtures.llm_server import reply

    llm_server.script(reply("sure"))
    with qtbot.waitSignal(pane.turn_done, timeout=90000):  # may be the process's first turn: imports litellm
        pane.send("I moved to Paris")
    # the model drops "Lives in Lyon" without saying so: held for review
    llm_server.script(receipted(tool_call("save_memory", {
        "history_entry": "Moved.", "memory_update": "# About the user\n\n- Likes green tea\n- Lives in Paris\n",
        "removed_facts": [],
    })))
    app.run(app.consolidation.archive("quick"))
    browser = _browser(qtbot, desktop)
    assert browser.review_btn.text() == "Review (1)"
    assert browser.redo_btn.isEnabled()  # the head revision came from a consolidation
    held = browser.review_tab.card("Lives in Lyon")
    with qtbot.waitSignal(browser.changed, timeout=10000):
        held.buttons["add"].click()
    assert "Lives in Lyon" in _memory_md(desktop)
    # redo that consolidation with another model string, through core's redo
    qtbot.waitUntil(lambda: browser.review_btn.text() == "Review", timeout=10000)
    cons_item = next(i for i in range(browser.list.topLevelItemCount())
                     if browser.list.topLevelItem(i).text(1) == "Consolidation")
    with qtbot.waitSignal(browser.shown, timeout=10000):
        browser.list.setCurrentItem(browser.list.topLevelItem(cons_item))
    llm_server.script(receipted(tool_call("save_memory", {
        "history_entry": "Moved (redo).",
        "memory_update": "# About the user\n\n- Likes green tea\n- Lives in Paris since 2025\n",
        "removed_facts": [{"fact": "Lives in Lyon", "reason": "moved"}],
    })))
    browser.redo_model.setCurrentText("openai/test-model")
    done: list[Any] = []
    browser.changed.connect(done.append)
    browser.redo_btn.click()
    # a redo that fails says so in the status line: show that rather than a bare timeout
    qtbot.waitUntil(lambda: bool(done) or "failed" in browser.status.text(), timeout=60000)
    assert done, browser.status.text()
    assert done[0].reason == "redo"
    # a redo that fails is shown at the top of the list, not left behind the revision under it
    memory_before = _memory_md(desktop)
    qtbot.waitUntil(lambda: browser.redo_btn.isEnabled(), timeout=10000)
    llm_server.script(reply("I would rather not call a tool."))
    browser.redo_btn.click()
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() > 0 and browser.list.topLevelItem(0).text(1) == "Redo failed",
                    timeout=20000)
    assert "failed" in browser.status.text() and "without calling save_memory" in browser.status.text()
    top = browser.list.topLevelItem(0)
    assert "Memory is unchanged" in top.toolTip(1) and top.text(2) == "test-model"
    assert browser.list.topLevelItem(1).text(1) == "Consolidation redone"
    browser.list.setCurrentItem(top)
    assert browser.head.text().startswith("Redo failed") and "without calling save_memory" in browser.text.toPlainText()
    assert not browser.redo_btn.isEnabled() and not browser.undo_btn.isEnabled()
    assert _memory_md(desktop) == memory_before
    browser.refresh()  # it stays there (derived from the log), until a newer revision
    qtbot.waitUntil(lambda: browser.list.topLevelItem(0).text(1) == "Redo failed", timeout=10000)


def test_older_revisions_load_page_by_page(qtbot: Any, desktop: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtray.desktop import memory_browser

    monkeypatch.setattr(memory_browser, "REVISION_PAGE", 3)
    mem = desktop.app.memory
    for i in range(7):
        text = "# About the user\n\n" + "".join(f"- Fact number {k}\n" for k in range(i + 1))
        desktop.app.worker.call(lambda t=text: mem.write(t, reason="agent", source="model"))
    desktop.open("memory")
    browser = desktop.window.memory
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() == 3, timeout=10000)
    assert browser.more_btn.isVisibleTo(browser) and "the newest" in browser.status.text()
    browser.more_btn.click()
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() == 6, timeout=10000)
    assert browser.more_btn.isVisibleTo(browser)
    browser.more_btn.click()
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() == 7, timeout=10000)
    assert not browser.more_btn.isVisibleTo(browser)  # the first revision is there: nothing older
    assert browser.status.text().startswith("7 revisions.")
    revs = [browser.list.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole) for i in range(7)]
    assert revs == [r.rev for r in mem.revisions(limit=10)]  # newest first, no gaps or repeats
    qtbot.waitUntil(lambda: len(browser.timeline.points) == 7, timeout=10000)  # the Timeline follows


@pytest.mark.parametrize("size", [(1280, 720), (1100, 720)])
def test_browser_columns_are_not_cut_at_the_default_size(qtbot: Any, seeded: Any, size: tuple[int, int]) -> None:
    from memtray.desktop.qt import QApplication

    mem = seeded.app.memory
    for reason in ("redo", "rollback", "restore", "consolidation"):  # the longest "What" labels
        seeded.app.worker.call(lambda r=reason: mem.write(REV1 + f"- A fact for {r}\n", reason=r, source="model",
                                                          model="openai/gpt-4o-mini-2024-07-18"))
    window = seeded.main_window()
    window.resize(*size)
    browser = _browser(qtbot, seeded)
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() == 6, timeout=10000)
    QApplication.processEvents()
    hdr = browser.list.header()
    for n in range(hdr.count()):
        # the header's own text, and every cell but Model (which elides, with a tooltip)
        assert hdr.sectionSize(n) >= hdr.sectionSizeHint(n), browser.list.headerItem().text(n)
        assert browser.list.headerItem().toolTip(n)
        if n != 2:
            assert hdr.sectionSize(n) >= browser.list.sizeHintForColumn(n), browser.list.headerItem().text(n)
    assert hdr.length() <= browser.list.viewport().width()  # and nothing scrolled out of view
    for btn in (browser.rollback_btn, browser.redo_btn, browser.review_btn, browser.rebuild_btn):
        assert not btn.visibleRegion().isEmpty(), btn.text()


def test_settings_save_stays_in_view(qtbot: Any, desktop: Any) -> None:
    from memtray.desktop.qt import QApplication

    window = desktop.main_window()
    window.resize(1280, 720)
    desktop.open("settings")
    page = window.settings
    QApplication.processEvents()
    assert page.cards_scroll.verticalScrollBar().maximum() > 0  # the cards do not fit: they scroll
    for btn in (page.save_btn, page.revert_btn):
        assert not btn.visibleRegion().isEmpty(), btn.text()
        assert window.rect().contains(btn.mapTo(window, btn.rect().bottomRight()))


def test_a_fact_reworded_under_its_id_shows_as_changed(qtbot: Any, desktop: Any) -> None:
    """The Changes tab shows the diff the revision recorded, by id: a rewording is one
    changed row (old words → new), never a removal plus an addition matched by words."""
    mem = desktop.app.memory
    desktop.app.worker.call(lambda: mem.write(REV1, reason="agent", source="model", model="openai/test-model"))
    (fid,) = [f.id for f in desktop.app.worker.call(mem.ledger).facts if f.text == "Likes green tea"]
    desktop.app.worker.call(lambda: mem.edit_fact(fid, "Starts every morning with a pot of sencha"))
    browser = _browser(qtbot, desktop)
    assert browser.list.topLevelItem(0).text(3) == "+0 −0 ~1"
    assert {r.kind for r in browser.rows} == {"changed"}
    row = _row(browser, "changed", "sencha")
    assert (row.fact.id, row.fact.text) == (fid, "Starts every morning with a pot of sencha")
