"""The global hotkey service: pick a backend for this desktop, register, report.

Backends: Windows RegisterHotKey, macOS Carbon, X11 XGrabKey, Wayland
GlobalShortcuts portal. :func:`candidates` picks the ones that can work here;
:class:`HotkeyService` tries them in order and always ends in a
:class:`HotkeyStatus` the settings show. When none works, the app shows how to
bind ``memtray toggle`` in the desktop's own shortcut settings. It never fails
silently.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from memtray.core.base.errors import ConfigError

from ..qt import QObject, Signal
from .base import Backend, HotkeyError
from .keyspec import HotkeySpec, parse

log = logging.getLogger(__name__)

__all__ = ["Backend", "HotkeyError", "HotkeyService", "HotkeySpec", "HotkeyStatus", "candidates", "parse"]

#: Qt platforms without a desktop to grab keys on
_HEADLESS_QPA = ("offscreen", "minimal", "vnc", "linuxfb", "eglfs", "minimalegl")


def candidates(platform: str, env: Mapping[str, str], qpa: str) -> list[str]:
    """Backend names worth trying, best first (pure: tested offscreen)."""
    forced = env.get("MEMTRAY_HOTKEY_BACKEND", "").strip().lower()
    if forced:
        return [] if forced == "none" else [forced]
    if platform == "win32":
        return ["windows"]
    if platform == "darwin":
        return ["macos"]
    if qpa in _HEADLESS_QPA:
        return []
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland" or qpa == "wayland":
        # XGrabKey through XWayland only sees keys while an X11 window has focus:
        # it would look registered and never fire, so it is not a fallback.
        return ["portal"]
    if env.get("DISPLAY"):
        return ["x11"]
    return []


def backend_class(name: str) -> type[Backend]:
    if name == "x11":
        from .x11 import X11Backend

        return X11Backend
    if name == "portal":
        from .portal import PortalBackend

        return PortalBackend
    if name == "windows":
        from .windows import WindowsBackend

        return WindowsBackend
    if name == "macos":
        from .macos import MacBackend

        return MacBackend
    raise KeyError(name)


@dataclass
class HotkeyStatus:
    state: str  # "active" | "pending" | "failed" | "none"
    hotkey: str
    backend: str = ""  # label of the backend in use (or that failed last)
    message: str = ""
    conflict: bool = False
    tried: list[str] = field(default_factory=list)  # "label: why" for each failure

    @property
    def ok(self) -> bool:
        return self.state == "active"

    def describe(self) -> str:
        if self.state == "active":
            return f"{self.hotkey} via {self.backend}"
        if self.state == "pending":
            return f"registering {self.hotkey} via {self.backend}…"
        if self.state == "none":
            return "no global hotkey backend works on this desktop"
        return self.message


class HotkeyService(QObject):
    activated = Signal()
    status_changed = Signal(object)  # HotkeyStatus

    def __init__(self, qpa: str, *, platform: str | None = None, env: Mapping[str, str] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.names = candidates(platform or sys.platform, env if env is not None else os.environ, qpa)
        self.status = HotkeyStatus("none", "")
        self._backend: Backend | None = None
        self._queue: list[str] = []
        self._spec: HotkeySpec | None = None
        self._tried: list[str] = []

    def apply(self, hotkey: str) -> HotkeyStatus:
        """(Re)register ``hotkey``; the outcome is in :attr:`status` and ``status_changed``."""
        self._drop_backend()
        self._tried = []
        try:
            self._spec = parse(hotkey)
        except ConfigError as exc:
            return self._set(HotkeyStatus("failed", hotkey, message=f"{exc}", tried=[str(exc)]))
        self._queue = list(self.names)
        if not self._queue:
            return self._set(HotkeyStatus("none", str(self._spec), message="no global hotkey backend for this desktop"))
        return self._next()

    def _next(self) -> HotkeyStatus:
        assert self._spec is not None
        spec = self._spec
        last_conflict = False
        while self._queue:
            name = self._queue.pop(0)
            try:
                cls = backend_class(name)
            except KeyError:
                self._tried.append(f"{name}: unknown backend")
                continue
            reason = cls.unavailable_reason()
            if reason:
                self._tried.append(f"{cls.label}: {reason}")
                continue
            backend = cls()
            backend.activated.connect(self.activated)
            backend.registered.connect(self._on_registered)
            backend.failed.connect(self._on_failed)
            self._backend = backend
            try:
                done = backend.register(spec)
            except HotkeyError as exc:
                last_conflict = exc.conflict
                self._tried.append(f"{cls.label}: {exc}")
                log.warning("hotkey %s via %s failed: %s", spec, cls.label, exc)
                self._drop_backend()
                continue
            except Exception as exc:
                log.exception("hotkey backend %s crashed", name)
                self._tried.append(f"{cls.label}: {type(exc).__name__}: {exc}")
                self._drop_backend()
                continue
            if done:
                return self._set(HotkeyStatus("active", str(spec), cls.label, tried=list(self._tried)))
            return self._set(HotkeyStatus("pending", str(spec), cls.label, tried=list(self._tried)))
        return self._set(HotkeyStatus(
            "failed", str(spec), message=(self._tried[-1] if self._tried else "no backend"),
            conflict=last_conflict, tried=list(self._tried),
        ))

    def _on_registered(self) -> None:
        if self._backend is not None and self._spec is not None:
            self._set(HotkeyStatus("active", str(self._spec), self._backend.label, tried=list(self._tried)))

    def _on_failed(self, exc: HotkeyError) -> None:
        if self._backend is None:
            return
        self._tried.append(f"{self._backend.label}: {exc}")
        log.warning("hotkey via %s failed: %s", self._backend.label, exc)
        self._drop_backend()
        status = self._next()
        if status.state == "failed":
            status.conflict = status.conflict or exc.conflict

    def _drop_backend(self) -> None:
        if self._backend is not None:
            try:
                self._backend.close()
            except Exception:
                log.exception("closing hotkey backend")
            self._backend.deleteLater()
            self._backend = None

    def _set(self, status: HotkeyStatus) -> HotkeyStatus:
        self.status = status
        self.status_changed.emit(status)
        return status

    def close(self) -> None:
        self._drop_backend()
