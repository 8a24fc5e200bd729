"""The smaller items of round three: Escape asks before a typed first-run set-up is thrown
away; a window opened from the quick chat is not left behind it; the MCP snippet names
the running memtray by its absolute path."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.desktop.qt import Qt

pytestmark = pytest.mark.gui


def test_escape_asks_before_discarding_a_typed_setup(qtbot: Any, desktop: Any) -> None:
    from memtray.desktop.onboarding import Onboarding

    dlg = Onboarding(desktop.ctx)
    qtbot.addWidget(dlg)
    asked: list[str] = []
    answer = [False]

    def confirm(_parent: Any, title: str, _text: str) -> bool:
        asked.append(title)
        return answer[0]

    dlg.confirm = confirm
    dlg.show()
    qtbot.waitExposed(dlg)
    qtbot.keyClick(dlg, Qt.Key.Key_Escape)  # nothing typed: it closes as before
    assert not dlg.isVisible() and asked == []
    dlg = Onboarding(desktop.ctx)
    qtbot.addWidget(dlg)
    dlg.confirm = confirm
    dlg.show()
    qtbot.waitExposed(dlg)
    dlg.form.provider.setCurrentIndex(dlg.form.provider.findData("compatible"))
    dlg.form.api_base.setText("http://192.168.1.20:1234/v1")
    qtbot.keyClick(dlg, Qt.Key.Key_Escape)
    assert dlg.isVisible() and asked == ["Discard the set-up?"]
    assert dlg.form.api_base.text() == "http://192.168.1.20:1234/v1"  # kept
    dlg.close()  # the close button asks too
    assert dlg.isVisible() and len(asked) == 2
    answer[0] = True
    qtbot.keyClick(dlg, Qt.Key.Key_Escape)
    assert not dlg.isVisible()


def test_a_window_opened_from_the_popup_comes_to_the_front(qtbot: Any, desktop: Any) -> None:
    popup = desktop.popup
    popup.present()
    qtbot.waitUntil(popup.isVisible, timeout=5000)
    desktop.ctx.nav.open.emit("settings", "")  # the error card's "Open settings"
    qtbot.waitUntil(lambda: desktop.window is not None and desktop.window.isVisible(), timeout=10000)
    assert not popup.isVisible()  # it stays on top of everything: left open, it hid the window
    assert desktop.window.stack.currentWidget() is desktop.window.settings


def test_the_mcp_snippet_names_the_running_memtray_by_its_absolute_path(qtbot: Any, desktop: Any) -> None:
    import json
    import os

    from memtray.desktop.mcp_panel import mcp_snippet

    assert json.loads(mcp_snippet(["/home/u/.venvs/memtray/bin/memtray"])) == {
        "mcpServers": {"memtray": {"command": "/home/u/.venvs/memtray/bin/memtray", "args": ["mcp"]}}}
    desktop.open("settings")
    shown = json.loads(desktop.window.settings.mcp.snippet.toPlainText())["mcpServers"]["memtray"]
    assert os.path.isabs(shown["command"]) and os.path.exists(shown["command"])
    assert shown["args"][-1] == "mcp"


def test_the_mcp_snippet_limits_a_client_to_one_scope_and_to_reading(qtbot: Any, desktop: Any) -> None:
    """The user gives another assistant one scope, read-only or not, in the snippet it copies."""
    import json

    from memtray.core.memory import scopes

    app = desktop.app
    app.worker.call(lambda: scopes.choose(app.store, "w", "work"))
    app.worker.call(lambda: scopes.choose(app.store, "f", "family"))
    desktop.open("settings")
    section = desktop.window.settings.mcp
    section.refresh()
    qtbot.waitUntil(lambda: section.scope_box.count() == 3, timeout=10000)
    assert _items(section.scope_box) == ["All of it", "Only the scope family", "Only the scope work"]
    section.scope_box.setCurrentIndex(2)
    section.read_only.setChecked(True)
    entries = json.loads(section.snippet.toPlainText())["mcpServers"]
    assert list(entries) == ["memtray-work"]
    assert entries["memtray-work"]["args"][-4:] == ["mcp", "--scope", "work", "--read-only"]
    section.refresh()  # a new state keeps the choice
    with qtbot.waitSignal(section.shown, timeout=10000):
        section.refresh()
    assert section.scope_box.currentData() == "work"
    section.read_only.setChecked(False)
    section.scope_box.setCurrentIndex(0)
    entries = json.loads(section.snippet.toPlainText())["mcpServers"]
    assert list(entries) == ["memtray"] and entries["memtray"]["args"][-1] == "mcp"
    # what the snippet says is what the CLI takes: the same flags parse
    from memtray.core.cli.main import build_parser

    args = build_parser().parse_args(["mcp", "--scope", "work", "--read-only"])
    assert args.scope == "work" and args.read_only


def _items(combo: Any) -> list[str]:
    return [combo.itemText(i) for i in range(combo.count())]


def test_the_model_list_comes_from_the_servers_v1_models(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    llm_server.models = ["test-model", "qwen2.5-7b-instruct", "llava-1.6"]
    desktop.open("settings")
    page = desktop.window.settings
    form = page.model_form
    assert form.current_provider().id == "compatible"
    qtbot.waitUntil(lambda: _items(form.model) == ["llava-1.6", "qwen2.5-7b-instruct", "test-model"], timeout=10000)
    assert form.model.currentText() == "test-model"  # the configured one stays chosen
    assert "3 models" in form.models_status.text()
    assert page.edits() == {}  # filling the list is no edit
    llm_server.models = ["test-model", "mistral-small"]
    form.fetch_models()  # cached: no new request
    assert "llava-1.6" in _items(form.model)
    qtbot.mouseClick(form.refresh_btn, Qt.MouseButton.LeftButton)  # ↻ asks again
    qtbot.waitUntil(lambda: _items(form.model) == ["mistral-small", "test-model"], timeout=10000)
    form.api_base.setText("http://127.0.0.1:9/v1")
    form.fetch_models()
    qtbot.waitUntil(lambda: "Could not read the server's models" in form.models_status.text(), timeout=15000)
    assert "cannot reach" in form.models_status.text()
