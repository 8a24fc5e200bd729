"""macOS global hotkey: Carbon RegisterEventHotKey through ctypes.

Carbon hot keys still work in sandboxed and notarised apps without the
Accessibility permission (unlike an event tap). The handler is installed on the
application event target, which Qt's Cocoa run loop dispatches.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from . import keyspec
from .base import Backend, HotkeyError
from .keyspec import HotkeySpec

CARBON = "/System/Library/Frameworks/Carbon.framework/Carbon"
eventHotKeyExistsErr = -9878
SIGNATURE = int.from_bytes(b"mtry", "big")


def _fourcc(s: str) -> int:
    return int.from_bytes(s.encode(), "big")


class EventHotKeyID(ctypes.Structure):
    _fields_ = [("signature", ctypes.c_uint32), ("id", ctypes.c_uint32)]


class EventTypeSpec(ctypes.Structure):
    _fields_ = [("eventClass", ctypes.c_uint32), ("eventKind", ctypes.c_uint32)]


Handler = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class MacBackend(Backend):
    name = "macos"
    label = "macOS (Carbon RegisterEventHotKey)"

    def __init__(self) -> None:
        super().__init__()
        self._carbon: Any = None
        self._ref = ctypes.c_void_p()
        self._handler_ref = ctypes.c_void_p()
        self._callback: Any = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return None if sys.platform == "darwin" else "not macOS"

    def _lib(self) -> Any:
        if self._carbon is None:
            lib = ctypes.CDLL(CARBON)
            lib.GetApplicationEventTarget.restype = ctypes.c_void_p
            lib.RegisterEventHotKey.argtypes = [
                ctypes.c_uint32, ctypes.c_uint32, EventHotKeyID, ctypes.c_void_p, ctypes.c_uint32,
                ctypes.POINTER(ctypes.c_void_p),
            ]
            lib.UnregisterEventHotKey.argtypes = [ctypes.c_void_p]
            lib.InstallEventHandler.argtypes = [
                ctypes.c_void_p, Handler, ctypes.c_ulong, ctypes.POINTER(EventTypeSpec), ctypes.c_void_p,
                ctypes.POINTER(ctypes.c_void_p),
            ]
            self._carbon = lib
        return self._carbon

    def register(self, spec: HotkeySpec) -> bool:
        self.unregister()
        mods, code = keyspec.macos(spec)
        lib = self._lib()
        target = lib.GetApplicationEventTarget()
        if self._callback is None:
            def on_event(_call: int, _event: int, _data: int) -> int:
                self.activated.emit()
                return 0

            self._callback = Handler(on_event)
            spec_ = EventTypeSpec(_fourcc("keyb"), 5)  # kEventClassKeyboard, kEventHotKeyPressed
            status = lib.InstallEventHandler(
                target, self._callback, 1, ctypes.byref(spec_), None, ctypes.byref(self._handler_ref)
            )
            if status != 0:
                raise HotkeyError(f"InstallEventHandler failed (OSStatus {status})")
        status = lib.RegisterEventHotKey(code, mods, EventHotKeyID(SIGNATURE, 1), target, 0, ctypes.byref(self._ref))
        if status == eventHotKeyExistsErr:
            raise HotkeyError(f"{spec} is already taken by another application", conflict=True)
        if status != 0:
            raise HotkeyError(f"RegisterEventHotKey failed for {spec} (OSStatus {status})")
        return True

    def unregister(self) -> None:
        if self._ref:
            self._lib().UnregisterEventHotKey(self._ref)
            self._ref = ctypes.c_void_p()
