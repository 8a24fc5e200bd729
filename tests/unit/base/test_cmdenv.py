"""A forwarded command's environment: checked at the door, used for that command only (its
thread and the worker tasks it starts, never another command's), compared where litellm
reads the process's own."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from memtray.core.base import cmdenv, config, keys
from memtray.core.base.config import Config, Settings
from memtray.core.base.errors import LLMError
from memtray.core.base.home import Home
from memtray.core.base.redact import redact
from memtray.core.base.worker import Worker


def _env(**values: str) -> cmdenv.CommandEnv:
    return cmdenv.parse(cmdenv.collect(values, uses_model=True))


def test_only_model_settings_and_keys_are_carried_and_base_urls_only_as_digests() -> None:
    sent = cmdenv.collect({"MEMTRAY_MODEL": "openai/x", "OPENAI_API_KEY": "sk-a", "OPENAI_BASE_URL": "http://h/v1",
                           "AZURE_API_VERSION": "2024-01", "HOME": "/root", "PATH": "/bin", "ANTHROPIC_API_KEY": ""},
                          uses_model=False)
    assert sent["set"] == {"MEMTRAY_MODEL": "openai/x", "OPENAI_API_KEY": "sk-a"}
    assert sent["digests"] == {"OPENAI_BASE_URL": cmdenv.digest("http://h/v1"),
                               "AZURE_API_VERSION": cmdenv.digest("2024-01")}
    assert "http://h/v1" not in str(sent) and sent["model"] is False


@pytest.mark.parametrize("raw", [
    [],
    {"set": {"PATH": "/tmp/evil"}},  # only what chooses the model or its key
    {"set": {"LD_PRELOAD": "x.so"}},
    {"set": {"OPENAI_API_KEY": 3}},
    {"set": {"OPENAI_API_KEY": ""}},
    {"set": {"OPENAI_API_KEY": "a\0b"}},
    {"set": {"OPENAI_API_KEY": "k" * 10_000}},
    {"set": {f"P{i}_API_KEY": "k" for i in range(100)}},
    {"digests": {"OPENAI_BASE_URL": "not-a-digest"}},
    {"digests": {"OPENAI_API_KEY": cmdenv.digest("x")}},  # a key is carried, never compared
    {"model": "yes"},
    {"set": "OPENAI_API_KEY=x"},
])
def test_a_malformed_command_environment_is_refused_at_the_door(raw: Any) -> None:
    with pytest.raises(cmdenv.BadCommandEnv):
        cmdenv.parse(raw)


def test_a_carried_key_is_redacted_from_the_moment_it_arrives() -> None:
    secret = "sk-carried-" + "q7" * 12
    cmdenv.parse({"set": {"OPENAI_API_KEY": secret}})
    assert secret not in redact(f"the provider said: bad key {secret}")


def test_the_command_sees_its_own_values_and_nothing_leaks_out_of_its_scope(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-instance")
    monkeypatch.delenv("MEMTRAY_MODEL", raising=False)
    cfg = Config(model="openai/configured", api_base="http://configured/v1")
    seen: dict[str, Any] = {}
    with cmdenv.scope(_env(MEMTRAY_MODEL="openai/mine", OPENAI_API_KEY="sk-mine", MEMTRAY_API_BASE="http://m/v1")):
        seen["key"] = keys.get_key("openai")
        seen["source"] = keys.key_source("openai")
        seen["cfg"] = config.for_command(cfg)

        def other_thread() -> None:  # another command, served on another thread at the same time
            seen["other_key"] = keys.get_key("openai")
            seen["other_cfg"] = config.for_command(cfg)

        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert seen["key"] == "sk-mine" and seen["source"] == "environment (OPENAI_API_KEY)"
    assert (seen["cfg"].model, seen["cfg"].api_base) == ("openai/mine", "http://m/v1")
    assert seen["other_key"] == "sk-instance" and seen["other_cfg"] == cfg
    assert keys.get_key("openai") == "sk-instance" and config.for_command(cfg) == cfg  # after it


def test_what_the_command_does_not_set_comes_from_the_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-instance")
    with cmdenv.scope(_env(OPENAI_API_KEY="sk-mine")):
        assert keys.get_key("anthropic") == "sk-ant-instance"
        assert config.for_command(Config(model="openai/configured")).model == "openai/configured"


def test_the_worker_tasks_a_command_starts_see_its_environment() -> None:
    worker = Worker()
    try:
        async def key() -> str | None:
            return keys.get_key("openai")

        with cmdenv.scope(_env(OPENAI_API_KEY="sk-for-the-task")):
            assert worker.run(key()) == "sk-for-the-task"
        assert worker.run(key()) is None  # the next task, from no command, does not
    finally:
        worker.stop()


def test_live_settings_show_the_commands_model_without_changing_the_instances(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    Home.create(home)
    config.set_value(home, "model", "openai/configured")
    settings = Settings(home, config.load(home))
    heard: list[str] = []
    settings.subscribe(lambda _old, new: heard.append(new.model))
    with cmdenv.scope(_env(MEMTRAY_MODEL="openai/mine")):
        assert settings.current.model == "openai/mine"
        assert config.load(home).model == "openai/mine"  # `config get model`, forwarded, says so too
        assert config.load(home, command=False).model == "openai/configured"
        config.set_value(home, "temperature", 0.3)
        settings.refresh()  # a hand edit picked up while a command with its own model runs
    assert settings.current.model == "openai/configured" and settings.current.temperature == 0.3
    assert heard == ["openai/configured"]  # listeners (the LLM client) got the instance's model


def test_process_only_variables_are_compared_strictly_for_the_background_instance() -> None:
    mine = {"OPENAI_BASE_URL": "http://a/v1", "AZURE_API_VERSION": "v1"}
    same = cmdenv.parse(cmdenv.collect(mine, uses_model=True))
    assert cmdenv.compare(same, strict=True, environ=mine).differs == ()
    other = cmdenv.parse(cmdenv.collect({"OPENAI_BASE_URL": "http://b/v1"}, uses_model=True))
    assert cmdenv.compare(other, strict=False, environ=mine).differs == ("OPENAI_BASE_URL",)
    # strict: also what only the instance has (a variable of whichever command started it)
    assert cmdenv.compare(other, strict=True, environ=mine).differs == ("AZURE_API_VERSION", "OPENAI_BASE_URL")
    assert cmdenv.compare(cmdenv.parse(None), strict=False, environ=mine).differs == ()


def test_a_model_call_with_a_provider_variable_the_instance_cannot_take_fails_naming_it() -> None:
    env = cmdenv.compare(cmdenv.parse(cmdenv.collect({"OPENAI_BASE_URL": "http://b/v1"}, uses_model=False)),
                         strict=False, environ={})
    cmdenv.check_model_call()  # outside a command: nothing to check
    with cmdenv.scope(env), pytest.raises(LLMError, match="OPENAI_BASE_URL is not the same"):
        cmdenv.check_model_call()


def test_the_background_instance_is_started_without_what_commands_carry() -> None:
    env = {"MEMTRAY_MODEL": "x", "OPENAI_API_KEY": "k", "MY_SERVICE_API_KEY": "k2", "MEMTRAY_API_BASE": "b",
           "OPENAI_BASE_URL": "u", "PATH": "/bin"}
    assert cmdenv.without_carried(env) == {"OPENAI_BASE_URL": "u", "PATH": "/bin"}
