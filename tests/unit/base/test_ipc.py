"""The instance socket: where it lives, what a client may send again, what it reports."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import ipc
from memtray.core.base.home import Home


@pytest.fixture
def tmpbase(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="mtipc"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(d))
    yield d
    import shutil

    shutil.rmtree(d, ignore_errors=True)


def test_without_xdg_runtime_dir_a_private_directory_is_made(tmpbase: Path, home: Home) -> None:
    d = ipc.runtime_dir(home)
    assert d == tmpbase / f"memtray-{os.geteuid()}"
    st = os.lstat(d)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    assert ipc.socket_path(home).parent == d


def test_a_linked_directory_is_never_used(tmpbase: Path, home: Home) -> None:
    elsewhere = tmpbase / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmpbase / f"memtray-{os.geteuid()}").symlink_to(elsewhere)
    assert ipc.runtime_dir(home) == tmpbase / f"memtray-{os.geteuid()}.1"


def test_an_open_directory_of_ours_is_tightened_an_open_xdg_dir_is_skipped(
    tmpbase: Path, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmpbase / f"memtray-{os.geteuid()}"
    mine.mkdir()
    mine.chmod(0o777)
    assert ipc.runtime_dir(home) == mine and stat.S_IMODE(mine.stat().st_mode) == 0o700
    xdg = tmpbase / "xdg"
    xdg.mkdir()
    xdg.chmod(0o777)  # not the session's private directory: memtray does not use it
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    assert ipc.runtime_dir(home) == mine
    xdg.chmod(0o700)
    assert ipc.runtime_dir(home) == xdg


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_directory_of_another_user_is_skipped(tmpbase: Path, home: Home) -> None:
    squatted = tmpbase / f"memtray-{os.geteuid()}"
    squatted.mkdir(mode=0o700)
    os.chown(squatted, 65534, 65534)
    assert ipc.runtime_dir(home) == tmpbase / f"memtray-{os.geteuid()}.1"


def _one_shot_server(path: Path, behave: Any) -> threading.Thread:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def run() -> None:
        conn, _ = srv.accept()
        try:
            behave(conn)
        finally:
            conn.close()
            srv.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_connection_closed_before_started_ran_nothing(tmpbase: Path, home: Home) -> None:
    t = _one_shot_server(ipc.socket_path(home), lambda conn: conn.recv(4096))
    with pytest.raises(ipc.NoInstance, match="before running the command"):
        ipc.request(home, {"argv": ["ask", "x"]}, lambda _m: None, timeout=30)
    t.join(30)


def test_a_connection_closed_after_started_is_reported_not_repeated(tmpbase: Path, home: Home) -> None:
    def started_then_gone(conn: socket.socket) -> None:
        conn.recv(4096)
        conn.sendall(b'{"started": true}\n{"out": "partial"}\n')

    got: list[dict[str, Any]] = []
    t = _one_shot_server(ipc.socket_path(home), started_then_gone)
    with pytest.raises(ipc.Interrupted):
        ipc.request(home, {"argv": ["ask", "x"]}, got.append, timeout=30)
    t.join(30)
    assert got == [{"out": "partial"}]  # what it printed reached the user; "started" is not output


def test_a_full_backlog_is_retried_then_named(tmpbase: Path, home: Home) -> None:
    path = ipc.socket_path(home)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(0)  # never accepts: the queue fills
    fillers = []
    try:
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(str(path))
            except BlockingIOError:
                s.close()
                break
            fillers.append(s)
        with pytest.raises(ipc.NoInstance, match="too busy"):
            ipc.request(home, {"argv": ["ask", "x"]}, lambda _m: None, timeout=5, busy_wait=0.3)
    finally:
        for s in fillers:
            s.close()
        srv.close()


def test_the_server_answers_started_and_counts_requests(tmpbase: Path, home: Home) -> None:
    server = ipc.Server(home, lambda req, send: (send({"out": "hi\n"}), 7)[1])
    server.start()
    try:
        got: list[dict[str, Any]] = []
        assert ipc.request(home, {"argv": ["x"]}, got.append, timeout=30) == 7
        assert got == [{"out": "hi\n"}]
        assert server.drain(30) and server.active == 0  # the request has left the count
    finally:
        server.close(drain=5)
    assert not ipc.socket_path(home).exists()
    with pytest.raises(ipc.NoInstance):
        ipc.request(home, {"argv": ["x"]}, lambda _m: None, timeout=5)


def test_a_tmpdir_too_long_for_a_socket_path_is_passed_over(tmpbase: Path, home: Home,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    long = tmpbase / ("d" * 90)
    long.mkdir()
    monkeypatch.setenv("TMPDIR", str(long))
    path = ipc.socket_path(home)
    assert path.parent == Path("/tmp") / f"memtray-{os.geteuid()}" and len(os.fsencode(str(path))) <= 100


def test_a_client_finds_the_server_from_the_home_whatever_its_own_environment(
    tmpbase: Path, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtray.core.base.home import HomeLock

    Home.create(home)
    served = tmpbase / "served"
    served.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(served))
    with HomeLock(home):
        server = ipc.Server(home, lambda req, send: (send({"out": "found\n"}), 0)[1])
        server.start()
        try:
            assert server.path.parent == served
            # the client: no XDG_RUNTIME_DIR, another TMPDIR (cron, ssh, a unit file)
            monkeypatch.delenv("XDG_RUNTIME_DIR")
            monkeypatch.setenv("TMPDIR", str(tmpbase / "cron"))
            assert ipc.socket_path(home) != server.path  # where it would have looked
            got: list[dict[str, Any]] = []
            assert ipc.request(home, {"argv": ["x"]}, got.append, timeout=30) == 0
            assert got == [{"out": "found\n"}]
        finally:
            server.close(drain=5)
        assert ipc.instance_socket(home) != server.path  # it stopped: no longer named


def test_an_older_instance_that_ignores_the_commands_environment_is_named_not_silent(
    tmpbase: Path, home: Home
) -> None:
    from memtray.core.base import cmdenv

    def older(conn: socket.socket) -> None:  # an instance of a version before cmdenv
        conn.recv(65536)
        conn.sendall(b'{"started": true}\n{"out": "answered\\n"}\n{"exit": 0}\n')

    message = {"argv": ["ask", "x"], "cmdenv": cmdenv.collect({"MEMTRAY_MODEL": "openai/mine"}, uses_model=True)}
    got: list[dict[str, Any]] = []
    t = _one_shot_server(ipc.socket_path(home), older)
    assert ipc.request(home, message, got.append, timeout=30) == 0
    t.join(30)
    assert got == [{"err": ipc.OLDER_INSTANCE}, {"out": "answered\n"}]

    server = ipc.Server(home, lambda req, send: (send({"out": "answered\n"}), 0)[1])
    server.start()
    try:
        got.clear()
        assert ipc.request(home, message, got.append, timeout=30) == 0
        assert got == [{"out": "answered\n"}]  # this version takes it: nothing to say
    finally:
        server.close(drain=5)
