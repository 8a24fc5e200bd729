"""The warm instance: started by the first command that needs the model, used by the next, gone when idle.

Real processes, real litellm against the scripted server. The suite turns the
instance off (MEMTRAY_NO_WARM=1); these tests turn it back on with
MEMTRAY_NO_WARM="". Waiting for the instance to leave is waiting on its exit
(a pidfd), never on a clock.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import ipc
from memtray.core.base.home import Home

from tests.fixtures.llm_server import ScriptedLLMServer
from tests.support import ROOT, cli_env, configure, run_cli, user_messages

pytestmark = pytest.mark.slow

WARM = {"MEMTRAY_NO_WARM": ""}
OTHER_UID = 65534  # nobody


def _status(home: Home, **env: str) -> dict[str, Any]:
    out = run_cli(home.root, "daemon", "status", "--json", **env)
    assert out.returncode == 0, out.stderr
    info: dict[str, Any] = json.loads(out.stdout)
    return info


def _instance_log(home: Home) -> str:
    path = home.logs / "instance.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def _ready_pids(home: Home) -> list[int]:
    return [int(m) for m in re.findall(r"memtray daemon: ready, warm.*\(pid (\d+)\)", _instance_log(home))]


def _wait_exit(pid: int, timeout: float = 300.0) -> bool:
    """Block until ``pid`` (not our child) exits; True if it did within ``timeout``."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready)
    finally:
        os.close(fd)


def _quit(home: Home, pid: int, env: dict[str, str]) -> None:
    out = run_cli(home.root, "daemon", "stop", **env)
    assert out.returncode == 0, out.stderr
    assert _wait_exit(pid)


def test_the_first_command_starts_it_and_the_second_is_served_by_it(
    home: Home, llm_server: ScriptedLLMServer, runtime: Path
) -> None:
    env = configure(home, llm_server)
    assert not _status(home, **env)["running"]
    first = run_cli(home.root, "ask", "first of a burst", **WARM, **env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.endswith("first of a burst\n") and first.stderr == ""  # invisible when it works
    info = _status(home, **env)
    assert info["running"] and info["kind"] == "warm"
    pid = int(info["pid"])
    assert pid != os.getpid() and _ready_pids(home) == [pid]
    try:
        second = run_cli(home.root, "ask", "second of a burst", **WARM, **env)
        assert second.returncode == 0, second.stderr
        assert second.stdout.endswith("second of a burst\n") and second.stderr == ""
        assert _status(home, **env)["pid"] == pid
        assert _ready_pids(home) == [pid]  # no second instance was started
    finally:
        _quit(home, pid, env)
    assert "stopping (asked to quit)" in _instance_log(home)
    assert not _status(home, **env)["running"]
    assert user_messages(home) == ["first of a burst", "second of a burst"]


def test_memtray_quit_ends_it(home: Home, llm_server: ScriptedLLMServer, runtime: Path) -> None:
    env = configure(home, llm_server)
    assert run_cli(home.root, "ask", "hello", **WARM, **env).returncode == 0
    pid = int(_status(home, **env)["pid"])
    out = run_cli(home.root, "quit", **env)
    assert out.returncode == 0, out.stderr
    assert f"(pid {pid}) is stopping" in out.stderr
    assert _wait_exit(pid)


def test_it_exits_after_its_idle_time(home: Home, llm_server: ScriptedLLMServer, runtime: Path) -> None:
    env = configure(home, llm_server, warm_instance_idle_minutes="0.02")  # 1.2 s
    out = run_cli(home.root, "ask", "one question", **WARM, **env)
    assert out.returncode == 0, out.stderr
    [pid] = _ready_pids(home)
    assert _wait_exit(pid), "the idle instance did not exit"
    assert "stopping (idle for 1.2s)" in _instance_log(home)
    assert not _status(home, **env)["running"]
    assert user_messages(home) == ["one question"]


def test_a_plain_daemon_takes_over_from_it(home: Home, llm_server: ScriptedLLMServer, runtime: Path) -> None:
    env = configure(home, llm_server)
    assert run_cli(home.root, "ask", "to the warm one", **WARM, **env).returncode == 0
    warm_pid = int(_status(home, **env)["pid"])
    daemon = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "daemon"], env=cli_env(home.root, **env),
                              stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        assert daemon.stderr is not None
        line = daemon.stderr.readline()
        assert "memtray daemon: ready, delivering reminders" in line, line
        assert _wait_exit(warm_pid)  # it handed over and left
        info = _status(home, **env)
        assert info["kind"] == "daemon" and info["pid"] == daemon.pid
        out = run_cli(home.root, "ask", "to the daemon", **WARM, **env)
        assert out.returncode == 0, out.stderr
    finally:
        daemon.terminate()
        daemon.communicate(timeout=120)
    assert "handing the data home over" in _instance_log(home)
    assert user_messages(home) == ["to the warm one", "to the daemon"]


@pytest.mark.parametrize("how", ["setting", "flag", "environment"])
def test_it_never_starts_when_disabled(home: Home, llm_server: ScriptedLLMServer, runtime: Path, how: str) -> None:
    env = configure(home, llm_server, **({"warm_instance": "false"} if how == "setting" else {}))
    args = ["--no-daemon", "ask", "x"] if how == "flag" else ["ask", "x"]
    extra = {} if how == "environment" else WARM  # cli_env sets MEMTRAY_NO_WARM=1
    out = run_cli(home.root, *args, **extra, **env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.endswith("x\n")
    assert _instance_log(home) == ""
    assert not _status(home, **env)["running"]
    assert not ipc.socket_path(home).exists()


def test_a_failed_start_says_so_and_the_command_still_runs(
    home: Home, llm_server: ScriptedLLMServer, runtime: Path, tmp_path: Path
) -> None:
    env = configure(home, llm_server)
    # an AppImage path that is not a program: the instance cannot start
    bogus = tmp_path / "not-an-appimage"
    bogus.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    bogus.chmod(0o700)
    out = run_cli(home.root, "ask", "still answered", APPIMAGE=str(bogus), **WARM, **env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.endswith("still answered\n")
    assert "the background instance did not start" in out.stderr and "instance.log" in out.stderr
    assert "broken" in _instance_log(home)
    assert user_messages(home) == ["still answered"]


# --- another user -------------------------------------------------------------------

needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="needs root to act as another user")


def _as_other_user(fn: Any) -> int:
    """Run ``fn() -> int`` in a forked child that became uid 65534; its exit status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 99
        try:
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            code = int(fn())
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@needs_root
def test_a_second_users_commands_never_reach_it(
    home: Home, llm_server: ScriptedLLMServer, runtime: Path
) -> None:
    env = configure(home, llm_server)
    assert run_cli(home.root, "ask", "mine", **WARM, **env).returncode == 0
    pid = int(_status(home, **env)["pid"])
    path = ipc.socket_path(home)
    request = json.dumps({"argv": ["ask", "--literal", "--", "from another user"], "env": {}}).encode() + b"\n"

    def connect_and_ask() -> int:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        try:
            s.connect(str(path))
        except PermissionError:
            return 10  # the directory keeps them out
        try:
            s.sendall(request)
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        except OSError:
            data = b""
        return 20 if not data else 30  # 20: refused unanswered; 30: it answered

    try:
        assert _as_other_user(connect_and_ask) == 10
        # with the directory and socket opened up, the peer check alone must refuse them
        runtime.chmod(0o755)
        mode = path.stat().st_mode
        path.chmod(0o777)
        try:
            assert _as_other_user(connect_and_ask) == 20
        finally:
            path.chmod(stat.S_IMODE(mode))
            runtime.chmod(0o700)
        # and their own `memtray` looks elsewhere: a directory of their own
        assert _as_other_user(lambda: 0 if ipc.runtime_dir(home) != runtime else 1) == 0
    finally:
        _quit(home, pid, env)
    assert user_messages(home) == ["mine"]
    assert "refused a connection from uid 65534" in (home.logs / "memtray.log").read_text(encoding="utf-8")


@needs_root
def test_a_squatter_on_the_old_path_does_not_stop_the_daemon(
    home: Home, llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = configure(home, llm_server)
    tmp = Path(tempfile.mkdtemp(prefix="mtsq"))
    tmp.chmod(0o1777)  # a shared /tmp
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp))
    old_path = tmp / f"{home.socket_name}.sock"  # where memtray used to listen, predictably
    mine = tmp / f"memtray-{os.geteuid()}"  # the private directory's first name

    def squat() -> int:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(old_path))
        s.listen(1)
        os.mkdir(mine, 0o777)
        os.chmod(mine, 0o777)
        s2 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s2.bind(str(mine / f"{home.socket_name}.sock"))
        s2.listen(1)
        return 0  # the files stay; nobody answers

    try:
        assert _as_other_user(squat) == 0
        assert mine.stat().st_uid == OTHER_UID
        daemon = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "daemon"],
                                  env=cli_env(home.root, **env), stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
        try:
            assert daemon.stderr is not None
            line = daemon.stderr.readline()
            assert "memtray daemon: ready" in line, line + daemon.stderr.read()
            out = run_cli(home.root, "ask", "despite the squatter", **env)
            assert out.returncode == 0, out.stderr
            assert out.stdout.endswith("despite the squatter\n")
            path = ipc.socket_path(home)
            assert path.parent != mine and path.parent.stat().st_uid == os.geteuid()
            assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        finally:
            daemon.terminate()
            daemon.communicate(timeout=120)
        assert daemon.returncode == 0
        assert user_messages(home) == ["despite the squatter"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
