"""Shared fixtures: an isolated data home, an in-memory keyring, the scripted LLM server."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # make `tests.fixtures` importable

pytest_plugins = ["tests.noskip"]  # MEMTRAY_NO_SKIPS=1 (CI): a skipped test is a failure

# Loopback must never go through a proxy; litellm must stay offline and quiet.
os.environ["NO_PROXY"] = "127.0.0.1,localhost"
os.environ["no_proxy"] = "127.0.0.1,localhost"
for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
    os.environ.pop(var, None)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.pop("MEMTRAY_MODEL", None)
os.environ.pop("MEMTRAY_API_BASE", None)
os.environ.pop("OPENAI_API_KEY", None)
os.environ.setdefault("MEMTRAY_NO_LOCAL_MODEL", "1")  # tests that want the offline model opt back in
os.environ.setdefault("MEMTRAY_NO_WARM", "1")  # no background instance unless a test starts one
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci", derandomize=True, max_examples=60, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from tests.support import MemoryKeyring  # noqa: E402


@pytest.fixture(autouse=True)
def _memory_keyring() -> Iterator[MemoryKeyring]:
    import keyring

    previous = keyring.get_keyring()
    kr = MemoryKeyring()
    keyring.set_keyring(kr)
    yield kr
    keyring.set_keyring(previous)


@pytest.fixture
def keyring_backend(_memory_keyring: MemoryKeyring) -> MemoryKeyring:
    return _memory_keyring


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from memtray.core.base.home import Home

    root = tmp_path / "home"
    monkeypatch.setenv("MEMTRAY_HOME", str(root))
    return Home.resolve(root)


@pytest.fixture
def llm_server() -> Iterator[object]:
    from tests.fixtures.llm_server import ScriptedLLMServer

    with ScriptedLLMServer() as server:
        yield server
