"""Windows global hotkey: RegisterHotKey (user32 via ctypes), WM_HOTKEY via a native event filter.

The hotkey is registered for the GUI thread (hwnd NULL), so WM_HOTKEY arrives in
that thread's queue, which Qt's event dispatcher hands to native event filters.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from ..qt import QAbstractNativeEventFilter, QCoreApplication
from . import keyspec
from .base import Backend, HotkeyError
from .keyspec import HotkeySpec

WM_HOTKEY = 0x0312
ERROR_HOTKEY_ALREADY_REGISTERED = 1409
HOTKEY_ID = 0x6D74  # "mt"


class _MSG(ctypes.Structure):
    _fields_ = [
        ("hwnd", ctypes.c_void_p),
        ("message", ctypes.c_uint),
        ("wParam", ctypes.c_size_t),
        ("lParam", ctypes.c_ssize_t),
        ("time", ctypes.c_ulong),
        ("pt_x", ctypes.c_long),
        ("pt_y", ctypes.c_long),
    ]


class _Filter(QAbstractNativeEventFilter):
    def __init__(self, backend: WindowsBackend) -> None:
        super().__init__()
        self.backend = backend

    def nativeEventFilter(self, eventType: Any, message: Any) -> Any:
        try:
            msg = _MSG.from_address(int(message))
        except (TypeError, ValueError):
            return False, 0
        if msg.message == WM_HOTKEY and msg.wParam == HOTKEY_ID:
            self.backend.activated.emit()
            return True, 0
        return False, 0


class WindowsBackend(Backend):
    name = "windows"
    label = "Windows (RegisterHotKey)"

    def __init__(self) -> None:
        super().__init__()
        self._registered = False
        self._filter: _Filter | None = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return None if sys.platform == "win32" else "not Windows"

    def register(self, spec: HotkeySpec) -> bool:
        self.unregister()
        mods, vk = keyspec.windows(spec)
        user32 = ctypes.WinDLL("user32", use_last_error=True)  # type: ignore[attr-defined]
        if not user32.RegisterHotKey(None, HOTKEY_ID, mods, vk):
            err = ctypes.get_last_error()  # type: ignore[attr-defined]
            if err == ERROR_HOTKEY_ALREADY_REGISTERED:
                raise HotkeyError(
                    f"{spec} is already registered by another application", conflict=True,
                    hint="Choose another hotkey in Settings.",
                )
            raise HotkeyError(f"RegisterHotKey failed for {spec} (Windows error {err})")
        if self._filter is None:
            self._filter = _Filter(self)
            app = QCoreApplication.instance()
            if app is not None:
                app.installNativeEventFilter(self._filter)
        self._registered = True
        return True

    def unregister(self) -> None:
        if self._registered:
            ctypes.WinDLL("user32").UnregisterHotKey(None, HOTKEY_ID)  # type: ignore[attr-defined]
            self._registered = False

    def close(self) -> None:
        self.unregister()
        app = QCoreApplication.instance()
        if self._filter is not None and app is not None:
            app.removeNativeEventFilter(self._filter)
        self._filter = None
