"""The quick chat's per-chat model switch: it offers the configured model and those the
scripted server lists at /v1/models; a choice goes to that conversation's turns (the
request names it), is remembered across a restart, and follows a choice made from the
terminal; an image goes to a model the user marked "Reads images"."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.base import config
from memtray.core.log import chats
from memtray.core.log.attachments import prepare
from memtray.desktop.qt import Qt

from tests.fixtures.llm_server import reply
from tests.fixtures.tiny_files import png
from tests.gui.conftest import close_desktop, make_desktop

pytestmark = pytest.mark.gui


def _switch(qtbot: Any, desktop: Any) -> Any:
    desktop.show_popup()
    switch = desktop.popup.model_switch
    qtbot.waitUntil(lambda: "openai/vision-7b" in switch.models(), timeout=15000)  # the server's list arrived
    return switch


def _choose(qtbot: Any, switch: Any, model: str) -> None:
    index = switch.findData(model)
    assert index >= 0, switch.models()
    with qtbot.waitSignal(switch.chosen, timeout=10000):
        switch.setCurrentIndex(index)
        switch.activated.emit(index)  # what a click on the entry emits


def test_a_chat_uses_the_model_chosen_for_it(qtbot: Any, configured_home: Any, llm_server: Any,
                                             runtime_dir: Any) -> None:
    llm_server.models = ["test-model", "vision-7b", "coder-1.5b"]
    d = make_desktop(qtbot, configured_home)
    try:
        switch = _switch(qtbot, d)
        assert switch.models() == ["", "openai/coder-1.5b", "openai/vision-7b"]  # the default first, no repeat
        assert switch.currentText() == "Default (test-model)"
        _choose(qtbot, switch, "openai/coder-1.5b")
        assert d.app.store.state.sessions["quick"].model == "openai/coder-1.5b"
        llm_server.script(reply("from coder"))
        pane = d.popup.pane
        with qtbot.waitSignal(pane.turn_done, timeout=90000):
            pane.send("hello")
        assert llm_server.chat_requests[-1]["model"] == "coder-1.5b"
        # from the terminal (or any door): the switch follows
        d.app.worker.call(lambda: chats.choose_model(d.app.store, "quick", "openai/elsewhere"))
        qtbot.waitUntil(lambda: switch.currentData() == "openai/elsewhere", timeout=10000)
        _choose(qtbot, switch, "openai/vision-7b")
    finally:
        close_desktop(d)
    d = make_desktop(qtbot, configured_home)  # remembered per session, across a restart
    try:
        switch = _switch(qtbot, d)
        qtbot.waitUntil(lambda: switch.currentData() == "openai/vision-7b", timeout=10000)
        _choose(qtbot, switch, "")
        assert d.app.store.state.sessions["quick"].model is None
        llm_server.script(reply("from the default"))
        with qtbot.waitSignal(d.popup.pane.turn_done, timeout=90000):
            d.popup.pane.send("and now?")
        assert llm_server.chat_requests[-1]["model"] == "test-model"
    finally:
        close_desktop(d)


def test_an_image_reaches_a_model_marked_reads_images(qtbot: Any, configured_home: Any, llm_server: Any,
                                                      runtime_dir: Any) -> None:
    llm_server.models = ["test-model", "vision-7b"]
    d = make_desktop(qtbot, configured_home)
    try:
        switch = _switch(qtbot, d)
        _choose(qtbot, switch, "openai/vision-7b")
        pane = d.popup.pane
        pane.attach.add(prepare(png(), "red.png"))
        pane.input.setPlainText("what is this?")
        pane.submit()
        assert "cannot read images" in pane.attach.error.text()  # litellm's list does not know it
        assert not llm_server.chat_requests
        config.set_value(configured_home, "vision_models", "openai/vision-7b")  # as Settings saves it
        d.app.settings.refresh()
        llm_server.script(reply("A red square."))
        with qtbot.waitSignal(pane.turn_done, timeout=90000):
            pane.submit()
        parts = [m for m in llm_server.chat_requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
        assert llm_server.chat_requests[-1]["model"] == "vision-7b"
        assert [p["type"] for p in parts] == ["text", "image_url"]
    finally:
        close_desktop(d)


def test_settings_marks_the_model_as_reading_images(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    desktop.open("settings")
    page = desktop.window.settings
    form = page.model_form
    assert form.model_string() == "openai/test-model" and not form.vision.isChecked()
    form.vision.setChecked(True)
    assert "Reads images" in page.result.text()  # an unsaved change, named
    with qtbot.waitSignal(page.saved, timeout=10000):
        qtbot.mouseClick(page.save_btn, Qt.MouseButton.LeftButton)
    assert config.load(desktop.app.home, env=False).vision_models == "openai/test-model"
    # each model keeps its own mark: another one typed shows unmarked, and marking it keeps both
    form.model.setCurrentText("llava:13b")
    assert not form.vision.isChecked()
    form.vision.setChecked(True)
    form.model.setCurrentText("test-model")
    assert form.vision.isChecked()
    assert page.edits()["vision_models"] == "openai/test-model,openai/llava:13b"
    page.revert_btn.click()
    assert page.edits() == {} and form.vision.isChecked()
    # the quick chat sends an image to the configured model now
    desktop.show_popup()
    pane = desktop.popup.pane
    pane.attach.add(prepare(png(), "red.png"))
    pane.input.setPlainText("what is this?")
    llm_server.script(reply("A red square."))
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        pane.submit()
    parts = [m for m in llm_server.chat_requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]


def test_the_wheel_over_the_switch_changes_nothing(qtbot: Any, configured_home: Any, llm_server: Any,
                                                   runtime_dir: Any) -> None:
    from tests.gui.test_settings_live import _wheel

    llm_server.models = ["test-model", "vision-7b"]
    d = make_desktop(qtbot, configured_home)
    try:
        switch = _switch(qtbot, d)
        d.popup.pane.input.setFocus()
        for notches in (-3, 3, -3):
            _wheel(switch, notches)
        assert switch.currentData() == "" and "quick" not in d.app.store.state.sessions
    finally:
        close_desktop(d)
