"""Settings: key through the keyring (on the worker), refusals, test connection, save, presets."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.core.base import config
from memtray.desktop import providers
from memtray.desktop.qt import Qt

from tests.fixtures.llm_server import error, reply
from tests.fixtures.receipting import receipted

pytestmark = pytest.mark.gui


def _settings(desktop: Any) -> Any:
    desktop.open("settings")
    return desktop.window.settings


def test_store_key_goes_to_the_keyring(qtbot: Any, desktop: Any, keyring_backend: Any) -> None:
    page = _settings(desktop)
    form = page.model_form
    form.key.setText("sk-live-123")
    qtbot.mouseClick(form.store_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Stored" in form.key_status.text(), timeout=10000)
    assert keyring_backend.store[("memtray", "openai")] == "sk-live-123"
    assert form.key.text() == ""  # not left in the widget


def test_refusing_keyring_is_reported(qtbot: Any, desktop: Any, keyring_backend: Any) -> None:
    keyring_backend.refuse = True
    form = _settings(desktop).model_form
    form.key.setText("sk-nope")
    with qtbot.waitSignal(form.key_stored, timeout=10000) as sig:
        form.store_key()
    assert sig.args[0] is False
    assert "refused" in form.key_status.text()
    assert keyring_backend.store == {}


def test_no_secure_keyring_is_said_plainly_where_a_key_is_needed(
    qtbot: Any, desktop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtray.core.base import keys

    monkeypatch.setattr(keys, "backend_is_secure", lambda: False)
    form = _settings(desktop).model_form
    form.check_keyring()
    qtbot.waitUntil(lambda: not form.store_btn.isEnabled(), timeout=10000)
    qtbot.waitUntil(lambda: "environment" in form.key_status.text(), timeout=10000)
    assert not form.keyring_warning.isVisibleTo(form)  # OPENAI_API_KEY is used: nothing to store
    monkeypatch.delenv("OPENAI_API_KEY")
    form.provider.setCurrentIndex(form.provider.findData("openai"))  # needs a key; the status is read again
    qtbot.waitUntil(lambda: form.keyring_warning.isVisibleTo(form), timeout=10000)
    assert "No secure keyring" in form.keyring_warning.text()
    assert "OPENAI_API_KEY" in form.keyring_warning.text()
    assert "keyring.backends" not in form.keyring_warning.text()  # the class name is no words
    form.provider.setCurrentIndex(form.provider.findData("ollama"))  # a local server needs no key
    qtbot.waitUntil(lambda: not form.keyring_warning.isVisibleTo(form), timeout=10000)


def test_test_connection_uses_the_form_values(qtbot: Any, desktop: Any, llm_server: Any) -> None:
    form = _settings(desktop).model_form
    llm_server.script(reply("OK"))
    # the first request imports litellm on the worker: slow on a loaded machine, so wait long
    with qtbot.waitSignal(form.tested, timeout=90000) as sig:
        qtbot.mouseClick(form.test_btn, Qt.MouseButton.LeftButton)
    assert sig.args == [True, "OK"]
    assert "Connected" in form.test_result.text()
    req = llm_server.chat_requests[-1]
    assert req["model"] == "test-model" and req["max_tokens"] == 16
    llm_server.script(error(401))
    with qtbot.waitSignal(form.tested, timeout=20000) as sig:
        form.test()
    assert sig.args[0] is False and "key" in form.test_result.text().lower()


def test_save_writes_config_and_reconfigures(qtbot: Any, desktop: Any) -> None:
    page = _settings(desktop)
    page.memory_window.setValue(42)
    page.drop_policy.setCurrentIndex(page.drop_policy.findData("review"))
    with qtbot.waitSignal(page.saved, timeout=10000):
        qtbot.mouseClick(page.save_btn, Qt.MouseButton.LeftButton)
    on_disk = config.load(desktop.app.home)
    assert on_disk.memory_window == 42 and on_disk.drop_policy == "review"
    assert desktop.app.config.memory_window == 42 and desktop.app.agent.config.drop_policy == "review"


def test_launch_at_login_writes_the_autostart_file(qtbot: Any, desktop: Any, tmp_path: Any) -> None:
    page = _settings(desktop)
    page.launch.setChecked(True)
    with qtbot.waitSignal(page.saved, timeout=10000):
        page.save()
    entry = tmp_path / "xdg-config" / "autostart" / "memtray.desktop"
    assert entry.exists() and "Exec=" in entry.read_text()
    page.launch.setChecked(False)
    with qtbot.waitSignal(page.saved, timeout=10000):
        page.save()
    assert not entry.exists()


def test_hotkey_change_is_validated_and_reapplied(qtbot: Any, desktop: Any) -> None:
    from memtray.desktop.qt import QKeySequence

    page = _settings(desktop)
    page.hotkey.setKeySequence(QKeySequence("Ctrl+Shift+M"))
    with qtbot.waitSignal(desktop.hotkeys.status_changed, timeout=10000) as sig:
        page.save()
    assert sig.args[0].hotkey == "Ctrl+Shift+M"
    assert config.load(desktop.app.home).hotkey == "Ctrl+Shift+M"
    page.hotkey.setKeySequence(QKeySequence("M"))
    page.save()
    assert "modifier" in page.result.text()


def test_provider_presets_round_trip() -> None:
    for model, base, pid, name in [
        ("openai/gpt-4o-mini", "", "openai", "gpt-4o-mini"),
        ("anthropic/claude-sonnet-4-5", "", "anthropic", "claude-sonnet-4-5"),
        ("openrouter/openai/gpt-4o-mini", "", "openrouter", "openai/gpt-4o-mini"),
        ("ollama_chat/llama3.2", "http://localhost:11434", "ollama", "llama3.2"),
        ("openai/qwen", "http://localhost:8000/v1", "compatible", "qwen"),
        ("gemini/gemini-2.0-flash", "", "custom", "gemini/gemini-2.0-flash"),
    ]:
        p, n = providers.detect(model, base)
        assert (p.id, n) == (pid, name)
        assert providers.model_string(p, n) == model


def test_onboarding_saves_model_and_key(qtbot: Any, desktop: Any, keyring_backend: Any, llm_server: Any) -> None:
    from memtray.desktop.onboarding import Onboarding

    dlg = Onboarding(desktop.ctx)
    qtbot.addWidget(dlg)
    dlg.form.provider.setCurrentIndex(dlg.form.provider.findData("anthropic"))
    dlg.form.model.setCurrentText("claude-haiku-4-5")
    dlg.form.key.setText("sk-ant-1")
    with qtbot.waitSignal(dlg.completed, timeout=10000) as sig:
        dlg.finish()
    assert sig.args[0].model == "anthropic/claude-haiku-4-5" and sig.args[0].onboarded
    assert keyring_backend.store[("memtray", "anthropic")] == "sk-ant-1"


@pytest.mark.parametrize("policy", ["keep", "review"])
def test_drop_policy_label_says_what_a_consolidation_does(
    qtbot: Any, desktop: Any, llm_server: Any, policy: str
) -> None:
    """The words in Settings are checked against what the guard really does with them."""
    from tests.fixtures.llm_server import tool_call

    app = desktop.app
    mem = app.memory
    app.worker.call(lambda: mem.write("# About the user\n\n- Likes green tea\n- Lives in Lyon\n- Has a cat\n",
                                      reason="agent", source="model"))
    page = _settings(desktop)
    page.drop_policy.setCurrentIndex(page.drop_policy.findData(policy))
    label = page.drop_policy.currentText()
    help_text = page.drop_policy_help.text()
    if app.config.drop_policy != policy:
        with qtbot.waitSignal(page.saved, timeout=10000):
            page.save()
    assert app.config.drop_policy == policy
    llm_server.script(reply("noted"))
    pane = desktop.popup.pane
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        pane.send("My cat went to live with my sister")
    # "Lives in Lyon" vanishes without a reason; "Has a cat" is removed with one
    llm_server.script(receipted(tool_call("save_memory", {
        "history_entry": "Talked about the cat.", "memory_update": "# About the user\n\n- Likes green tea\n",
        "removed_facts": [{"fact": "Has a cat", "reason": "the cat lives with the sister now"}],
    })))
    app.run(app.consolidation.archive("quick"))
    memory = (app.home.memory / "MEMORY.md").read_text(encoding="utf-8")
    held = [d for d in app.worker.call(mem.dropped) if d["text"] == "Lives in Lyon"]
    assert "Has a cat" not in memory  # an explained removal applies under both policies
    assert "Removals the model explains" in help_text
    if policy == "keep":
        assert "Put back" in label and "without saying why" in label
        assert "Lives in Lyon" in memory
        assert not held
    else:
        assert "Let unexplained drops go" in label and "review" in label
        assert "Lives in Lyon" not in memory
        assert held and not held[0]["present_now"]
        desktop.open("memory")
        browser = desktop.window.memory
        qtbot.waitUntil(lambda: browser.review_btn.text() == "Review (1)", timeout=10000)
