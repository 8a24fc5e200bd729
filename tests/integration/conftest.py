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


#: the sync suites that also run on an encrypted remote (every home paired, every stream sealed):
#: streams, attachments, memory merges and conflicts, failures and purges. The others run in clear
#: only (kill -9 on encrypted remotes: tests/crash/test_kill_encrypted_sync.py).
BOTH_KINDS = frozenset({"test_sync_basic", "test_sync_attachments", "test_sync_conflicts", "test_sync_merge",
                        "test_sync_crisscross", "test_sync_history", "test_sync_failures", "test_sync_purge",
                        "test_sync_reminders", "test_sync_two_remotes", "test_sync_scopes"})


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if module in BOTH_KINDS and metafunc.definition.get_closest_marker("clear_only") is None:
        metafunc.fixturenames.append("remote_kind")
        metafunc.parametrize("remote_kind", ["clear", "encrypted"], indirect=True)


@pytest.fixture
def remote_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """The kind of remote this test's homes sync through (see ``BOTH_KINDS``)."""
    from tests.integration.sync_support import KIND

    before = KIND.encrypted
    KIND.encrypted = request.param == "encrypted"
    yield str(request.param)
    KIND.encrypted = before


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked ``encrypted_once`` runs on an encrypted remote with its first parameters only
    (its other cases differ in what the clear run already covers; CI time stays modest)."""
    seen: set[str] = set()
    keep, drop = [], []
    for item in items:
        # a test so marked in a BOTH_KINDS module is parametrized: it has a callspec
        if (isinstance(item, pytest.Function) and item.get_closest_marker("encrypted_once") is not None
                and item.callspec.params.get("remote_kind") == "encrypted"):
            base = item.nodeid.split("[", 1)[0]
            if base in seen:
                drop.append(item)
                continue
            seen.add(base)
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
