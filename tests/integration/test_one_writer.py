"""One writer: every append to the log and every git write runs on the App's worker,
whichever front end asked (forwarded CLI commands on the server's threads, plain
threads calling services, the worker itself).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from memtray.core.app import App
from memtray.core.base import ipc
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.base.worker import WrongThread
from memtray.core.cli import main as cli
from memtray.core.log.events import Message, Record

from tests.fixtures.llm_server import ScriptedLLMServer, echo

N = 8


@pytest.fixture
def app(tmp_path: Path, llm_server: ScriptedLLMServer) -> Any:
    llm_server.responder = echo
    home = Home(tmp_path / "home")
    a = App.open(home, config=Config(model="openai/test-model", api_base=llm_server.base_url, llm_retries=0),
                 start_services=False)
    yield a
    a.close()


def test_every_append_runs_on_the_worker_whoever_asks(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    seen: list[str] = []
    commits: list[str] = []
    app.store.subscribe(lambda recs, _state: seen.extend(threading.current_thread().name for _ in recs))
    real_commit = app.memory.git.commit

    def commit(*args: Any, **kw: Any) -> str:
        commits.append(threading.current_thread().name)
        return real_commit(*args, **kw)

    monkeypatch.setattr(app.memory.git, "commit", commit)
    server = ipc.Server(app.home, lambda req, send: cli.serve(app, req, send))
    server.start()
    errors: list[BaseException] = []

    def forwarded(argv: list[str]) -> None:
        try:
            out: list[dict[str, Any]] = []
            code = ipc.request(app.home, {"argv": argv, "env": {}, "tty": False}, out.append)
            assert code == 0, out
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    def direct(i: int) -> None:
        try:
            app.memory.remember(f"Fact number {i} about the user", "Facts", model=None, source_seq=None)
            app.store.append(Message(role="user", content=f"direct {i}"), session="direct")
        except BaseException as exc:
            errors.append(exc)

    jobs = [threading.Thread(target=forwarded, args=(["ask", f"question {i}"],)) for i in range(N)]
    jobs += [threading.Thread(target=forwarded, args=(["remind", "add", f"stretch {i}", "--every", "1h"],))
             for i in range(N)]
    jobs += [threading.Thread(target=direct, args=(i,)) for i in range(N)]
    try:
        for t in jobs:
            t.start()
        for t in jobs:
            t.join(300)
    finally:
        server.close()
    assert not errors, errors
    worker = {app.worker.thread_name}
    assert len(seen) >= 5 * N  # asks (user + reply), reminders, remembers, messages
    assert set(seen) == worker
    assert commits and set(commits) == worker
    facts = (app.home.memory / "MEMORY.md").read_text()
    assert all(f"Fact number {i} about the user" in facts for i in range(N))


def test_a_git_write_off_the_worker_is_refused(app: App) -> None:
    with pytest.raises(WrongThread):
        app.memory.git.commit({"MEMORY.md": "x\n", "HISTORY.md": ""}, "bad", app.clock.now())
    with pytest.raises(WrongThread):
        app.memory.git.set_ref("refs/heads/main", None)


def test_appending_off_the_worker_while_holding_the_store_lock_is_refused(app: App) -> None:
    with app.store.locked(), pytest.raises(WrongThread):
        app.store.append(Message(role="user", content="x"), session="s")
    rec: Record = app.store.append(Message(role="user", content="y"), session="s")
    assert rec.data["content"] == "y"  # handed to the worker, as every other append
