"""X11 global hotkey: XGrabKey on the root window through libX11 (ctypes).

A private Display connection (not Qt's) holds the grab; its socket is watched
with a QSocketNotifier. The grab is made for every CapsLock/NumLock combination.
A key another client already grabbed fails with BadAccess, which an X error
handler installed only around our requests turns into a conflict report.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import time
from typing import Any

from ..qt import QSocketNotifier
from . import keyspec
from .base import Backend, HotkeyError
from .keyspec import HotkeySpec

KeyPress = 2
KeyRelease = 3
BadAccess = 10
GrabModeAsync = 1


class XErrorEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("resourceid", ctypes.c_ulong),
        ("serial", ctypes.c_ulong),
        ("error_code", ctypes.c_ubyte),
        ("request_code", ctypes.c_ubyte),
        ("minor_code", ctypes.c_ubyte),
    ]


class XKeyEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("serial", ctypes.c_ulong),
        ("send_event", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("window", ctypes.c_ulong),
        ("root", ctypes.c_ulong),
        ("subwindow", ctypes.c_ulong),
        ("time", ctypes.c_ulong),
        ("x", ctypes.c_int),
        ("y", ctypes.c_int),
        ("x_root", ctypes.c_int),
        ("y_root", ctypes.c_int),
        ("state", ctypes.c_uint),
        ("keycode", ctypes.c_uint),
        ("same_screen", ctypes.c_int),
    ]


class XEvent(ctypes.Union):
    _fields_ = [("type", ctypes.c_int), ("xkey", XKeyEvent), ("pad", ctypes.c_long * 24)]


ErrorHandler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(XErrorEvent))

_lib: Any = None


def _xlib() -> Any:
    global _lib
    if _lib is None:
        name = ctypes.util.find_library("X11") or "libX11.so.6"
        lib = ctypes.CDLL(name)
        lib.XOpenDisplay.restype = ctypes.c_void_p
        lib.XOpenDisplay.argtypes = [ctypes.c_char_p]
        lib.XCloseDisplay.argtypes = [ctypes.c_void_p]
        lib.XDefaultRootWindow.restype = ctypes.c_ulong
        lib.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        lib.XStringToKeysym.restype = ctypes.c_ulong
        lib.XStringToKeysym.argtypes = [ctypes.c_char_p]
        lib.XKeysymToKeycode.restype = ctypes.c_ubyte
        lib.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        lib.XGrabKey.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int, ctypes.c_int, ctypes.c_int,
        ]
        lib.XUngrabKey.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong]
        lib.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.XFlush.argtypes = [ctypes.c_void_p]
        lib.XPending.argtypes = [ctypes.c_void_p]
        lib.XNextEvent.argtypes = [ctypes.c_void_p, ctypes.POINTER(XEvent)]
        lib.XConnectionNumber.argtypes = [ctypes.c_void_p]
        lib.XSetErrorHandler.restype = ctypes.c_void_p
        lib.XSetErrorHandler.argtypes = [ctypes.c_void_p]
        _lib = lib
    return _lib


class X11Backend(Backend):
    name = "x11"
    label = "X11 (XGrabKey)"

    def __init__(self, display_name: str | None = None) -> None:
        super().__init__()
        self._display_name = display_name
        self._dpy: int | None = None
        self._root = 0
        self._grabbed: list[tuple[int, int]] = []
        self._keycode = 0
        self._mask = 0
        self._notifier: QSocketNotifier | None = None
        self._last = 0.0
        self._errors: list[int] = []

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if not os.environ.get("DISPLAY"):
            return "no X11 display ($DISPLAY is not set)"
        try:
            _xlib()
        except OSError as exc:
            return f"libX11 cannot be loaded ({exc})"
        return None

    def _open(self) -> int:
        if self._dpy is None:
            lib = _xlib()
            name = self._display_name.encode() if self._display_name else None
            dpy = lib.XOpenDisplay(name)
            if not dpy:
                raise HotkeyError(f"cannot open the X display {self._display_name or os.environ.get('DISPLAY')}")
            self._dpy = dpy
            self._root = lib.XDefaultRootWindow(dpy)
            self._notifier = QSocketNotifier(lib.XConnectionNumber(dpy), QSocketNotifier.Type.Read, self)
            self._notifier.activated.connect(self._drain)
        return self._dpy

    def _checked(self, requests: Any) -> list[int]:
        """Run X requests with an error handler that records our errors; return their codes."""
        lib = _xlib()
        dpy = self._dpy
        self._errors = []
        previous: list[Any] = []

        def on_error(display: int, event: Any) -> int:
            if display == dpy:
                self._errors.append(int(event.contents.error_code))
                return 0
            if previous and previous[0]:
                return int(ErrorHandler(previous[0])(display, event))
            return 0

        handler = ErrorHandler(on_error)
        previous.append(lib.XSetErrorHandler(ctypes.cast(handler, ctypes.c_void_p)))
        try:
            requests()
            lib.XSync(dpy, 0)
        finally:
            lib.XSetErrorHandler(previous[0])
        return list(self._errors)

    def register(self, spec: HotkeySpec) -> bool:
        self.unregister()
        lib = _xlib()
        dpy = self._open()
        mask, symname = keyspec.x11(spec)
        sym = lib.XStringToKeysym(symname.encode())
        code = lib.XKeysymToKeycode(dpy, sym) if sym else 0
        if not code:
            raise HotkeyError(f"the key {spec.key!r} has no keycode on this keyboard layout")
        combos = [mask | extra for extra in keyspec.X11_IGNORED]

        def grab() -> None:
            for m in combos:
                lib.XGrabKey(dpy, code, m, self._root, 0, GrabModeAsync, GrabModeAsync)

        errors = self._checked(grab)
        if errors:
            # undo the combinations that did succeed
            self._checked(lambda: [lib.XUngrabKey(dpy, code, m, self._root) for m in combos])
            if BadAccess in errors:
                raise HotkeyError(
                    f"{spec} is already taken by another application (X11 BadAccess)",
                    conflict=True,
                    hint="Choose another hotkey in Settings, or free it in the other application.",
                )
            raise HotkeyError(f"X11 refused to grab {spec} (X error {errors[0]})")
        self._keycode, self._mask = code, mask
        self._grabbed = [(code, m) for m in combos]
        return True

    def unregister(self) -> None:
        if self._dpy is not None and self._grabbed:
            lib = _xlib()
            dpy = self._dpy
            self._checked(lambda: [lib.XUngrabKey(dpy, c, m, self._root) for c, m in self._grabbed])
        self._grabbed = []

    def close(self) -> None:
        self.unregister()
        if self._notifier is not None:
            self._notifier.setEnabled(False)
            self._notifier.deleteLater()
            self._notifier = None
        if self._dpy is not None:
            _xlib().XCloseDisplay(self._dpy)
            self._dpy = None

    def _drain(self) -> None:
        lib = _xlib()
        dpy = self._dpy
        if dpy is None:
            return
        ev = XEvent()
        fire = False
        while lib.XPending(dpy):
            lib.XNextEvent(dpy, ctypes.byref(ev))
            if ev.type == KeyPress and ev.xkey.keycode == self._keycode:
                state = ev.xkey.state & ~(keyspec.X11_IGNORED[-1])
                if state & 0xFF == self._mask:
                    fire = True
        if fire:
            now = time.monotonic()
            # a held key auto-repeats (first repeat after ~500 ms, then every ~30 ms):
            # every press pushes the window on, so one hold is one toggle
            quiet = now - self._last > 0.6
            self._last = now
            if quiet:
                self.activated.emit()
