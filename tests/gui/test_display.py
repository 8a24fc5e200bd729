"""No display, or a Qt platform plugin that cannot load: one error line and exit 1, never
Qt's abort; ``toggle`` notices at once when the app it started died."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from memtray.core.cli import instance as cli_commands
from memtray.desktop import display

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]


def _env(home: Any, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "MEMTRAY_NO_DESKTOP")}
    env.update(MEMTRAY_HOME=str(home.root), MEMTRAY_HOTKEY_BACKEND="none", **extra)
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memtray.core.cli", *args], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120)


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("memtray: error:")]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the display check is for Linux")
def test_no_display_is_one_error_line_and_exit_1(home: Any, runtime_dir: Path) -> None:
    out = _run([], _env(home))
    assert out.returncode == 1, out.stderr  # not 134 (SIGABRT) nor -6
    errors = _error_lines(out.stderr)
    assert len(errors) == 1, out.stderr
    assert "no display" in errors[0] and "DISPLAY is not set" in errors[0]
    assert "memtray chat" in out.stderr and "memtray daemon" in out.stderr
    assert "Traceback" not in out.stderr and "qt.qpa" not in out.stderr  # Qt never started


@pytest.fixture
def broken_plugin(tmp_path: Path) -> Path:
    """A real xcb platform plugin file that needs a library the system does not have:
    built against a stub ``libxcb-nothere.so.7`` that is deleted afterwards."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("a C compiler is needed to build the broken plugin")
    build = tmp_path / "build"
    build.mkdir()
    (build / "stub.c").write_text("int memtray_stub(void) { return 1; }\n")
    (build / "plugin.c").write_text("int memtray_stub(void);\nint plugin(void) { return memtray_stub(); }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname,libxcb-nothere.so.7", "-o",
                    str(build / "libxcb-nothere.so.7"), str(build / "stub.c")], check=True, timeout=60)
    plugins = tmp_path / "platforms"
    plugins.mkdir()
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(plugins / "libqxcb.so"), str(build / "plugin.c"),
                    str(build / "libxcb-nothere.so.7")], check=True, timeout=60)
    shutil.rmtree(build)
    return plugins


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the display check is for Linux")
def test_missing_plugin_library_is_named_with_its_package(home: Any, runtime_dir: Path, broken_plugin: Path) -> None:
    # Qt itself would load this plugin (QT_QPA_PLATFORM_PLUGIN_PATH comes first) and abort
    out = _run([], _env(home, DISPLAY=":0", QT_QPA_PLATFORM="xcb", QT_QPA_PLATFORM_PLUGIN_PATH=str(broken_plugin)))
    assert out.returncode == 1, out.stderr
    errors = _error_lines(out.stderr)
    assert len(errors) == 1, out.stderr
    assert "missing libxcb-nothere.so.7" in errors[0]
    assert "sudo apt install libxcb-nothere7" in errors[0]
    assert "memtray chat" in out.stderr


def test_the_check_passes_where_qt_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    assert display.problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert display.problem({}, "darwin") is None
    assert "DISPLAY is not set" in (display.problem({}, "linux") or "")


@pytest.mark.parametrize(("soname", "package"), [
    ("libxcb-icccm.so.4", "libxcb-icccm4"), ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
    ("libEGL.so.1", "libegl1"), ("libdbus-1.so.3", "libdbus-1-3"), ("libxcb-cursor.so.0", "libxcb-cursor0"),
    ("libglib-2.0.so.0", "libglib2.0-0"),
])
def test_debian_package_names(soname: str, package: str) -> None:
    assert display.debian_package(soname) == package


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the display check is for Linux")
def test_toggle_reports_the_started_app_dying_at_once(home: Any, runtime_dir: Path) -> None:
    """`memtray toggle` with no display: the app it starts exits 1; toggle says why
    (the child's own error) instead of waiting for the socket until its timeout."""
    out = _run(["toggle"], _env(home))
    assert out.returncode == 1, out.stderr
    errors = _error_lines(out.stderr)
    assert len(errors) == 1, out.stderr
    assert "exited at once (status 1)" in errors[0]
    assert "no display" in errors[0]
    assert "did not answer" not in out.stderr


def test_forward_notices_the_child_exit(home: Any, runtime_dir: Path) -> None:
    def spawn(h: Any) -> subprocess.Popen[bytes]:
        cli_commands.start_log(h).parent.mkdir(parents=True, exist_ok=True)
        cli_commands.start_log(h).write_text("memtray: error: it broke\n  try this\n")
        return subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])

    # the timeout is far beyond the test's own: only the exit check can end the wait
    with pytest.raises(cli_commands.NotStarted) as info:
        cli_commands.forward(home, ["toggle"], start=True, spawn=spawn, timeout=3600)
    assert "exited at once (status 3): it broke" in str(info.value)
    assert info.value.hint == "try this"
