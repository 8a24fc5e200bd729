"""Settings never loses a change: it follows the live configuration, saves only what the
user edited (merged onto the file as it is then), refuses an empty model, marks unsaved
edits, and the mouse wheel scrolls the page instead of changing a setting."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest
from memtray.core.base import config
from memtray.desktop.qt import QApplication, QPoint, QPointF, Qt

from tests.support import ROOT, cli_env

pytestmark = pytest.mark.gui


def _settings(desktop: Any) -> Any:
    desktop.open("settings")
    return desktop.window.settings


def _config_set(qtbot: Any, desktop: Any, key: str, value: str) -> None:
    """`memtray config set KEY VALUE` from another process, as a user types it in a terminal:
    it forwards to the running desktop, whose event loop must keep turning meanwhile."""
    env = cli_env(desktop.app.home.root, OPENAI_API_KEY="sk-test")
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "config", "set", key, value], env=env,
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        qtbot.wait(50)
    _out, err = proc.communicate(timeout=5)
    assert proc.returncode == 0, err


def _save(qtbot: Any, page: Any) -> None:
    with qtbot.waitSignal(page.saved, timeout=10000):
        qtbot.mouseClick(page.save_btn, Qt.MouseButton.LeftButton)


def test_a_model_set_from_the_terminal_survives_save(qtbot: Any, desktop: Any) -> None:
    """The scenario seen: Settings open, `config set model` and `api_base` from outside, Save."""
    page = _settings(desktop)
    form = page.model_form
    assert form.model_string() == "openai/test-model"
    _config_set(qtbot, desktop, "model", "openai/other-model")
    _config_set(qtbot, desktop, "api_base", "http://127.0.0.1:9/v1")
    # the form shows both at once, and nothing is marked unsaved
    qtbot.waitUntil(lambda: form.model_string() == "openai/other-model", timeout=10000)
    qtbot.waitUntil(lambda: form.api_base.text() == "http://127.0.0.1:9/v1", timeout=10000)
    assert page.edits() == {}
    assert not page.changed_bar.isVisibleTo(page)
    page.memory_window.setValue(42)
    assert "Consolidate after" in page.result.text()
    _save(qtbot, page)
    on_disk = config.load(desktop.app.home, env=False)
    assert (on_disk.model, on_disk.api_base, on_disk.memory_window) == ("openai/other-model", "http://127.0.0.1:9/v1", 42)
    assert desktop.app.config.model == "openai/other-model"
    assert "llm_retries = 0" in desktop.app.home.config.read_text()  # set before Settings opened: kept too


def test_save_merges_onto_a_file_the_form_has_not_seen_yet(qtbot: Any, desktop: Any) -> None:
    """A change that has not reached the form (written a moment before Save) is kept: Save
    writes only the fields the user edited, onto the file as it is on disk then."""
    page = _settings(desktop)
    page.drop_policy.setCurrentIndex(page.drop_policy.findData("review"))
    config.set_value(desktop.app.home, "model", "openai/written-meanwhile")  # no refresh: the form still has the old
    assert page.model_form.model_string() == "openai/test-model"
    _save(qtbot, page)
    on_disk = config.load(desktop.app.home, env=False)
    assert on_disk.model == "openai/written-meanwhile" and on_disk.drop_policy == "review"
    qtbot.waitUntil(lambda: page.model_form.model_string() == "openai/written-meanwhile", timeout=10000)
    assert page.result.text() == "Saved."


def test_a_hand_edit_of_config_toml_shows_in_the_open_form(qtbot: Any, desktop: Any) -> None:
    page = _settings(desktop)
    path = desktop.app.home.config
    path.write_text(path.read_text() + "memory_window = 64\n")
    # the instance's maintenance reads config.toml every two seconds; a turn or a forwarded
    # command reads it too. Ask as they do, so the test does not wait on the schedule.
    desktop.app.worker.call(desktop.app.refresh_settings)
    qtbot.waitUntil(lambda: page.memory_window.value() == 64, timeout=10000)
    assert page.edits() == {}


def test_a_setting_changed_elsewhere_while_edited_here_keeps_the_edit_and_says_so(
    qtbot: Any, desktop: Any
) -> None:
    page = _settings(desktop)
    page.memory_window.setValue(50)
    page.drop_policy.setCurrentIndex(page.drop_policy.findData("review"))
    _config_set(qtbot, desktop, "memory_window", "70")
    qtbot.waitUntil(lambda: page.changed_bar.isVisibleTo(page), timeout=10000)
    assert "Consolidate after" in page.changed_text.text()
    assert page.memory_window.value() == 50  # the user's edit is still in the form
    assert page.edits() == {"memory_window": 50, "drop_policy": "review"}
    page.take_theirs_btn.click()
    assert page.memory_window.value() == 70 and page.edits() == {"drop_policy": "review"}
    assert not page.changed_bar.isVisibleTo(page)
    _save(qtbot, page)
    on_disk = config.load(desktop.app.home, env=False)
    assert (on_disk.memory_window, on_disk.drop_policy) == (70, "review")


def test_an_empty_model_is_refused_and_nothing_is_written(qtbot: Any, desktop: Any) -> None:
    page = _settings(desktop)
    before = desktop.app.home.config.read_bytes()
    page.model_form.model.setCurrentText("")
    page.memory_window.setValue(33)
    qtbot.mouseClick(page.save_btn, Qt.MouseButton.LeftButton)
    assert "Not saved" in page.result.text() and "model" in page.result.text().lower()
    assert desktop.app.home.config.read_bytes() == before
    assert desktop.app.config.model == "openai/test-model"


def test_unsaved_mark_replaces_a_stale_saved(qtbot: Any, desktop: Any) -> None:
    page = _settings(desktop)
    page.memory_window.setValue(40)
    _save(qtbot, page)
    assert page.result.text() == "Saved." and not page.revert_btn.isEnabled()
    page.drop_policy.setCurrentIndex(page.drop_policy.findData("review"))
    assert "Saved." not in page.result.text()
    assert "When a fact is dropped" in page.result.text() and page.revert_btn.isEnabled()
    page.drop_policy.setCurrentIndex(page.drop_policy.findData("keep"))  # back as saved: nothing unsaved
    assert page.edits() == {} and "Not saved" not in page.result.text()
    page.drop_policy.setCurrentIndex(page.drop_policy.findData("review"))
    qtbot.mouseClick(page.revert_btn, Qt.MouseButton.LeftButton)
    assert page.drop_policy.currentData() == "keep" and page.result.text() == ""


def _wheel(widget: Any, notches: int = -3) -> None:
    from PySide6.QtGui import QWheelEvent

    centre = QPointF(widget.width() / 2, widget.height() / 2)
    ev = QWheelEvent(centre, QPointF(widget.mapToGlobal(QPoint(int(centre.x()), int(centre.y())))), QPoint(0, 0),
                     QPoint(0, 120 * notches), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                     Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, ev)


def test_the_wheel_scrolls_the_page_not_the_setting_under_the_pointer(qtbot: Any, desktop: Any) -> None:
    page = _settings(desktop)
    desktop.window.resize(900, 500)
    qtbot.waitExposed(desktop.window)
    bar = page.cards_scroll.verticalScrollBar()
    assert bar.maximum() > 0
    for widget, value in ((page.drop_policy, lambda: page.drop_policy.currentData()),
                          (page.memory_window, page.memory_window.value),
                          (page.sync.interval, page.sync.interval.value),
                          (page.model_form.provider, lambda: page.model_form.provider.currentData())):
        page.cards_scroll.ensureWidgetVisible(widget)
        before, scrolled = value(), bar.value()
        _wheel(widget, -3 if scrolled < bar.maximum() else 3)
        assert value() == before, widget
        assert bar.value() != scrolled, (widget, scrolled, bar.maximum())  # the page moved instead
    assert page.edits() == {}
    # focused (clicked or tabbed into), the widget takes the wheel as usual
    page.memory_window.setFocus()
    qtbot.waitUntil(page.memory_window.hasFocus, timeout=5000)
    before = page.memory_window.value()
    _wheel(page.memory_window, 1)
    assert page.memory_window.value() != before
