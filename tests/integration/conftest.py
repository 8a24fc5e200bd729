"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.consolidator import ScriptedConsolidator
from tests.fixtures.llm_server import ScriptedLLMServer


@pytest.fixture
def served(model: ScriptedConsolidator[Any]) -> Iterator[ScriptedLLMServer]:
    """The scripted server answering with the test module's own ``model`` fixture."""
    with ScriptedLLMServer(responder=model) as server:
        yield server
