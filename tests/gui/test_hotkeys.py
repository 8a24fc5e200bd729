"""Hotkeys: backend selection, parsing, the failure dialog, and XGrabKey for real under Xvfb."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from memtray.core.base.errors import ConfigError
from memtray.desktop.hotkeys import HotkeyService, candidates, keyspec, parse

pytestmark = pytest.mark.gui


@pytest.mark.parametrize(
    ("platform", "env", "qpa", "expected"),
    [
        ("win32", {}, "windows", ["windows"]),
        ("darwin", {}, "cocoa", ["macos"]),
        ("linux", {"DISPLAY": ":0"}, "xcb", ["x11"]),
        ("linux", {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, "wayland", ["portal"]),
        ("linux", {"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"}, "xcb", ["portal"]),
        ("linux", {"DISPLAY": ":0"}, "offscreen", []),
        ("linux", {}, "xcb", []),
        ("linux", {"DISPLAY": ":0", "MEMTRAY_HOTKEY_BACKEND": "none"}, "xcb", []),
        ("linux", {"MEMTRAY_HOTKEY_BACKEND": "x11"}, "offscreen", ["x11"]),
    ],
)
def test_backend_selection(platform: str, env: dict[str, str], qpa: str, expected: list[str]) -> None:
    assert candidates(platform, env, qpa) == expected


def test_parse_and_platform_codes() -> None:
    spec = parse("Ctrl+Alt+Space")
    assert str(spec) == "Ctrl+Alt+Space"
    assert keyspec.x11(spec) == (4 | 8, "space")
    assert keyspec.windows(spec) == (0x4000 | 0x2 | 0x1, 0x20)
    assert keyspec.macos(spec) == (0x100 | 0x800, 0x31)
    assert keyspec.xdg_trigger(spec) == "CTRL+ALT+space"
    assert keyspec.x11(parse("Meta+Shift+K")) == (64 | 1, "k")
    assert keyspec.windows(parse("Ctrl+F5"))[1] == 0x74
    for bad in ("Space", "Ctrl+", "Hyper+X", "Ctrl+Nonsense"):
        with pytest.raises(ConfigError):
            parse(bad)


def test_no_backend_reports_and_shows_the_help_dialog(
    qtbot: Any, configured_home: Any, runtime_dir: Any
) -> None:
    from tests.gui.conftest import close_desktop, make_desktop

    d = make_desktop(qtbot, configured_home, show_dialogs=True)
    try:
        st = d.hotkeys.status
        assert st.state == "none" and not st.ok
        qtbot.waitUntil(lambda: d.hotkey_dialog is not None and d.hotkey_dialog.isVisible(), timeout=5000)
        text = d.hotkey_dialog.text.toPlainText()
        assert "toggle" in d.hotkey_dialog.command and d.hotkey_dialog.command in text
        assert "GNOME" in text and "KDE" in text
        d.main_window().open("settings")
        assert "no global hotkey" in d.window.settings.hotkey_status.text()
    finally:
        close_desktop(d)


def test_failed_backend_is_reported_not_silent(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtray.desktop.hotkeys import Backend, HotkeyError

    class Taken(Backend):
        name = "taken"
        label = "Test backend"

        def register(self, spec: Any) -> bool:
            raise HotkeyError(f"{spec} is already taken by another application", conflict=True)

        def unregister(self) -> None:
            pass

    import memtray.desktop.hotkeys as hk

    monkeypatch.setattr(hk, "backend_class", lambda name: Taken)
    svc = HotkeyService("xcb", platform="linux", env={"MEMTRAY_HOTKEY_BACKEND": "taken"})
    with qtbot.waitSignal(svc.status_changed) as sig:
        svc.apply("Ctrl+Alt+Space")
    st = sig.args[0]
    assert st.state == "failed" and st.conflict and "already taken" in st.describe()


# --- X11 for real ---------------------------------------------------------------------------


@pytest.fixture
def xvfb() -> Iterator[str]:
    if not shutil.which("Xvfb"):
        pytest.skip("Xvfb is not installed")
    display = f":{90 + os.getpid() % 100}"
    proc = subprocess.Popen(["Xvfb", display, "-screen", "0", "800x600x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = f"/tmp/.X11-unix/X{display[1:]}"
    deadline = time.monotonic() + 10
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield display
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_x11_grab_fires_and_conflicts_are_reported(qtbot: Any, xvfb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtray.desktop.hotkeys.base import HotkeyError
    from memtray.desktop.hotkeys.x11 import X11Backend

    monkeypatch.setenv("DISPLAY", xvfb)
    first = X11Backend(xvfb)
    second = X11Backend(xvfb)
    try:
        assert first.register(parse("Ctrl+Alt+Space")) is True
        with pytest.raises(HotkeyError) as info:
            second.register(parse("Ctrl+Alt+Space"))
        assert info.value.conflict and "BadAccess" in str(info.value)
        assert second.register(parse("Ctrl+Alt+K")) is True  # a free combination works
        if shutil.which("xdotool"):
            with qtbot.waitSignal(first.activated, timeout=5000):
                subprocess.run(["xdotool", "key", "ctrl+alt+space"], env=dict(os.environ, DISPLAY=xvfb),
                               check=True, timeout=10)
            with qtbot.waitSignal(second.activated, timeout=5000):
                subprocess.run(["xdotool", "key", "ctrl+alt+k"], env=dict(os.environ, DISPLAY=xvfb),
                               check=True, timeout=10)
        first.unregister()
        third = X11Backend(xvfb)
        try:
            assert third.register(parse("Ctrl+Alt+Space")) is True  # released
        finally:
            third.close()
    finally:
        first.close()
        second.close()
