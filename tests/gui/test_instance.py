"""Single instance over the core IPC socket: toggle/show/quit, forwarded CLI commands, stale sockets."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from memtray.core.base import ipc
from memtray.core.cli import instance as cli_commands

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]


def _in_thread(fn: Any, *args: Any) -> dict[str, Any]:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = fn(*args)
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    box["thread"] = t
    return box


def _request(home: Any, argv: list[str], out: list[dict[str, Any]]) -> int:
    return ipc.request(home, {"argv": argv, "env": {}, "tty": False}, out.append, timeout=30)


def test_toggle_over_ipc_shows_and_hides_the_popup(qtbot: Any, desktop: Any) -> None:
    home = desktop.app.home
    popup = desktop.popup
    assert not popup.isVisible()
    box = _in_thread(_request, home, ["toggle"], [])
    qtbot.waitUntil(popup.isVisible, timeout=10000)
    qtbot.waitUntil(lambda: "result" in box, timeout=10000)
    assert box["result"] == 0
    box = _in_thread(_request, home, ["toggle"], [])
    qtbot.waitUntil(lambda: not popup.isVisible(), timeout=10000)
    qtbot.waitUntil(lambda: "result" in box, timeout=10000)


def test_toggle_through_the_cli_command_and_activation_token(
    qtbot: Any, desktop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_ACTIVATION_TOKEN", "token-123")
    home = desktop.app.home
    box = _in_thread(cli_commands.cmd_toggle, argparse.Namespace(), home)
    qtbot.waitUntil(desktop.popup.isVisible, timeout=10000)
    qtbot.waitUntil(lambda: "result" in box, timeout=10000)
    assert box["result"] == 0
    assert os.environ["XDG_ACTIVATION_TOKEN"] == "token-123"  # applied before showing


def test_forwarded_cli_command_runs_off_the_gui_thread(qtbot: Any, desktop: Any) -> None:
    out: list[dict[str, Any]] = []
    box = _in_thread(_request, desktop.app.home, ["config", "get", "model"], out)
    qtbot.waitUntil(lambda: "result" in box or "error" in box, timeout=20000)
    assert box.get("result") == 0, box
    assert "".join(m.get("out", "") for m in out).strip() == "openai/test-model"


def test_bad_requests_do_not_kill_the_server(qtbot: Any, desktop: Any) -> None:
    path = str(ipc.socket_path(desktop.app.home))

    def raw() -> list[dict[str, Any]]:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(path)
        s.sendall(b"this is not json\n")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        s.close()
        return [json.loads(line) for line in data.splitlines()]

    box = _in_thread(raw)
    qtbot.waitUntil(lambda: "result" in box, timeout=10000)
    assert box["result"][-1] == {"exit": 2}
    box = _in_thread(ipc.is_running, desktop.app.home)
    qtbot.waitUntil(lambda: "result" in box, timeout=10000)
    assert box["result"] is True


def test_quit_over_ipc(qtbot: Any, desktop: Any) -> None:
    from memtray.desktop.qt import QApplication

    quits: list[bool] = []
    desktop.quit = lambda: quits.append(True)  # type: ignore[method-assign]
    box = _in_thread(cli_commands.cmd_quit, argparse.Namespace(), desktop.app.home)
    qtbot.waitUntil(lambda: quits == [True], timeout=10000)
    qtbot.waitUntil(lambda: "result" in box, timeout=10000)
    assert box["result"] == 0
    assert QApplication.instance() is not None


def test_second_start_forwards_show_and_exits_0(qtbot: Any, desktop: Any) -> None:
    from memtray.core.cli.main import serve
    from memtray.desktop.main import run

    assert not desktop.popup.isVisible()
    box = _in_thread(run, desktop.app.home, [], serve)
    qtbot.waitUntil(lambda: "result" in box or "error" in box, timeout=20000)
    assert box.get("result") == 0, box
    assert desktop.popup.isVisible()


def test_stale_socket_after_a_crash_is_cleared(qtbot: Any, configured_home: Any, runtime_dir: Path) -> None:
    from tests.gui.conftest import close_desktop, make_desktop

    path = ipc.socket_path(configured_home)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()  # the file stays, nobody listens: what a crash leaves
    assert path.exists()
    d = make_desktop(qtbot, configured_home)
    try:
        assert d.server is not None and d.server.listening
        box = _in_thread(ipc.is_running, configured_home)
        qtbot.waitUntil(lambda: "result" in box, timeout=10000)
        assert box["result"] is True
    finally:
        close_desktop(d)
    assert not path.exists()


def test_show_without_an_instance_starts_one(home: Any, runtime_dir: Path) -> None:
    started: list[Any] = []
    with pytest.raises(cli_commands.NotStarted):
        cli_commands.forward(home, ["show"], start=True, spawn=started.append, timeout=0.5)
    assert started == [home]
    with pytest.raises(ipc.NoInstance):
        cli_commands.forward(home, ["toggle"], start=False)


def test_quit_without_an_instance_says_so(home: Any, runtime_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_commands.cmd_quit(argparse.Namespace(), home) == 0
    assert "not running" in capsys.readouterr().err


def test_add_commands_registers_toggle_show_quit() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    cli_commands.add_commands(sub)
    assert p.parse_args(["toggle"]).fn is cli_commands.cmd_toggle
    assert p.parse_args(["show", "--window"]).window is True
    assert p.parse_args(["quit"]).fn is cli_commands.cmd_quit


def test_core_parser_has_the_desktop_commands() -> None:
    """The installed front end adds toggle/show/quit to the CLI's own parser."""
    from memtray.core.cli import main as cli

    assert cli.build_parser().parse_args(["toggle"]).fn is cli_commands.cmd_toggle


def test_memtray_toggle_subprocess(qtbot: Any, desktop: Any) -> None:
    env = dict(os.environ, MEMTRAY_HOME=str(desktop.app.home.root))
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "toggle"], env=env, cwd=str(ROOT))
    qtbot.waitUntil(desktop.popup.isVisible, timeout=30000)
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        qtbot.wait(50)
    assert proc.returncode == 0


def test_the_app_takes_over_from_a_warm_instance_without_losing_a_message(
    qtbot: Any, configured_home: Any, runtime_dir: Path
) -> None:
    """Asks sent while the warm instance hands over are served by it or by the app, each once."""
    from memtray.core.app import App
    from memtray.core.base import handover
    from memtray.core.cli import warm
    from memtray.core.log.eventlog import EventLog

    from tests.gui.conftest import close_desktop
    from tests.support import cli_env

    env = cli_env(configured_home.root, MEMTRAY_NO_WARM="", OPENAI_API_KEY="sk-test")
    instance = subprocess.Popen(warm.command(configured_home), env=env, stderr=subprocess.PIPE, text=True,
                                cwd=str(ROOT))
    assert instance.stderr is not None
    line = instance.stderr.readline()
    assert "ready, warm" in line, line + instance.stderr.read()
    texts = [f"during the handover {i}" for i in range(5)]
    asks = [subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "ask", t], env=env, cwd=str(ROOT),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for t in texts]
    d = None
    try:
        app = handover.take_over(configured_home, lambda: App.open(configured_home))
        assert app is not None, "the warm instance did not hand over"
        from memtray.core.cli.main import serve
        from memtray.desktop.main import Desktop
        from memtray.desktop.qt import QApplication

        d = Desktop(app, QApplication.instance(), serve, tray_available=False, show_dialogs=False, warm_up=False)
        d.start()
        assert d.server is not None and d.server.listening
        rest = instance.communicate(timeout=120)[1]  # it finished what it started, then left
        assert instance.returncode == 0
        assert "handing the data home over" in rest
        for t, p in zip(texts, asks, strict=True):
            while p.poll() is None:  # the app serves them on its event loop
                qtbot.wait(50)
            out, err = p.communicate()
            assert p.returncode == 0, (t, err)
            assert out.endswith(f"{t}\n"), (t, out, err)
    finally:
        for p in asks:
            if p.poll() is None:
                p.kill()
                p.communicate()
        if instance.poll() is None:
            instance.kill()
            instance.communicate()
        if d is not None:
            close_desktop(d)
    elog = EventLog.open(configured_home.events, readonly=True)
    try:
        logged = [r.data["content"] for r in elog.iter_records()
                  if r.type == "message" and r.data.get("role") == "user"]
    finally:
        elog.close()
    assert sorted(logged) == sorted(texts)


def test_the_app_does_not_take_over_from_a_plain_daemon(configured_home: Any, runtime_dir: Path) -> None:
    from memtray.core.base import handover

    from tests.support import cli_env

    env = cli_env(configured_home.root, OPENAI_API_KEY="sk-test")
    daemon = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "daemon"], env=env,
                              stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        assert daemon.stderr is not None
        assert "memtray daemon: ready" in daemon.stderr.readline()
        from memtray.core.app import App

        assert handover.take_over(configured_home, lambda: App.open(configured_home)) is None
        assert daemon.poll() is None  # it stays; the app asks it to show itself instead
    finally:
        daemon.terminate()
        daemon.communicate(timeout=120)


def test_the_app_is_reached_from_an_environment_without_its_runtime_dir(
    qtbot: Any, desktop: Any, runtime_dir: Path, llm_server: Any
) -> None:
    """A command from cron, ssh or an app launcher (no XDG_RUNTIME_DIR, another TMPDIR) finds
    the app's socket from the data home, and its own model reaches the server for it only."""
    import shutil
    import tempfile

    from tests.support import cli_env

    home = desktop.app.home
    other_tmp = Path(tempfile.mkdtemp(prefix="mtcron"))
    env = cli_env(home.root, TMPDIR=str(other_tmp), OPENAI_API_KEY="sk-test")
    env.pop("XDG_RUNTIME_DIR", None)
    try:
        procs = [subprocess.Popen([sys.executable, "-m", "memtray.core.cli", *argv], env=dict(env, **extra),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
                 for argv, extra in ((["memory", "log"], {}),
                                     (["ask", "from cron"], {"MEMTRAY_MODEL": "openai/cron-model"}))]
        for p in procs:  # the app answers on its event loop: keep it turning; each is bounded
            deadline = time.monotonic() + 120
            while p.poll() is None and time.monotonic() < deadline:
                qtbot.wait(50)
        results = [p.communicate(timeout=10) for p in procs]
    finally:
        shutil.rmtree(other_tmp, ignore_errors=True)
    (log_out, log_err), (ask_out, ask_err) = results
    assert [p.returncode for p in procs] == [0, 0], (log_err, ask_err)
    assert log_out == "memory has no revisions yet\n" and log_err == ""
    assert ask_out.endswith("from cron\n"), ask_err
    assert desktop.app.config.model == "openai/test-model"  # the app's own model is unchanged
    asked = [r.json["model"] for r in llm_server.requests if r.path.endswith("/chat/completions")]
    assert asked == ["cron-model"]  # the command's own model answered it
