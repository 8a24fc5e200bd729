"""Launch at login: pure functions, tested on Linux with a temporary XDG_CONFIG_HOME."""

from __future__ import annotations

import plistlib
from pathlib import Path

from memtray.desktop import autostart


def test_linux_entry_enable_disable(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path), "PATH": ""}
    path = autostart.set_enabled(True, platform="linux", env=env, cmd=["/usr/bin/memtray"])
    assert path == tmp_path / "autostart" / "memtray.desktop"
    text = path.read_text()
    assert "Exec=/usr/bin/memtray\n" in text and "Type=Application" in text and "Icon=memtray" in text
    assert autostart.is_enabled("linux", env)
    autostart.set_enabled(False, platform="linux", env=env)
    assert not path.exists() and not autostart.is_enabled("linux", env)
    autostart.set_enabled(False, platform="linux", env=env)  # idempotent


def test_default_config_home_is_under_home(tmp_path: Path) -> None:
    assert autostart.linux_path({"HOME": str(tmp_path)}) == tmp_path / ".config" / "autostart" / "memtray.desktop"


def test_appimage_aware_command(tmp_path: Path) -> None:
    assert autostart.command({"APPIMAGE": "/opt/My Apps/memtray.AppImage"}) == ["/opt/My Apps/memtray.AppImage"]
    entry = autostart.linux_entry(autostart.command({"APPIMAGE": "/opt/My Apps/memtray.AppImage"}))
    assert 'Exec="/opt/My Apps/memtray.AppImage"' in entry
    script = tmp_path / "memtray"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert autostart.command({"PATH": str(tmp_path)}) == [str(script)]
    assert autostart.command({"PATH": ""}, executable="/py")[1:] == ["-m", "memtray.core.cli"]


def test_exec_quoting_follows_the_desktop_entry_spec() -> None:
    entry = autostart.linux_entry(["/x/python3", "-m", "memtray.core.cli", "--home", "/a b/$HOME%"])
    assert 'Exec=/x/python3 -m memtray.core.cli --home "/a b/\\$HOME%%"' in entry


def test_mac_plist_and_windows_value() -> None:
    plist = plistlib.loads(autostart.mac_plist(["/Applications/memtray.app/Contents/MacOS/memtray"]))
    assert plist["Label"] == "org.memtray.memtray" and plist["RunAtLoad"] is True
    assert plist["ProgramArguments"] == ["/Applications/memtray.app/Contents/MacOS/memtray"]
    assert autostart.windows_value([r"C:\Program Files\memtray\memtray.exe"]) == r'"C:\Program Files\memtray\memtray.exe"'
