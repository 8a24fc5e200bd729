"""Before Qt starts: is there a display, and can the platform plugin's libraries load?

Qt aborts the process (SIGABRT, after a hint that is often wrong) when it finds
no display or cannot load its platform plugin; nothing of ours runs after that.
:func:`check` looks first, without importing Qt, and raises
:class:`DisplayUnavailable` naming what is missing, so ``memtray`` prints one
``memtray: error:`` line and exits 1.

Linux only (elsewhere Qt's platform plugin is part of the package). The plugin
is the one Qt would load: ``QT_QPA_PLATFORM`` (first usable entry; default
``wayland`` when ``WAYLAND_DISPLAY`` is set, else ``xcb``), looked up in
``QT_QPA_PLATFORM_PLUGIN_PATH``, ``QT_PLUGIN_PATH``/platforms, then PySide6's own
plugins. Its missing libraries come from ``ldd`` (which follows the whole
dependency tree, Qt's own XCB library included).
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Any

from memtray.core.base.errors import EnvironmentProblem

HEADLESS = "`memtray chat`, `memtray ask` and `memtray daemon` work without a display."
#: platforms that need no display at all
NO_DISPLAY_PLATFORMS = {"offscreen", "minimal", "vnc", "linuxfb", "eglfs", "minimalegl", "vkkhrdisplay"}
#: Debian package names that do not follow the soname rule of :func:`debian_package`
DEBIAN_NAMES = {"libglib-2.0.so.0": "libglib2.0-0", "libgthread-2.0.so.0": "libglib2.0-0",
                "libX11-xcb.so.1": "libx11-xcb1", "libX11.so.6": "libx11-6"}


class DisplayUnavailable(EnvironmentProblem):
    """No display to open windows on, or the Qt platform plugin cannot load."""

    hint = HEADLESS


def debian_package(soname: str) -> str:
    """``libxcb-icccm.so.4`` -> ``libxcb-icccm4``; ``libxkbcommon-x11.so.0`` -> ``libxkbcommon-x11-0``."""
    import re

    if soname in DEBIAN_NAMES:
        return DEBIAN_NAMES[soname]
    m = re.fullmatch(r"(.+)\.so\.(\d+)(?:\..*)?", soname)
    if not m:
        return soname
    name, major = m.group(1).lower(), m.group(2)
    return f"{name}-{major}" if name[-1].isdigit() else f"{name}{major}"


def _platforms(env: dict[str, str]) -> list[str]:
    spec = env.get("QT_QPA_PLATFORM", "").strip()
    if spec:
        return [p.split(":", 1)[0].strip() for p in spec.split(";") if p.strip()]
    return ["wayland", "xcb"] if env.get("WAYLAND_DISPLAY") else ["xcb"]


def plugin_dirs(env: dict[str, str]) -> list[Path]:
    dirs = [Path(p) for p in env.get("QT_QPA_PLATFORM_PLUGIN_PATH", "").split(os.pathsep) if p]
    dirs += [Path(p) / "platforms" for p in env.get("QT_PLUGIN_PATH", "").split(os.pathsep) if p]
    try:
        import importlib.util

        spec = importlib.util.find_spec("PySide6")
        if spec is not None and spec.origin:
            dirs.append(Path(spec.origin).parent / "Qt" / "plugins" / "platforms")
    except (ImportError, ValueError):
        pass
    return dirs


def find_plugin(platform: str, env: dict[str, str]) -> Path | None:
    name = "libqwayland.so" if platform.startswith("wayland") else f"libq{platform}.so"
    alt = "libqwayland-generic.so" if platform.startswith("wayland") else name
    for d in plugin_dirs(env):
        for n in (name, alt):
            if (d / n).is_file():
                return d / n
    return None


def missing_libraries(plugin: Path) -> list[str]:
    """The sonames ``plugin`` needs that the dynamic linker cannot find ([] if unknown)."""
    import shutil
    import subprocess

    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    try:
        out = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20,
                             env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return []
    missing = []
    for line in out.stdout.splitlines():
        name, sep, where = line.strip().partition("=>")
        if sep and "not found" in where and name.strip() not in missing:
            missing.append(name.strip())
    return missing


def loads(plugin: Path) -> bool:
    """Whether the dynamic linker loads ``plugin`` with everything it needs.

    The quick answer on every start (Qt loads the same libraries a moment later, so
    this costs next to nothing); only when it fails does :func:`missing_libraries`
    run ``ldd`` to name what is missing.
    """
    try:
        ctypes.CDLL(str(plugin), mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError:
        return False
    return True


#: the probe's X connection, kept open until Qt has its own (see :func:`x_server_answers`)
_held: list[tuple[Any, int]] = []


def x_server_answers(display: str, *, hold: bool = False) -> bool | None:
    """Whether an X server accepts a connection on ``display`` (None: cannot tell).

    ``hold``: keep the connection open until :func:`release` (called once Qt is
    connected). An X server with no other client resets when the last one leaves
    (Xvfb without ``-noreset``), and a connection made while it resets fails: Qt,
    started a moment after the check, would abort.
    """
    try:
        xcb = ctypes.CDLL("libxcb.so.1")  # its soname: no `ldconfig -p` run on every start
    except OSError:
        from ctypes.util import find_library

        lib = find_library("xcb")
        if lib is None:
            return None
        try:
            xcb = ctypes.CDLL(lib)
        except OSError:
            return None
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    conn = xcb.xcb_connect(display.encode(), None)
    ok = not xcb.xcb_connection_has_error(conn)
    if ok and hold:
        _held.append((xcb, conn))
    else:
        xcb.xcb_disconnect(conn)
    return ok


def release() -> None:
    """Close the connection :func:`check` kept open (Qt has connected by now)."""
    while _held:
        xcb, conn = _held.pop()
        xcb.xcb_disconnect(conn)


def _wayland_socket(env: dict[str, str]) -> bool:
    name = env.get("WAYLAND_DISPLAY", "")
    if not name:
        return False
    path = Path(name) if name.startswith("/") else Path(env.get("XDG_RUNTIME_DIR", "/nonexistent")) / name
    return path.exists()


def problem(env: dict[str, str] | None = None, platform: str = sys.platform, *, hold: bool = False) -> str | None:
    """What keeps Qt from starting here (one sentence), or None when nothing does.

    ``hold``: keep the X connection it made open until :func:`release`."""
    if not platform.startswith("linux"):
        return None
    env = dict(os.environ if env is None else env)
    reasons: list[str] = []
    for name in _platforms(env):
        if name in NO_DISPLAY_PLATFORMS:
            return None
        if name.startswith("wayland"):
            if not _wayland_socket(env):
                reasons.append(f"no Wayland display ({'WAYLAND_DISPLAY is not set' if not env.get('WAYLAND_DISPLAY') else 'nothing listens on ' + env['WAYLAND_DISPLAY']})")
                continue
        elif name == "xcb":
            display = env.get("DISPLAY", "")
            if not display:
                reasons.append("no display (DISPLAY is not set" + (
                    ")" if "WAYLAND_DISPLAY" in env else " and neither is WAYLAND_DISPLAY)"))
                continue
        plugin = find_plugin(name, env)
        if plugin is None:
            reasons.append(f"Qt's {name} platform plugin is not installed (looked in "
                           + ", ".join(str(d) for d in plugin_dirs(env)) + ")")
            continue
        missing = [] if loads(plugin) else missing_libraries(plugin)
        if missing:
            pkgs = " ".join(dict.fromkeys(debian_package(m) for m in missing))
            reasons.append(f"Qt's {name} platform plugin cannot load: missing {', '.join(missing)} "
                           f"(Debian/Ubuntu: sudo apt install {pkgs}; other systems: the packages that "
                           "provide these files)")
            continue
        if name == "xcb" and x_server_answers(env["DISPLAY"], hold=hold) is False:
            reasons.append(f"cannot connect to the X display {env['DISPLAY']} (is it running, and may you use it?)")
            continue
        return None
    return "; ".join(reasons) if reasons else None


def check(env: dict[str, str] | None = None) -> None:
    """Raise :class:`DisplayUnavailable` when Qt could not start a GUI here.

    Call :func:`release` once the QApplication exists (it keeps its X connection)."""
    why = problem(env, hold=True)
    if why:
        raise DisplayUnavailable(f"the desktop app cannot start: {why}")
