"""Wayland global hotkey: the XDG desktop portal's GlobalShortcuts interface.

Wayland has no global grabs; the compositor owns shortcuts and asks the user to
confirm a binding. The portal flow (CreateSession -> BindShortcuts -> Activated)
is asynchronous and can wait for the user, so it runs on a private thread and
reports back through the backend's signals (queued to the GUI thread).
"""

from __future__ import annotations

import logging
import os
import queue
import secrets
import threading
from pathlib import Path
from typing import Any

from ..dbus_session import DBusUnavailable, SessionBus
from . import keyspec
from .base import Backend, HotkeyError
from .keyspec import HotkeySpec

log = logging.getLogger(__name__)

PORTAL = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
IFACE = "org.freedesktop.portal.GlobalShortcuts"
SHORTCUT_ID = "toggle"
BIND_TIMEOUT = 180.0  # the compositor may show a confirmation dialog


class PortalBackend(Backend):
    name = "portal"
    label = "Wayland (GlobalShortcuts portal)"

    def __init__(self) -> None:
        super().__init__()
        self._bus: SessionBus | None = None
        self._session: str | None = None
        self._thread: threading.Thread | None = None
        self.trigger_description = ""

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if not (os.environ.get("WAYLAND_DISPLAY") or os.environ.get("XDG_SESSION_TYPE") == "wayland"):
            return "not a Wayland session"
        runtime = os.environ.get("XDG_RUNTIME_DIR", "")
        if not os.environ.get("DBUS_SESSION_BUS_ADDRESS") and not (runtime and Path(runtime, "bus").exists()):
            return "no D-Bus session bus"
        return None

    def register(self, spec: HotkeySpec) -> bool:
        self.unregister()
        trigger = keyspec.xdg_trigger(spec)
        self._thread = threading.Thread(target=self._bind, args=(spec, trigger), name="memtray-portal", daemon=True)
        self._thread.start()
        return False

    def _request(self, bus: SessionBus, method: str, signature: str, body: tuple[Any, ...], token: str,
                 timeout: float) -> dict[str, Any]:
        """Call a portal method that answers through a Request object's Response signal."""
        from jeepney import MatchRule

        sender = bus.unique_name.lstrip(":").replace(".", "_")
        path = f"{PORTAL_PATH}/request/{sender}/{token}"
        rule = MatchRule(type="signal", interface="org.freedesktop.portal.Request", member="Response", path=path)
        bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s",
                 (rule.serialise(),))
        q: queue.Queue[Any] = queue.Queue(maxsize=4)
        with bus.router.filter(rule, queue=q):
            bus.call(PORTAL, PORTAL_PATH, IFACE, method, signature, body, timeout=10.0)
            try:
                msg = q.get(timeout=timeout)
            except queue.Empty:
                raise HotkeyError(f"the portal did not answer {method} within {timeout:.0f}s") from None
        code, results = msg.body
        if code == 1:
            raise HotkeyError("the shortcut was not confirmed (cancelled in the system dialog)")
        if code != 0:
            raise HotkeyError(f"the portal refused {method} (response {code})")
        return {k: v[1] if isinstance(v, tuple) else v for k, v in results.items()}

    def _bind(self, spec: HotkeySpec, trigger: str) -> None:
        try:
            bus = self._bus or SessionBus.connect()
            self._bus = bus
            try:
                (version,) = bus.call(PORTAL, PORTAL_PATH, "org.freedesktop.DBus.Properties", "Get", "ss",
                                      (IFACE, "version"))
            except DBusUnavailable as exc:
                raise HotkeyError(f"this desktop's portal has no GlobalShortcuts interface ({exc})") from exc
            log.info("GlobalShortcuts portal version %s", version[1] if isinstance(version, tuple) else version)
            token = "memtray" + secrets.token_hex(4)
            res = self._request(bus, "CreateSession", "a{sv}", (
                {"handle_token": ("s", token), "session_handle_token": ("s", "memtray" + secrets.token_hex(4))},
            ), token, 30.0)
            session = str(res.get("session_handle", ""))
            if not session:
                raise HotkeyError("the portal created no session")
            self._session = session
            bus.listen(self._on_activated, interface=IFACE, member="Activated", path=PORTAL_PATH)
            token2 = "memtray" + secrets.token_hex(4)
            shortcuts = [(SHORTCUT_ID, {
                "description": ("s", "Show or hide the memtray quick chat"),
                "preferred_trigger": ("s", trigger),
            })]
            res = self._request(bus, "BindShortcuts", "oa(sa{sv})sa{sv}",
                                (session, shortcuts, "", {"handle_token": ("s", token2)}), token2, BIND_TIMEOUT)
            bound = res.get("shortcuts") or []
            for sid, props in bound:
                if sid == SHORTCUT_ID:
                    desc = props.get("trigger_description")
                    self.trigger_description = str(desc[1] if isinstance(desc, tuple) else desc or "")
            if not any(sid == SHORTCUT_ID for sid, _p in bound):
                raise HotkeyError("the desktop did not bind the shortcut", conflict=True)
        except HotkeyError as exc:
            self.failed.emit(exc)
        except DBusUnavailable as exc:
            self.failed.emit(HotkeyError(str(exc)))
        except Exception as exc:
            log.exception("portal hotkey registration failed")
            self.failed.emit(HotkeyError(f"GlobalShortcuts portal: {type(exc).__name__}: {exc}"))
        else:
            self.registered.emit()

    def _on_activated(self, msg: Any) -> None:
        session, sid = msg.body[0], msg.body[1]
        if sid == SHORTCUT_ID and session == self._session:
            self.activated.emit()

    def unregister(self) -> None:
        session, self._session = self._session, None
        if session and self._bus is not None:
            bus = self._bus
            threading.Thread(
                target=lambda: _quiet(bus.call, PORTAL, session, "org.freedesktop.portal.Session", "Close"),
                daemon=True,
            ).start()

    def close(self) -> None:
        self.unregister()
        if self._bus is not None:
            self._bus.close()
            self._bus = None


def _quiet(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception:
        log.debug("ignored", exc_info=True)
