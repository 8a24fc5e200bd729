"""The first run flows: one onboarding whatever started memtray (plain, toggle, show), the
hotkey and no-tray notes inside it, nothing on top of it, every message fully visible."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import ipc

from tests.gui.conftest import close_desktop, make_desktop

pytestmark = pytest.mark.gui


@pytest.fixture
def fresh(home: Any, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """A data home never started before, on a desktop with no hotkey backend."""
    monkeypatch.setenv("MEMTRAY_HOTKEY_BACKEND", "none")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    return home


def _top_level_dialogs() -> list[Any]:
    from memtray.desktop.qt import QApplication, QDialog

    return [w for w in QApplication.topLevelWidgets() if isinstance(w, QDialog) and w.isVisible()]


def _fully_visible(label: Any) -> bool:
    """A word-wrapped label shows all its lines: as tall as its text needs at its width,
    and not cut off by the scroll area or window around it."""
    if not label.isVisibleTo(label.window()):
        return False
    if label.height() < label.heightForWidth(label.width()):
        return False
    return label.visibleRegion().boundingRect().height() >= label.heightForWidth(label.width())


def _request_in_thread(home: Any, argv: list[str]) -> tuple[threading.Thread, dict[str, int]]:
    """What `memtray toggle|show` does once the app it started listens (off the GUI thread)."""
    out: dict[str, int] = {}

    def run() -> None:
        out["rc"] = ipc.request(home, {"argv": argv, "env": {}, "tty": False}, lambda _m: None, timeout=30)

    t = threading.Thread(target=run)
    t.start()
    return t, out


def _flow_through(qtbot: Any, d: Any) -> None:
    """One onboarding, its hotkey page inside it, no other dialog at any point."""
    qtbot.waitUntil(lambda: d.onboarding is not None and d.onboarding.isVisible(), timeout=5000)
    qtbot.wait(50)  # let the hotkey status and any late dialog arrive (none may)
    assert _top_level_dialogs() == [d.onboarding]
    assert d.hotkey_dialog is None
    assert d.popup is not None and not d.popup.isVisible()  # not opened over the onboarding
    ob = d.onboarding
    # no model yet: the note says what runs now (the offline model, or that it is missing)
    assert _fully_visible(ob.model_note)
    assert ob.needs_more and ob.hotkey_status is not None
    ob.keep_offline() if ob.offline_btn.isVisible() else ob.later_btn.click()
    qtbot.waitUntil(lambda: ob.more_page is not None and ob.pages.currentWidget() is ob.more_page, timeout=10000)
    assert ob.hotkey_help is not None and ob.hotkey_help.command in ob.hotkey_help.text.toPlainText()
    assert _top_level_dialogs() == [ob]
    ob.done_btn.click()
    assert not ob.isVisible() and not d.first_run


def test_plain_start_opens_one_onboarding_with_the_hotkey_page(qtbot: Any, fresh: Any) -> None:
    d = make_desktop(qtbot, fresh, show_dialogs=True)
    try:
        _flow_through(qtbot, d)
        # the no-tray note was part of the flow, so it is not repeated as a banner
        assert ob_note(d) and d.no_tray_banner is None
    finally:
        close_desktop(d)


def ob_note(d: Any) -> bool:
    note = d.onboarding.tray_note
    return note is not None and "toggle" in note.text() and "keyboard shortcut settings" in note.text()


@pytest.mark.parametrize("argv", [["toggle"], ["show"], ["show", "--window"]])
def test_start_through_toggle_or_show_opens_the_onboarding(qtbot: Any, fresh: Any, argv: list[str]) -> None:
    """`memtray toggle`/`show` start a plain `memtray` and then send their command: the
    onboarding comes first, and what was asked for opens when it ends."""
    d = make_desktop(qtbot, fresh, show_dialogs=True)
    try:
        thread, out = _request_in_thread(fresh, argv)
        qtbot.waitUntil(lambda: "rc" in out, timeout=10000)
        thread.join()
        assert out["rc"] == 0
        _flow_through(qtbot, d)
        if argv == ["show", "--window"]:
            assert d.window.isVisible() and not d.popup.isVisible()
        else:
            qtbot.waitUntil(d.popup.isVisible, timeout=5000)
    finally:
        close_desktop(d)


def test_keyring_warning_is_shown_whole(qtbot: Any, fresh: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtray.core.base import keys

    monkeypatch.setattr(keys, "backend_is_secure", lambda: False)
    monkeypatch.setattr(keys, "backend_name", lambda: "keyring.backends.fail.Keyring")
    d = make_desktop(qtbot, fresh)
    try:
        qtbot.waitUntil(lambda: d.onboarding is not None and d.onboarding.isVisible(), timeout=5000)
        warning = d.onboarding.form.keyring_warning
        qtbot.waitUntil(lambda: warning.isVisibleTo(d.onboarding), timeout=10000)
        qtbot.waitUntil(lambda: _fully_visible(warning), timeout=5000)
        assert warning.text().endswith("instead.")  # the whole sentence, hint included
    finally:
        close_desktop(d)


def test_second_start_has_no_onboarding_but_the_hotkey_dialog(qtbot: Any, fresh: Any) -> None:
    from memtray.core.base import config

    config.set_value(fresh, "onboarded", True)
    d = make_desktop(qtbot, fresh, show_dialogs=True)
    try:
        qtbot.waitUntil(lambda: d.hotkey_dialog is not None and d.hotkey_dialog.isVisible(), timeout=5000)
        assert d.onboarding is None
    finally:
        close_desktop(d)


def test_no_tray_notice_once(qtbot: Any, configured_home: Any, runtime_dir: Path) -> None:
    d = make_desktop(qtbot, configured_home, show_dialogs=True)
    try:
        qtbot.waitUntil(lambda: d.no_tray_banner is not None, timeout=5000)
        from memtray.desktop.qt import QLabel

        body = " ".join(lab.text() for lab in d.no_tray_banner.findChildren(QLabel))
        assert "no tray icons" in body and "toggle" in body
        assert "keyboard shortcut settings" in body and "system tray" in body
    finally:
        close_desktop(d)
    d = make_desktop(qtbot, configured_home, show_dialogs=True)
    try:
        qtbot.wait(100)
        assert d.no_tray_banner is None  # said once per data home
    finally:
        close_desktop(d)


def test_tray_click_during_the_first_run_raises_the_onboarding(qtbot: Any, fresh: Any) -> None:
    d = make_desktop(qtbot, fresh, show_dialogs=True)
    try:
        qtbot.waitUntil(lambda: d.onboarding is not None and d.onboarding.isVisible(), timeout=5000)
        d.toggle_popup()  # what the tray icon and the hotkey call
        assert not d.popup.isVisible() and d.onboarding.isVisible()
        d.onboarding.reject()
        assert not d.first_run
        qtbot.waitUntil(d.popup.isVisible, timeout=5000)  # asked for during the flow: opens after it
    finally:
        close_desktop(d)
