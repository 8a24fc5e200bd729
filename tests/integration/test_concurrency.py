"""No message is dropped when commands meet: a burst at a running daemon, one-shot commands at each other.

Every `memtray ask` is a real process, talking to the scripted server through real
litellm; the log is the judge: each message is in it once.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from memtray.core.base.home import Home

from tests.fixtures.llm_server import ScriptedLLMServer
from tests.support import ROOT, cli_env, configure, run_cli, user_messages

pytestmark = pytest.mark.slow


#: beyond the test model: a timeout for 55 interpreters on a shared machine, a window no burst fills
SETTINGS = {"llm_timeout": "120", "memory_window": "100000"}


def _popen(home: Home, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "memtray.core.cli", *args], env=cli_env(home.root, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))


def _burst(home: Home, texts: list[str], env: dict[str, str]) -> list[tuple[str, Any, str, str]]:
    procs = [(t, _popen(home, "ask", t, **env)) for t in texts]
    done = []
    try:
        for t, p in procs:
            out, err = p.communicate(timeout=900)
            done.append((t, p.returncode, out, err))
    finally:
        for _t, p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return done


def _start_daemon(home: Home, env: dict[str, str]) -> subprocess.Popen[str]:
    daemon = _popen(home, "daemon", **env)
    assert daemon.stderr is not None
    line = daemon.stderr.readline()  # printed once it listens
    assert "memtray daemon: ready" in line, line + daemon.stderr.read()
    return daemon


@pytest.mark.timeout(1800)  # 55 interpreters on a shared machine; nothing here waits on a clock
def test_fifty_at_a_daemon_and_five_at_each_other_lose_nothing(home: Home, llm_server: ScriptedLLMServer) -> None:
    env = configure(home, llm_server, **SETTINGS)
    daemon = _start_daemon(home, env)
    try:
        burst = _burst(home, [f"burst message {i}" for i in range(50)], env)
    finally:
        daemon.terminate()
        daemon.communicate(timeout=120)
    assert daemon.returncode == 0
    for text, code, out, err in burst:
        assert code == 0, (text, err)
        assert out.startswith("echo: ") and out.endswith(f"{text}\n"), (text, out, err)
        assert "does not accept commands" not in err

    # nothing running: one takes the home, the others wait for it, say so once, then run
    alone = _burst(home, [f"alone message {i}" for i in range(5)], env)
    for text, code, out, err in alone:
        assert code == 0, (text, err)
        assert out.startswith("echo: ") and out.endswith(f"{text}\n"), (text, out, err)
        assert err.count("waiting for another memtray command to finish") <= 1, err
    assert sum("waiting for another memtray command" in err for *_, err in alone) >= 1  # they did meet

    logged = user_messages(home)
    expected = [t for t, *_ in burst] + [t for t, *_ in alone]
    assert sorted(logged) == sorted(expected)  # 55, each once
    assert len(set(logged)) == len(logged) == 55


def test_a_waiting_command_keeps_its_stdin(home: Home, llm_server: ScriptedLLMServer) -> None:
    from memtray.core.base.home import HomeLock

    env = configure(home, llm_server, **SETTINGS)
    lock = HomeLock(home).acquire()  # what a one-shot command does while it runs
    try:
        second = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "ask", "-"],
                                  env=cli_env(home.root, **env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
        assert second.stdin is not None and second.stderr is not None
        second.stdin.write("from stdin, read once")
        second.stdin.close()
        said = ""
        while "waiting for another memtray command" not in said and (line := second.stderr.readline()):
            said += line
        assert "waiting for another memtray command to finish" in said, said
    finally:
        lock.release()
    with second:  # closes the pipes
        assert second.stdout is not None
        out, err = second.stdout.read(), second.stderr.read()  # small: neither pipe fills
        assert second.wait(timeout=300) == 0, err
    assert out.startswith("echo: ") and out.endswith("from stdin, read once\n"), out
    assert user_messages(home) == ["from stdin, read once"]


def test_stdin_is_forwarded_as_text_to_a_running_daemon(home: Home, llm_server: ScriptedLLMServer) -> None:
    env = configure(home, llm_server, **SETTINGS)
    daemon = _start_daemon(home, env)
    try:
        out = run_cli(home.root, "ask", "-", input="- a line that starts with a dash", **env)
    finally:
        daemon.terminate()
        daemon.communicate(timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("echo: ") and out.stdout.endswith("\n- a line that starts with a dash\n"), out.stdout
    assert user_messages(home) == ["- a line that starts with a dash"]


def test_the_lock_holder_is_named_while_waiting_is_bounded(
    home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A home held by a process that never serves: the command waits, says so once, then gives up clearly."""
    from memtray.core.base.errors import AlreadyRunning
    from memtray.core.base.home import HomeLock
    from memtray.core.cli import console

    Home.create(home)
    monkeypatch.setattr(console, "WAIT_SECONDS", 0.3)
    ran: list[bool] = []

    def here() -> int:
        ran.append(True)
        raise console.Forward

    with HomeLock(home), pytest.raises(AlreadyRunning) as info:
        console.forward(home, ["ask", "hello"], run_here=here)
    assert "without accepting commands" in str(info.value) and "pid" in str(info.value)
    assert capsys.readouterr().err.count("waiting for another memtray command to finish") == 1
    assert len(ran) >= 2  # it kept trying to run the command itself, never dropped it
