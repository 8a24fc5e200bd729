"""The model catalogue (resources/models/catalogue.toml) and the capability bar (capability.toml)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from memtray.core.base.errors import MemtrayError
from memtray.core.llm import capability, catalogue, localmodel


def test_every_entry_is_complete_and_points_at_the_hub() -> None:
    models = catalogue.models()
    assert {"qwen2.5-3b-instruct", "llama3.2-3b-instruct", "qwen2.5-1.5b-instruct", "smollm2"} <= {m.id for m in models}
    for m in models:
        assert m.url(catalogue.DEFAULT_HUB).startswith("https://huggingface.co/") and "/resolve/" in m.url("x")
        assert m.url(catalogue.DEFAULT_HUB).endswith("/" + m.file)
        assert len(m.sha256) == 64 and m.size > 50_000_000 and m.runs_as == "local/" + m.id
    assert models[0].recommended  # the first one offered is a recommended one
    assert [m.id for m in models if m.bundled] == ["smollm2"]


def test_the_bundled_entry_is_exactly_the_file_memtray_local_installs() -> None:
    path = localmodel.gguf_path()
    if path is None:
        pytest.skip(f"offline model not installed: {localmodel.missing(check_disabled=False)}")
    entry = catalogue.find("smollm2")
    assert path.name == entry.file and path.stat().st_size == entry.size
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry.sha256


def test_a_malformed_entry_is_refused() -> None:
    good = {"id": "x", "name": "X", "params_b": 1, "quant": "Q4", "file": "x.gguf", "path": "a/b/resolve/main/x.gguf",
            "size": 10, "sha256": "0" * 64, "license": "MIT", "context": 4096, "about": "."}
    assert catalogue._entry(good).id == "x"
    for bad in ({"sha256": "abc"}, {"path": "../etc/passwd"}, {"path": "https://evil/x.gguf"}, {"file": "x.bin"},
                {"size": 0}, {"id": "../x"}):
        with pytest.raises(ValueError):
            catalogue._entry({**good, **bad})
    with pytest.raises(ValueError):
        catalogue._entry({k: v for k, v in good.items() if k != "sha256"})


def test_the_hub_is_overridable_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(catalogue.HUB_ENV, raising=False)
    assert catalogue.hub() == "https://huggingface.co"
    assert catalogue.hub("https://mirror.example/") == "https://mirror.example"
    monkeypatch.setenv(catalogue.HUB_ENV, "http://127.0.0.1:8000")
    assert catalogue.hub("https://mirror.example") == "http://127.0.0.1:8000"
    monkeypatch.setenv(catalogue.HUB_ENV, "file:///etc")
    with pytest.raises(MemtrayError):
        catalogue.hub()


def test_find_accepts_the_model_string_and_names_unknown_ids() -> None:
    assert catalogue.find("local/qwen2.5-3b-instruct").id == "qwen2.5-3b-instruct"
    with pytest.raises(catalogue.UnknownModel):
        catalogue.find("gpt-5")


def test_local_models_resolve_to_their_downloaded_file(tmp_path: Path) -> None:
    entry = catalogue.find("qwen2.5-1.5b-instruct")
    assert localmodel.resolve(entry.runs_as, tmp_path) is None
    (tmp_path / entry.file).write_bytes(b"x" * 10)  # incomplete: not a download that finished
    assert localmodel.resolve(entry.runs_as, tmp_path) is None
    (tmp_path / "my-own.gguf").write_bytes(b"GGUF")
    assert localmodel.resolve("local/my-own", tmp_path) == tmp_path / "my-own.gguf"
    for bad in ("local/../my-own", "local/", "openai/my-own", "local/.hidden"):
        assert localmodel.resolve(bad, tmp_path) is None
    assert "memtray model download qwen2.5-1.5b-instruct" in localmodel.not_found(entry.runs_as)


@pytest.mark.parametrize(("model", "size", "unattended"), [
    ("local/smollm2", 0.135, False),
    ("local/qwen2.5-1.5b-instruct", 1.54, False),
    ("local/qwen2.5-3b-instruct", 3.09, True),
    ("local/llama3.2-3b-instruct", 3.21, True),
    ("ollama_chat/qwen2.5:1.5b", 1.5, False),
    ("ollama_chat/smollm2:135m", 0.135, False),
    ("ollama_chat/llama3.2", 3.2, True),
    ("ollama_chat/llama3.2:1b", 1.0, False),
    ("openai/Qwen2.5-3B-Instruct-Q4_K_M.gguf", 3.0, True),
    ("openrouter/meta-llama/llama-3.2-1b-instruct", 1.0, False),
    ("openai/gpt-4o-mini", None, True),
    ("anthropic/claude-sonnet-4-5", None, True),
])
def test_the_bar(model: str, size: float | None, unattended: bool) -> None:
    v = capability.judge(model)
    assert v.params_b == size and v.unattended is unattended
    if not unattended:
        assert "too small to judge facts" in v.reason


def test_the_setting_overrides_the_bar() -> None:
    assert capability.judge("local/smollm2", "never").unattended
    assert not capability.judge("openai/gpt-4o-mini", "always").unattended


def test_the_new_settings_are_validated(tmp_path: Path) -> None:
    from memtray.core.base import config as cfgmod
    from memtray.core.base.errors import ConfigError
    from memtray.core.base.home import Home

    home = Home.resolve(tmp_path / "h")
    assert cfgmod.load(home).hold_consolidations == "auto" and cfgmod.load(home).model_hub == ""
    cfgmod.set_value(home, "hold_consolidations", "always")
    cfgmod.set_value(home, "model_hub", "https://mirror.example/hf")
    for key, bad in (("hold_consolidations", "sometimes"), ("model_hub", "ftp://x"), ("model_hub", "mirror")):
        with pytest.raises(ConfigError):
            cfgmod.set_value(home, key, bad)
    cfg = cfgmod.load(home)
    assert (cfg.hold_consolidations, cfg.model_hub) == ("always", "https://mirror.example/hf")
