"""Background embedding runs only in long-lived instances: a one-shot command never
starts it (so it cannot delay or outlive the command), the daemon, the warm instance
and the desktop do (``App.start_background``). Real processes and real litellm
against the scripted server's /v1/embeddings."""

from __future__ import annotations

import json
from typing import Any

from memtray.core.app import App
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.events import Message
from memtray.core.log.store import Store

from tests.fixtures.llm_server import ScriptedLLMServer
from tests.support import run_cli

TEXTS = [f"note {i}: I went running by the lake, {i} km" for i in range(12)]


def seed(home: Home) -> None:
    with Store.open(home) as store:
        for t in TEXTS:
            store.append(Message(role="user", content=t), session="cli")


def use_embeddings(home: Home, base_url: str) -> None:
    home.create()
    home.config.write_text(f'embedding_model = "openai/test-embedding"\nembedding_api_base = "{base_url}"\n')


def inputs(server: ScriptedLLMServer) -> list[list[str]]:
    out = []
    for r in server.embedding_requests:
        inp = r.json["input"]
        out.append([inp] if isinstance(inp, str) else list(inp))
    return out


def test_a_one_shot_command_never_embeds_the_history(home: Home, llm_server: ScriptedLLMServer) -> None:
    seed(home)
    use_embeddings(home, llm_server.base_url)
    proc = run_cli(home.root, "history", "search", "--json", "--mode", "keyword", "lake")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == len(TEXTS)
    assert inputs(llm_server) == []  # nothing was embedded in the background
    proc = run_cli(home.root, "history", "search", "--json", "jogging")
    assert proc.returncode == 0, proc.stderr
    # hybrid embeds nothing of the history; and with no entry embedded yet not even the query,
    # which could match no vector
    assert inputs(llm_server) == []
    status = json.loads(run_cli(home.root, "history", "embed", "--status", "--json").stdout)
    assert status["done"] == 0 and status["total"] == len(TEXTS) and status["running"] is False

    # the same in-process: a plain App (what every one-shot command opens) has no backfill
    app = App.open(home)
    try:
        assert app.search.embedding_task is None
        app.write(lambda: app.store.append(Message(role="user", content="one more"), session="cli"))
        assert app.search.embedding_task is None  # an append does not start one either
    finally:
        app.close()
    assert inputs(llm_server) == []


def test_a_long_lived_instance_embeds_in_the_background(home: Home, llm_server: ScriptedLLMServer) -> None:
    seed(home)
    cfg = Config(embedding_model="openai/test-embedding", embedding_api_base=llm_server.base_url)
    app = App.open(home, config=cfg)
    try:
        assert app.search.embedding_task is None
        app.start_background()
        task = app.search.embedding_task
        assert task is not None
        task.result(timeout=120)
        assert app.search.vectors.progress() == (len(TEXTS), len(TEXTS))
        assert sorted(t for batch in inputs(llm_server) for t in batch) == sorted(TEXTS)
        app.start_background()  # idempotent: nothing is left, nothing is sent again
        again = app.search.embedding_task
        assert again is not None
        again.result(timeout=120)
        # what is appended later is embedded too
        app.write(lambda: app.store.append(Message(role="user", content="swam 2 km"), session="cli"))
        later = app.search.embedding_task
        assert later is not None and later is not task
        later.result(timeout=120)
        assert app.search.vectors.progress() == (len(TEXTS) + 1, len(TEXTS) + 1)
        assert inputs(llm_server)[-1] == ["swam 2 km"]
    finally:
        app.close()


def test_the_daemon_embeds_the_history(home: Home, llm_server: ScriptedLLMServer, monkeypatch: Any) -> None:
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from tests.support import ROOT, cli_env

    runtime = Path(tempfile.mkdtemp(prefix="mtemb"))  # AF_UNIX paths are short
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    seed(home)
    use_embeddings(home, llm_server.base_url)
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "daemon"], env=cli_env(home.root),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the daemon says when it serves commands
            if "memtray daemon: ready" in line:
                break
        else:
            raise AssertionError("the daemon did not start")
        # nobody asks for embeddings: the daemon makes them on its own. Each status query
        # is a command forwarded to it (a round trip, no sleep); a daemon that never
        # embedded would answer done 0 every time and the loop ends failing.
        for _ in range(200):
            out = run_cli(home.root, "history", "embed", "--status", "--json")
            assert out.returncode == 0, out.stderr
            status = json.loads(out.stdout)
            if status["done"] == status["total"] == len(TEXTS) and not status["running"]:
                break
        else:
            raise AssertionError(f"the daemon did not embed the history: {status}")
        assert sorted(t for batch in inputs(llm_server) for t in batch) == sorted(TEXTS)
    finally:
        stop = run_cli(home.root, "daemon", "stop")
        proc.wait(timeout=120)
        if proc.stderr is not None:
            proc.stderr.close()
        shutil.rmtree(runtime, ignore_errors=True)
        assert stop.returncode == 0, stop.stderr


def test_choosing_an_embedding_model_in_a_long_lived_instance_starts_the_backfill(
    home: Home, llm_server: ScriptedLLMServer
) -> None:
    seed(home)
    app = App.open(home, config=Config(embedding_model="none"))
    try:
        app.start_background()
        assert app.search.embedding_task is None  # nothing to embed with
        app.reconfigure(Config(embedding_model="openai/test-embedding", embedding_api_base=llm_server.base_url))
        task = app.search.embedding_task
        assert task is not None
        task.result(timeout=120)
        assert app.search.vectors.progress() == (len(TEXTS), len(TEXTS))
    finally:
        app.close()
