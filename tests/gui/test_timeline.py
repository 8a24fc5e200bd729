"""Memory browser, issue 9 part 5: the Timeline tab and the "Rebuild with model…" dialog."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from memtray.desktop.qt import QPointF, Qt

from tests.fixtures.llm_server import hang, reply, tool_call
from tests.fixtures.receipting import receipted

pytestmark = pytest.mark.gui

REVS = [
    "# About the user\n\n- Likes green tea\n- Lives in Lyon\n",
    "# About the user\n\n- Likes green tea\n- Lives in Lyon\n- Works as a nurse\n",
    "# About the user\n\n- Likes green tea\n- Works as a nurse\n",
]


def _git(memory_dir: Path, *args: str) -> str:
    git = shutil.which("git")
    assert git, "the real git binary is needed for this test"
    return subprocess.run([git, "-C", str(memory_dir), *args], capture_output=True, text=True, check=True,
                          timeout=30).stdout


def _browser(qtbot: Any, desktop: Any, n: int) -> Any:
    desktop.open("memory")
    browser = desktop.window.memory
    qtbot.waitUntil(lambda: browser.list.topLevelItemCount() >= n and bool(browser.rows), timeout=10000)
    return browser


def test_timeline_has_a_point_per_revision_and_a_click_selects_it(qtbot: Any, desktop: Any) -> None:
    mem = desktop.app.memory
    for text in REVS:
        desktop.app.worker.call(lambda text=text: mem.write(text, reason="user-edit", source="user"))
    browser = _browser(qtbot, desktop, 3)
    tl = browser.timeline
    qtbot.waitUntil(lambda: len(tl.points) == browser.list.topLevelItemCount() == 3, timeout=10000)
    # oldest first; the last revision drops "Lives in Lyon" (marked red)
    assert [p.facts for p in tl.points] == [2, 3, 2]
    assert [p.removed > 0 for p in tl.points] == [False, False, True]
    newest_first = [str(browser.list.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)) for i in range(3)]
    assert [p.rev for p in tl.points] == newest_first[::-1]
    browser.tabs.setCurrentWidget(tl)
    desktop.window.resize(1200, 800)
    qtbot.waitUntil(tl.isVisible, timeout=5000)
    tl.grab()  # paints (drops in red) without error
    assert browser.list.currentItem() is browser.list.topLevelItem(0)
    oldest = tl.points[0].rev
    with qtbot.waitSignal(browser.shown, timeout=10000) as sig:
        qtbot.mouseClick(tl, Qt.MouseButton.LeftButton, pos=tl.point_pos(0).toPoint())
    assert sig.args[0] == oldest
    assert str(browser.list.currentItem().data(0, Qt.ItemDataRole.UserRole)) == oldest
    # a click far from any point selects nothing
    far = tl.point_pos(1).toPoint()
    far.setY(far.y() + (60 if far.y() < tl.height() / 2 else -60))
    assert tl.hit(QPointF(far)) is None
    with qtbot.assertNotEmitted(tl.revision_clicked, wait=100):
        qtbot.mouseClick(tl, Qt.MouseButton.LeftButton, pos=far)


def _consolidated(desktop: Any, llm_server: Any) -> None:
    app = desktop.app
    cons = app.consolidation
    llm_server.script(reply("Noted."))
    app.run(app.agent.turn("cli", "I live in Lyon, I am a nurse and I own a boat", stream=False))
    llm_server.script(receipted(tool_call("save_memory", {
        "history_entry": "Lyon, nurse.",
        "memory_update": "# About the user\n\n- Lives in Lyon\n- Works as a nurse\n- Owns a boat\n",
        "removed_facts": [],
    })))
    app.run(cons.consolidate("cli", trigger="manual"))


def test_rebuild_dialog_rebuilds_compares_and_adopts(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    _consolidated(desktop, llm_server)
    memdir = desktop.app.home.memory
    main_before = _git(memdir, "rev-parse", "main").strip()
    browser = _browser(qtbot, desktop, 1)
    browser.open_rebuild()
    dlg = browser.rebuild_dialog
    dlg.model.setText("openai/careful")
    dlg.name.setText("careful")
    llm_server.script(receipted(tool_call("save_memory", {
        "history_entry": "Lyon, nurse.",
        "memory_update": "# About the user\n\n- Lives in Lyon\n- Works as a nurse\n",
        "removed_facts": [],
    })))
    steps: list[tuple[int, int]] = []
    dlg.progress.connect(lambda d, t, _s: steps.append((d, t)))
    with qtbot.waitSignal(dlg.compared, timeout=20000) as sig:
        qtbot.mouseClick(dlg.start_btn, Qt.MouseButton.LeftButton)
    r = sig.args[0]
    assert r["branch"] == "rebuild/careful" and r["status"] == "completed"
    assert [f["text"] for f in r["diff"]["dropped"]] == ["Owns a boat"]
    assert steps and steps[-1] == (1, 1) and dlg.bar.value() == dlg.bar.maximum()
    assert "Owns a boat" in dlg.details.toPlainText()
    assert dlg.adopt_btn.isEnabled()
    log_all = _git(memdir, "log", "--all", "--oneline", "--decorate")
    assert "rebuild/careful" in log_all
    assert _git(memdir, "rev-parse", "main").strip() == main_before  # main untouched until adopt

    with qtbot.waitSignal(dlg.adopted, timeout=10000):
        qtbot.mouseClick(dlg.adopt_btn, Qt.MouseButton.LeftButton)
    main_after = _git(memdir, "rev-parse", "main").strip()
    assert main_after != main_before
    assert _git(memdir, "rev-parse", "main~1").strip() == main_before
    assert "Reason: adopt" in _git(memdir, "log", "-1", "--format=%B", "main")
    assert "Owns a boat" not in (memdir / "MEMORY.md").read_text(encoding="utf-8")
    assert main_after[:7] in _git(memdir, "log", "--all", "--oneline")
    qtbot.waitUntil(lambda: browser.list.topLevelItem(0).text(1) == "Adopted", timeout=10000)
    dlg.close()


def test_rebuild_dialog_needs_a_model(qtbot: Any, desktop: Any) -> None:
    desktop.open("memory")
    browser = desktop.window.memory
    qtbot.waitUntil(lambda: "No memory yet" in browser.status.text(), timeout=10000)
    assert browser.timeline.points == []
    browser.open_rebuild()
    dlg = browser.rebuild_dialog
    with qtbot.waitSignal(dlg.failed, timeout=2000):
        dlg.start()
    assert dlg.start_btn.isEnabled() and not dlg.adopt_btn.isEnabled()
    dlg.close()


def test_rebuild_can_be_cancelled(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    _consolidated(desktop, llm_server)
    memdir = desktop.app.home.memory
    main_before = _git(memdir, "rev-parse", "main").strip()
    browser = _browser(qtbot, desktop, 1)
    browser.open_rebuild()
    dlg = browser.rebuild_dialog
    dlg.model.setText("openai/slow")
    llm_server.script(hang())
    with qtbot.waitSignal(dlg.progress, timeout=10000):
        dlg.start()
    assert dlg.cancel_btn.isEnabled() and not dlg.start_btn.isEnabled()
    qtbot.wait(100)
    qtbot.mouseClick(dlg.cancel_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Cancelled" in dlg.status.text(), timeout=10000)
    assert dlg.start_btn.isEnabled() and not dlg.adopt_btn.isEnabled()
    assert _git(memdir, "rev-parse", "main").strip() == main_before
    dlg.close()


def test_rebuild_dialog_takes_since_and_exclude(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    _consolidated(desktop, llm_server)
    browser = _browser(qtbot, desktop, 1)
    browser.open_rebuild()
    dlg = browser.rebuild_dialog
    dlg.model.setText("openai/careful")
    # a bad exclusion is refused with the CLI's message and hint; nothing runs
    dlg.exclude.setText("nosuch")
    with qtbot.waitSignal(dlg.failed, timeout=10000) as bad:
        dlg.start()
    assert "no session named 'nosuch'" in bad.args[0] and dlg.start_btn.isEnabled()
    # leaving out the only session and starting after everything: nothing to re-consolidate
    dlg.exclude.setText("cli, 1-2")
    dlg.since_on.setChecked(True)
    dlg.since.setDateTime(dlg.since.dateTime().currentDateTime().addDays(1))
    asked = len(llm_server.chat_requests)
    with qtbot.waitSignal(dlg.compared, timeout=20000) as sig:
        dlg.start()
    assert sig.args[0]["status"] == "completed"
    assert "no fact differences" in dlg.details.toPlainText()
    started = [r for r in desktop.app.store.log.records() if r.type == "rebuild.started"][-1]
    assert started.data["since"] is not None and sorted(started.data["exclude"]) == ["1-2", "session:cli"]
    assert len(llm_server.chat_requests) == asked  # no step was left to ask the model about
    dlg.close()
