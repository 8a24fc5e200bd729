"""Launch at login: XDG autostart file, macOS LaunchAgent, Windows Run key.

Pure functions of (platform, environment, paths) so each is tested on Linux
with a temporary XDG_CONFIG_HOME; only :func:`set_enabled` touches the system.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memtray.core.admin.desktop_entry import launch_command, xdg_quote
from memtray.core.base.fsutil import atomic_write

LABEL = "org.memtray.memtray"
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
RUN_VALUE = "memtray"


def command(env: Mapping[str, str] | None = None, executable: str | None = None) -> list[str]:
    """What starts memtray: the AppImage, the frozen app, the ``memtray`` script, or this Python.

    The same answer as ``memtray install-desktop`` gives, so the menu entry and
    the autostart entry can never disagree.
    """
    return launch_command(env, executable)


def linux_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".config")
    return Path(base) / "autostart" / "memtray.desktop"


def linux_entry(cmd: list[str]) -> str:
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=memtray\n"
        "Comment=A tray assistant that remembers you\n"
        f"Exec={' '.join(xdg_quote(a) for a in cmd)}\n"
        "Icon=memtray\n"
        "Terminal=false\n"
        "Categories=Utility;\n"
        "X-GNOME-Autostart-enabled=true\n"
        "X-GNOME-Autostart-Delay=3\n"
        "X-KDE-autostart-after=panel\n"
    )


def mac_path(home: Path | None = None) -> Path:
    return (home or Path.home()) / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def mac_plist(cmd: list[str]) -> bytes:
    return plistlib.dumps({
        "Label": LABEL,
        "ProgramArguments": cmd,
        "RunAtLoad": True,
        "ProcessType": "Interactive",
        "KeepAlive": False,
    })


def windows_value(cmd: list[str]) -> str:
    import subprocess

    return subprocess.list2cmdline(cmd)


def _winreg() -> Any:
    """The Windows registry module (``platform`` is a parameter, so mypy cannot narrow on it)."""
    import importlib

    return importlib.import_module("winreg")


def is_enabled(platform: str | None = None, env: Mapping[str, str] | None = None) -> bool:
    platform = platform or sys.platform
    if platform == "darwin":
        return mac_path().exists()
    if platform == "win32":  # pragma: no cover - Windows only
        winreg = _winreg()
        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                winreg.QueryValueEx(key, RUN_VALUE)
            return True
        except OSError:
            return False
    path = linux_path(env)
    if not path.exists():
        return False
    text = path.read_text(encoding="utf-8", errors="replace")
    return "X-GNOME-Autostart-enabled=false" not in text and "Hidden=true" not in text


def set_enabled(on: bool, *, platform: str | None = None, env: Mapping[str, str] | None = None,
                cmd: list[str] | None = None) -> Path | str:
    """Turn launch-at-login on or off; return the file or registry value changed."""
    platform = platform or sys.platform
    cmd = cmd or command(env)
    if platform == "darwin":
        path = mac_path()
        if on:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, mac_plist(cmd), mode=0o644)
        else:
            path.unlink(missing_ok=True)
        return path
    if platform == "win32":  # pragma: no cover - Windows only
        winreg = _winreg()
        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
            if on:
                winreg.SetValueEx(key, RUN_VALUE, 0, winreg.REG_SZ, windows_value(cmd))
            else:
                try:
                    winreg.DeleteValue(key, RUN_VALUE)
                except FileNotFoundError:
                    pass
        return f"HKCU\\{RUN_KEY}\\{RUN_VALUE}"
    path = linux_path(env)
    if on:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, linux_entry(cmd), mode=0o644)
    else:
        path.unlink(missing_ok=True)
    return path


def describe(cmd: list[str]) -> str:
    return shlex.join(cmd)
