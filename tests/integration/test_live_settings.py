"""Settings changed while an instance runs take effect in it at once, through any door.

A real `memtray daemon` holds the home; `memtray config set` runs as another
process; the next forwarded `memtray ask` (real litellm against the scripted
server) must use the new model, and the next consolidation the new drop policy.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from memtray.core.base import config as cfgmod
from memtray.core.base.config import Config, Settings
from memtray.core.base.home import Home

from tests.fixtures.llm_server import JSON, Response, ScriptedLLMServer, echo, tool_call
from tests.fixtures.receipting import with_receipts
from tests.support import ROOT, cli_env, run_cli

ENV = {"OPENAI_API_KEY": "sk-test"}


def _set(home: Home, key: str, value: str) -> subprocess.CompletedProcess[str]:
    out = run_cli(home.root, "config", "set", key, value, **ENV)
    assert out.returncode == 0, out.stderr
    return out


@pytest.fixture
def daemon(tmp_path: Path, llm_server: ScriptedLLMServer) -> Iterator[tuple[Home, subprocess.Popen[str]]]:
    home = Home(tmp_path / "home")
    for key, value in (("model", "openai/first-model"), ("api_base", llm_server.base_url), ("llm_retries", "0")):
        _set(home, key, value)
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "daemon"], env=cli_env(home.root, **ENV),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "memtray daemon: ready" in line, line + proc.stderr.read()
    try:
        yield home, proc
    finally:
        proc.terminate()
        proc.communicate(timeout=120)


def _models(server: ScriptedLLMServer) -> list[str]:
    return [r.json.get("model", "") for r in server.requests]


def test_config_set_model_reaches_the_next_ask_of_a_running_daemon(
    daemon: tuple[Home, subprocess.Popen[str]], llm_server: ScriptedLLMServer
) -> None:
    home, _proc = daemon
    llm_server.responder = echo
    first = run_cli(home.root, "ask", "one", **ENV)
    assert first.returncode == 0, first.stderr
    said = _set(home, "model", "openai/second-model")
    assert said.stdout.strip() == 'model = "openai/second-model"'
    second = run_cli(home.root, "ask", "two", **ENV)
    assert second.returncode == 0, second.stderr
    assert _models(llm_server)[-2:] == ["first-model", "second-model"]


def _consolidate(home: Home, server: ScriptedLLMServer, memory: str) -> None:
    """Two messages, then a consolidation whose model rewrites memory as ``memory``."""

    def respond(req: JSON) -> Response:
        if any(t.get("function", {}).get("name") == "save_memory" for t in req.get("tools") or []):
            return tool_call("save_memory", {"history_entry": "[2026-12-01 10:00] Talked about home.",
                                             "memory_update": memory, "removed_facts": []})
        return echo(req)

    server.responder = with_receipts(respond)
    # the facts are said in the conversation: a fact no message supports is held, not written
    for text in ("I live in Lyon", "and I have a cat called Tom"):
        assert run_cli(home.root, "ask", text, **ENV).returncode == 0
    out = run_cli(home.root, "consolidate", "--session", "cli", **ENV)
    assert out.returncode == 0, out.stdout + out.stderr


def test_config_set_drop_policy_reaches_the_next_consolidation(
    daemon: tuple[Home, subprocess.Popen[str]], llm_server: ScriptedLLMServer
) -> None:
    home, _proc = daemon
    _consolidate(home, llm_server, "# Memory\n\n## Home\n- Lives in Lyon\n- Has a cat called Tom\n")
    # under `keep` (the default) a fact the model drops without a reason is put back
    _consolidate(home, llm_server, "# Memory\n\n## Home\n- Lives in Lyon\n")
    assert "cat called Tom" in (home.memory / "MEMORY.md").read_text()
    _set(home, "drop_policy", "review")
    # under `review` it is not put back: it leaves memory and waits in the review queue
    _consolidate(home, llm_server, "# Memory\n\n## Home\n- Lives in Lyon\n")
    assert "cat called Tom" not in (home.memory / "MEMORY.md").read_text()
    review = run_cli(home.root, "memory", "review", "--json", **ENV)
    assert review.returncode == 0, review.stderr
    assert "cat called Tom" in review.stdout


def test_a_hand_edit_of_config_toml_is_picked_up(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    home.create()
    settings = Settings(home, cfgmod.load(home))
    heard: list[tuple[str, str]] = []
    settings.subscribe(lambda old, new: heard.append((old.drop_policy, new.drop_policy)))
    assert settings.refresh() == []
    home.config.write_text('drop_policy = "review"\n')
    assert settings.refresh() == ["drop_policy"]
    assert settings.current.drop_policy == "review" and heard == [("keep", "review")]
    home.config.write_text("drop_policy = [not toml\n")  # a broken edit keeps what runs
    assert settings.refresh() == [] and settings.current.drop_policy == "review"
    assert settings.replace(Config(model="openai/x")) == ["model", "drop_policy"]
