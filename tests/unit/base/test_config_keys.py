"""Settings and API keys: validation, env overrides, keyring, no plaintext fallback."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from memtray.core.base import config as cfgmod
from memtray.core.base import keys
from memtray.core.base.errors import ConfigError, KeyringError, NoSecureKeyring
from memtray.core.base.home import Home
from memtray.core.cli import main as cli

from tests.support import MemoryKeyring


def test_set_get_validate_and_env_override(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    cfgmod.set_value(home, "memory_window", "40")
    cfgmod.set_value(home, "drop_policy", "review")
    cfgmod.set_value(home, "model", "anthropic/claude-x")
    cfg = cfgmod.load(home)
    assert cfg.memory_window == 40 and cfg.drop_policy == "review" and cfg.model == "anthropic/claude-x"
    assert (home.config.stat().st_mode & 0o777) == 0o600
    for key, bad in [("memory_window", "lots"), ("memory_window", "2"), ("drop_policy", "forget"),
                     ("timezone", "Mars/Olympus"), ("nope", "1"), ("launch_at_login", "maybe")]:
        with pytest.raises(ConfigError):
            cfgmod.set_value(home, key, bad)
    assert cfgmod.load(home).memory_window == 40  # nothing changed by the failures
    monkeypatch.setenv("MEMTRAY_MODEL", "openai/override")
    monkeypatch.setenv("MEMTRAY_API_BASE", "http://127.0.0.1:9/v1")
    over = cfgmod.load(home)
    assert over.model == "openai/override" and over.api_base == "http://127.0.0.1:9/v1"
    assert cfgmod.load(home, env=False).model == "anthropic/claude-x"


def test_broken_toml_is_a_clear_error(home: Home) -> None:
    home.create()
    home.config.write_text("model = [unclosed\n")
    with pytest.raises(ConfigError) as err:
        cfgmod.load(home)
    assert "not valid TOML" in str(err.value)


def test_config_cli(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["config", "set", "memory_window", "64"]) == 0
    assert cli.main(["config", "get", "memory_window"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "64"
    assert cli.main(["config", "set", "memory_window", "x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("memtray: error: memory_window must be a int")


def test_key_set_stores_in_keyring_not_on_disk(home: Home, keyring_backend: MemoryKeyring,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-ant-secret-value-123456\n"))
    assert cli.main(["key", "set", "anthropic"]) == 0
    assert keyring_backend.store[("memtray", "anthropic")] == "sk-ant-secret-value-123456"
    assert keys.get_key("anthropic") == "sk-ant-secret-value-123456"
    assert keys.key_source("anthropic") == "keyring"
    for p in Path(home.root).rglob("*"):
        if p.is_file():
            assert b"sk-ant-secret" not in p.read_bytes(), p
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    assert keys.get_key("anthropic") == "from-env"
    assert keys.key_source("anthropic").startswith("environment")


def test_no_secure_backend_refuses_plaintext(home: Home, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import keyring
    from keyring.backends import fail

    keyring.set_keyring(fail.Keyring())
    assert not keys.backend_is_secure()
    with pytest.raises(NoSecureKeyring):
        keys.set_key("openai", "sk-x")
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-test-should-not-be-stored\n"))
    assert cli.main(["key", "set", "openai"]) == 1
    err = capsys.readouterr().err
    assert "no secure keyring backend" in err and "OPENAI_API_KEY" in err
    assert keys.get_key("openai") is None


def test_keyring_refusing_access_is_a_clear_error(keyring_backend: MemoryKeyring) -> None:
    keyring_backend.refuse = True
    with pytest.raises(KeyringError):
        keys.get_key("openai")
    with pytest.raises(KeyringError):
        keys.set_key("openai", "sk-x")


def test_provider_of() -> None:
    assert keys.provider_of("openai/gpt-4o") == "openai"
    assert keys.provider_of("gpt-4o-mini") == "openai"
    assert keys.provider_of("claude-3-5-sonnet") == "anthropic"
    assert keys.provider_of("ollama_chat/llama3.2") == "ollama_chat"


def test_set_values_merges_onto_the_file_as_it_is_now(home: Home) -> None:
    """What another door wrote since this process last read the file stays (the desktop's
    Save writes only the fields the user edited)."""
    cfgmod.set_value(home, "model", "openai/from-the-terminal")
    home.config.write_text(home.config.read_text() + 'api_base = "http://127.0.0.1:9/v1"\n')  # a hand edit
    cfg = cfgmod.set_values(home, {"memory_window": 42, "drop_policy": "review"})
    on_disk = cfgmod.load(home, env=False)
    assert cfg == on_disk
    assert (on_disk.model, on_disk.api_base, on_disk.memory_window, on_disk.drop_policy) == (
        "openai/from-the-terminal", "http://127.0.0.1:9/v1", 42, "review")
    before = home.config.read_bytes()
    with pytest.raises(ConfigError):  # one bad value: nothing of the batch is written
        cfgmod.set_values(home, {"memory_window": 50, "drop_policy": "forget"})
    assert home.config.read_bytes() == before


@pytest.mark.parametrize("op", ["write", "fsync", "replace"])
def test_a_failed_save_leaves_config_toml_whole(home: Home, op: str) -> None:
    import errno

    from memtray.core.base.faults import Fault, fs_faults
    from memtray.core.base.fsutil import DiskError

    cfgmod.set_values(home, {"model": "openai/kept", "memory_window": 42})
    before = home.config.read_bytes()
    with fs_faults(Fault(op, errno.ENOSPC, partial=3 if op == "write" else None)), pytest.raises(DiskError):
        cfgmod.set_values(home, {"memory_window": 60})
    assert home.config.read_bytes() == before  # never empty, never torn
    assert [p.name for p in home.config.parent.iterdir() if p.name.endswith(".tmp")] == []
