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
from memtray.desktop import cli_commands

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
    from memtray.desktop.main import run

    assert not desktop.popup.isVisible()
    box = _in_thread(run, desktop.app.home, [])
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


def test_cli_commands_import_no_qt() -> None:
    code = "import sys, memtray.desktop.cli_commands; assert 'PySide6' not in sys.modules; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


def test_add_commands_registers_toggle_show_quit() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    cli_commands.add_commands(sub)
    assert p.parse_args(["toggle"]).fn is cli_commands.cmd_toggle
    assert p.parse_args(["show", "--window"]).window is True
    assert p.parse_args(["quit"]).fn is cli_commands.cmd_quit


def _core_has_toggle() -> bool:
    from memtray.core.cli import main as cli

    try:
        return getattr(cli.build_parser().parse_args(["toggle"]), "fn", None) is not None
    except SystemExit:
        return False


@pytest.mark.skipif(not _core_has_toggle(), reason="core/cli.build_parser does not call add_commands yet")
def test_memtray_toggle_subprocess(qtbot: Any, desktop: Any) -> None:
    env = dict(os.environ, MEMTRAY_HOME=str(desktop.app.home.root))
    proc = subprocess.Popen([sys.executable, "-m", "memtray.core.cli", "toggle"], env=env, cwd=str(ROOT))
    qtbot.waitUntil(desktop.popup.isVisible, timeout=30000)
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        qtbot.wait(50)
    assert proc.returncode == 0
