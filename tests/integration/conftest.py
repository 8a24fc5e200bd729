"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.consolidator import ScriptedConsolidator
from tests.fixtures.llm_server import ScriptedLLMServer
from tests.support import short_dir


@pytest.fixture
def served(model: ScriptedConsolidator[Any]) -> Iterator[ScriptedLLMServer]:
    """The scripted server answering with the test module's own ``model`` fixture."""
    with ScriptedLLMServer(responder=model) as server:
        yield server


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The test's own short, private XDG_RUNTIME_DIR, where instances listen."""
    for d in short_dir("mtrun"):
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(d))
        yield d
