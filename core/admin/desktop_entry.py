"""``memtray install-desktop``: the application menu entry and icon for this user (Linux).

Writes ``$XDG_DATA_HOME/applications/memtray.desktop`` (from
``resources/memtray.desktop``, with ``Exec`` pointing at how this memtray was
started: the AppImage in ``$APPIMAGE``, a frozen executable, the ``memtray``
script, or this Python) and ``$XDG_DATA_HOME/icons/hicolor/scalable/apps/memtray.svg``.
Launch at login is not done here: that is ``desktop/autostart.py`` (Settings).
Pure functions of (environment, paths) so the tests run against temporary XDG dirs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memtray import resources
from memtray.core.base.errors import EnvironmentProblem
from memtray.core.base.fsutil import atomic_write

APP_ID = "memtray"
DESKTOP_FILE = f"{APP_ID}.desktop"
ICON_FILE = f"{APP_ID}.svg"


class DesktopIntegrationError(EnvironmentProblem):
    """The menu entry could not be installed (platform or file system)."""


def launch_command(env: Mapping[str, str] | None = None, executable: str | None = None,
                   frozen: bool | None = None) -> list[str]:
    """How to start this memtray again: the AppImage, the frozen app, the script, or this Python."""
    env = os.environ if env is None else env
    if env.get("APPIMAGE"):
        return [env["APPIMAGE"]]
    exe = executable or sys.executable
    if frozen if frozen is not None else getattr(sys, "frozen", False):
        return [exe]  # a PyInstaller build: the executable is memtray itself
    script = shutil.which(APP_ID, path=env.get("PATH"))
    if script:
        return [os.path.abspath(script)]
    return [exe, "-m", "memtray.core.cli"]


def xdg_quote(arg: str) -> str:
    """Quote one ``Exec`` argument as the Desktop Entry spec requires."""
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`%='):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")
    return f'"{escaped}"'.replace("%", "%%")


def exec_line(cmd: list[str], *extra: str) -> str:
    return " ".join(xdg_quote(a) for a in [*cmd, *extra])


def data_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or str(Path.home())) / ".local" / "share")
    return Path(base)


@dataclass(frozen=True)
class Paths:
    desktop: Path
    icon: Path

    @classmethod
    def for_env(cls, env: Mapping[str, str] | None = None) -> Paths:
        base = data_home(env)
        return cls(base / "applications" / DESKTOP_FILE, base / "icons" / "hicolor" / "scalable" / "apps" / ICON_FILE)


def render_entry(template: str, cmd: list[str]) -> str:
    """The packaged .desktop file with every ``Exec``/``TryExec`` pointing at ``cmd``."""
    out = []
    for line in template.splitlines():
        key, sep, value = line.partition("=")
        if sep and key == "Exec":
            args = value.split()[1:]  # keep the action's own arguments (toggle, quit)
            line = f"Exec={exec_line(cmd, *args)}"
        elif sep and key == "TryExec":
            # TryExec takes a bare path: keep it only when it names the program itself
            if len(cmd) != 1:
                continue
            line = f"TryExec={cmd[0]}"
        out.append(line)
    return "\n".join(out) + "\n"


def install(env: Mapping[str, str] | None = None, cmd: list[str] | None = None) -> Paths:
    """Write the menu entry and the icon; return where they went."""
    paths = Paths.for_env(env)
    cmd = cmd or launch_command(env)
    entry = render_entry(resources.text(DESKTOP_FILE), cmd)
    icon = resources.path(f"icons/{ICON_FILE}").read_bytes()
    try:
        paths.desktop.parent.mkdir(parents=True, exist_ok=True)
        paths.icon.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(paths.icon, icon, mode=0o644)
        atomic_write(paths.desktop, entry, mode=0o644)
    except OSError as exc:
        raise DesktopIntegrationError(f"cannot write {exc.filename or paths.desktop}: {exc.strerror or exc}") from exc
    _refresh_caches(paths)
    return paths


def uninstall(env: Mapping[str, str] | None = None) -> list[Path]:
    paths = Paths.for_env(env)
    removed = []
    for p in (paths.desktop, paths.icon):
        try:
            p.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise DesktopIntegrationError(f"cannot remove {p}: {exc.strerror or exc}") from exc
        removed.append(p)
    _refresh_caches(paths)
    return removed


def _refresh_caches(paths: Paths) -> None:
    """Best effort: menus pick new entries up by themselves; these just make it immediate."""
    for cmd in (["update-desktop-database", "-q", str(paths.desktop.parent)],
                ["gtk-update-icon-cache", "-q", "-t", str(paths.icon.parents[2])]):
        if shutil.which(cmd[0]):
            try:
                subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=20, check=False)
            except (OSError, subprocess.SubprocessError):
                pass
