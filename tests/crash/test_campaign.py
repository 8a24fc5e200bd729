"""The crash campaign: SIGKILL real memtray commands at random moments, check after each.

Commands run through the CLI entry (``ask`` with and without the ``remember`` tool,
``consolidate``, ``memory rollback``, ``restore-fact``, ``redo``, ``rebuild`` and
``undo``) in children of the fork server, against real litellm and
the scripted model server. After every kill the home is opened as the next command
would open it and checked (:func:`tests.crash.harness.run_campaign`).

CI runs ``MEMTRAY_CAMPAIGN_KILLS`` (default 100) kills; ``bench/crash_campaign.py``
(1000 kills) or ``MEMTRAY_CAMPAIGN_KILLS=1000`` runs the campaign docs/RELIABILITY.md reports.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.crash.forkserver import OPS
from tests.crash.harness import ForkServer, campaign_responder, run_campaign
from tests.fixtures.llm_server import ScriptedLLMServer

KILLS = int(os.environ.get("MEMTRAY_CAMPAIGN_KILLS", "100"))


@pytest.mark.slow
def test_crash_campaign(tmp_path: Path) -> None:
    kills = KILLS
    with ScriptedLLMServer(responder=campaign_responder) as model, ForkServer(preload_llm=True) as server:
        result = run_campaign(server, tmp_path / "home", model.base_url, kills=kills, seed=20261201)
        assert not model.errors
    assert result.kills >= kills and not result.broken  # more when a command needed topping up
    # every command really runs: it ran to its end (status 0) at least once, and was
    # killed while running at least once (a command refused before its work counts neither)
    assert set(OPS) <= {op for op, n in result.succeeded.items() if n}, (result.succeeded, result.refused)
    assert set(OPS) <= {op for op, n in result.killed.items() if n}, (result.killed, result.refused)
    print(f"\ncrash campaign: {result.kills} SIGKILLs (+{result.finished} runs that finished first), "
          f"{result.events} events, {result.commits} memory commits; commands: {result.commands}; "
          f"killed while running: {result.killed}; finished: {result.succeeded}; refused: {result.refused}")
