"""A command reaches the instance from any environment, with its own model and keys.

Real processes, real sockets, real litellm against the scripted servers: the
instance is found from the data home (cron, ssh, a unit file have no
XDG_RUNTIME_DIR or another TMPDIR); a forwarded command's MEMTRAY_MODEL, API base
and key answer that command only (the server sees which reached it) and are never
written; a provider variable the instance cannot take makes the command run on its
own, saying why; a failed first command leaves no instance; a reader that closes
its pipe early ends quietly; a command waiting for another names it. Waiting is on
processes and pipes, never on a clock; every wait is bounded.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base.home import Home

from tests.fixtures.llm_server import ScriptedLLMServer, error, last_user_text, reply
from tests.integration.test_warm_instance import (
    WARM,
    _instance_log,
    _quit,
    _ready_pids,
    _status,
    _wait_exit,
)
from tests.support import ROOT, cli_env, configure, run_cli, short_dir, user_messages

pytestmark = pytest.mark.slow


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """Another TMPDIR, as a cron job or an ssh login has."""
    yield from short_dir("mtcron")


def _cron_env(home: Home, tmpdir: Path, **extra: str) -> dict[str, str]:
    env = cli_env(home.root, **extra)
    env.pop("XDG_RUNTIME_DIR", None)
    env["TMPDIR"] = str(tmpdir)
    return env


def _run_as_cron(home: Home, tmpdir: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    # bounded: before the fix this waited ten minutes for a socket it could not find
    return subprocess.run([sys.executable, "-m", "memtray.core.cli", *args], env=_cron_env(home, tmpdir, **extra),
                          capture_output=True, text=True, timeout=120, cwd=str(ROOT))


def _start_daemon(home: Home, env: dict[str, str]) -> subprocess.Popen[str]:
    daemon = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "daemon"], env=cli_env(home.root, **env),
                              stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    assert daemon.stderr is not None
    line = daemon.stderr.readline()  # printed once it listens
    assert "memtray daemon: ready" in line, line
    return daemon


def _stop(daemon: subprocess.Popen[str]) -> None:
    daemon.terminate()
    daemon.communicate(timeout=120)


# --- found from the home ------------------------------------------------------------


def test_the_background_instance_is_found_without_xdg_runtime_dir_and_with_another_tmpdir(
    home: Home, llm_server: ScriptedLLMServer, runtime: Path, elsewhere: Path
) -> None:
    env = configure(home, llm_server)
    assert run_cli(home.root, "ask", "from the terminal", **WARM, **env).returncode == 0
    [pid] = _ready_pids(home)
    try:
        out = _run_as_cron(home, elsewhere, "ask", "from cron", **WARM, **env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.endswith("from cron\n") and out.stderr == ""
        assert _ready_pids(home) == [pid]  # served by it: no second instance
        status = _run_as_cron(home, elsewhere, "daemon", "status", "--json", **env)
        assert f'"pid": {pid}' in status.stdout and str(runtime) in status.stdout, status.stdout
        assert not any(elsewhere.iterdir())  # no socket directory was even made there
    finally:
        _quit(home, pid, env)
    assert user_messages(home) == ["from the terminal", "from cron"]


def test_a_daemon_started_without_xdg_runtime_dir_is_found_from_a_session_that_has_one(
    home: Home, llm_server: ScriptedLLMServer, runtime: Path, elsewhere: Path
) -> None:
    env = configure(home, llm_server)
    daemon = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "daemon"],
                              env=_cron_env(home, elsewhere, **env), stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        assert daemon.stderr is not None
        assert "memtray daemon: ready" in daemon.stderr.readline()
        out = run_cli(home.root, "ask", "from the session", **env)  # XDG_RUNTIME_DIR=runtime
        assert out.returncode == 0, out.stderr
        assert out.stdout.endswith("from the session\n") and "waiting" not in out.stderr
        assert not any(runtime.iterdir())  # it listens under the other TMPDIR, and was found there
    finally:
        _stop(daemon)
    assert daemon.returncode == 0
    assert user_messages(home) == ["from the session"]


# --- the command's own model and key ------------------------------------------------


def _seen(server: ScriptedLLMServer) -> dict[str, tuple[str, str]]:
    """For each chat request: the user's text (after its runtime-context line) -> (the model,
    the Authorization header)."""
    return {last_user_text(r.json).rsplit("\n", 1)[-1]: (str(r.json["model"]), r.headers.get("authorization", ""))
            for r in server.requests if r.path.endswith("/chat/completions")}


def test_a_commands_model_api_base_and_key_are_used_for_that_command_only(
    home: Home, llm_server: ScriptedLLMServer, runtime: Path
) -> None:
    env = configure(home, llm_server)  # model openai/test-model at llm_server, OPENAI_API_KEY=sk-test
    secret = "sk-for-one-command-" + secrets.token_hex(12)
    with ScriptedLLMServer() as other:
        assert run_cli(home.root, "ask", "plain first", **WARM, **env).returncode == 0
        [pid] = _ready_pids(home)
        try:
            own = run_cli(home.root, "ask", "with its own model and key", MEMTRAY_MODEL="openai/other-model",
                          OPENAI_API_KEY=secret, **WARM)
            assert own.returncode == 0, own.stderr
            base = run_cli(home.root, "ask", "with its own server", MEMTRAY_API_BASE=other.base_url, **WARM, **env)
            assert base.returncode == 0, base.stderr
            after = run_cli(home.root, "ask", "plain after", **WARM, **env)
            assert after.returncode == 0, after.stderr
            keyless = run_cli(home.root, "ask", "with no key at all", OPENAI_API_KEY="", **WARM)
            assert keyless.returncode == 0, keyless.stderr
            assert _ready_pids(home) == [pid]  # one instance answered them all
        finally:
            _quit(home, pid, env)
        assert _seen(llm_server) == {
            "plain first": ("test-model", "Bearer sk-test"),
            "with its own model and key": ("other-model", f"Bearer {secret}"),
            "plain after": ("test-model", "Bearer sk-test"),
            # the instance has no key of its own (it was started without the starter's)
            "with no key at all": ("test-model", "Bearer no-key"),
        }
        assert _seen(other) == {"with its own server": ("test-model", "Bearer sk-test")}
    for path in home.root.rglob("*"):  # the key was never logged or written
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_a_provider_variable_the_instance_cannot_take_makes_the_command_run_on_its_own(
    home: Home, llm_server: ScriptedLLMServer, runtime: Path
) -> None:
    env = configure(home, llm_server)
    assert run_cli(home.root, "ask", "to the instance", **WARM, **env).returncode == 0
    [pid] = _ready_pids(home)
    unused = "http://127.0.0.1:9/v1"  # the configured api_base wins; only the mismatch matters
    try:
        # a command that does not use the model is served as it is
        log = run_cli(home.root, "memory", "log", OPENAI_BASE_URL=unused, **WARM, **env)
        assert log.returncode == 0 and log.stderr == "", log.stderr
        alone = run_cli(home.root, "ask", "with a base url", OPENAI_BASE_URL=unused, **WARM, **env)
    finally:
        if not _wait_exit(pid, timeout=0):
            _quit(home, pid, env)
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.endswith("with a base url\n")
    assert len(alone.stderr.splitlines()) == 1, alone.stderr
    [note] = alone.stderr.splitlines()
    assert note.startswith("memtray: note: running this command on its own: OPENAI_BASE_URL is not the same"), note
    assert _wait_exit(pid)  # the background instance stepped aside for it...
    assert _ready_pids(home) == [pid]  # ...and no other was started with this command's environment
    assert "handing the data home over" in _instance_log(home)
    assert user_messages(home) == ["to the instance", "with a base url"]


def test_a_daemon_refuses_a_command_whose_provider_variable_it_cannot_take(
    home: Home, llm_server: ScriptedLLMServer, runtime: Path
) -> None:
    env = configure(home, llm_server)
    daemon = _start_daemon(home, env)
    try:
        out = run_cli(home.root, "ask", "never run", OPENAI_BASE_URL="http://127.0.0.1:9/v1", **env)
        served = run_cli(home.root, "ask", "run", **env)
    finally:
        _stop(daemon)
    assert out.returncode == 1 and out.stdout == ""
    assert "memtray: error: the running memtray will not run this command: OPENAI_BASE_URL" in out.stderr
    assert served.returncode == 0, served.stderr
    assert user_messages(home) == ["run"]  # the refused one was never started


# --- failures leave nothing behind ----------------------------------------------------


def test_an_ask_with_no_model_starts_no_instance(home: Home, runtime: Path) -> None:
    Home.create(home)
    out = run_cli(home.root, "ask", "hello", **WARM)
    assert out.returncode != 0 and "no model is configured" in out.stderr, out.stderr
    assert not _status(home)["running"]
    assert _instance_log(home) == ""  # never started


def test_an_instance_whose_only_command_failed_leaves(
    home: Home, llm_server: ScriptedLLMServer, runtime: Path
) -> None:
    env = configure(home, llm_server)
    llm_server.script(error(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}))
    out = run_cli(home.root, "ask", "with a wrong key", **WARM, **env)
    assert out.returncode != 0 and "rejected the API key" in out.stderr, out.stderr
    [pid] = _ready_pids(home)
    assert _wait_exit(pid), "the instance stayed after its only command failed"
    assert "stopping (every command it ran failed)" in _instance_log(home)
    assert not _status(home, **env)["running"]


# --- a reader that closes its pipe ----------------------------------------------------

REVISIONS = 150  # about 12 KB of `memory log`: more than a 4 KiB pipe and one read of it


@pytest.fixture(scope="module")
def long_memory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home with a memory log longer than the pipe and what a reader takes at once."""
    from memtray.core.app import App

    root = tmp_path_factory.mktemp("longlog") / "home"
    with App.open(Home.resolve(root)) as app:
        for i in range(REVISIONS):
            app.memory.remember(f"fact number {i} about the user", None, model=None, source_seq=None)
    return root


def _pipe_into(reader: list[str] | None, home: Home, env: dict[str, str]) -> tuple[int, str, str]:
    """``memtray memory log --limit N | reader`` through a 4 KiB pipe (None: the reader
    closed its end before memtray wrote anything). (memtray's status, what the reader
    printed, memtray's stderr)."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
    head = None
    if reader is not None:
        head = subprocess.Popen(reader, stdin=r, stdout=subprocess.PIPE, text=True)
    os.close(r)
    try:
        mem = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "memory", "log", "--limit", str(REVISIONS)],
                               stdout=w, stderr=subprocess.PIPE, env=cli_env(home.root, **env), text=True,
                               cwd=str(ROOT))
    finally:
        os.close(w)
    printed = head.communicate(timeout=120)[0] if head is not None else ""
    _, err = mem.communicate(timeout=120)
    return mem.returncode, printed, err


@pytest.mark.parametrize("instance", [False, True], ids=["alone", "forwarded"])
def test_memory_log_into_head_prints_one_line_and_no_error(
    long_memory: Path, tmp_path: Path, runtime: Path, instance: bool
) -> None:
    home = Home.resolve(tmp_path / "home")
    shutil.copytree(long_memory, home.root)
    daemon = _start_daemon(home, {}) if instance else None
    try:
        code, printed, err = _pipe_into(["head", "-1"], home, {})
        gone_code, _, gone_err = _pipe_into(None, home, {})
    finally:
        if daemon is not None:
            _stop(daemon)
    assert re.fullmatch(r"[0-9a-f]{8} .*agent.*\n", printed), printed
    assert err == "" and code in (0, 141), err
    assert gone_err == "" and gone_code in (0, 141), gone_err


# --- waiting names the holder ---------------------------------------------------------


@pytest.mark.timeout(600)
def test_a_command_waiting_for_a_one_shot_command_names_it(home: Home, llm_server: ScriptedLLMServer) -> None:
    env = configure(home, llm_server)
    asked = threading.Event()
    release = threading.Event()

    def held(request_json: dict[str, Any]) -> Any:
        asked.set()
        release.wait(300)
        return reply("answered at last")

    llm_server.script(held)
    first = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "ask", "hold on"],
                             env=cli_env(home.root, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=str(ROOT))
    try:
        assert asked.wait(120), "the first command never reached the model"  # it holds the home now
        second = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "memory", "log"],
                                  env=cli_env(home.root, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=str(ROOT))
        assert second.stderr is not None
        said = second.stderr.readline()
    finally:
        release.set()
    assert said == f"waiting for another memtray command to finish (pid {first.pid}: memtray ask)…\n", said
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0 and err == "", err
    first_out, first_err = first.communicate(timeout=120)
    assert first.returncode == 0 and first_out == "answered at last\n", first_err
