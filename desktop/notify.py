"""Notifications, callable from any thread: D-Bus on Linux, the tray elsewhere, a banner last.

:meth:`Notifier.notify` only emits a signal, so core services on the worker
thread (reminders, consolidation) can call it; the work happens on the GUI
thread (tray, banner) or on a private D-Bus thread (the freedesktop
notification server; see :mod:`dbus_session` for why not QtDBus). A click on a
notification ("default" action, tray message, banner button) emits
:attr:`Notifier.clicked` with the notification's ``target`` (e.g.
``memory:<rev>``, ``consolidation:<id>``), which the app turns into a view.
Extra actions (:attr:`Notifier.actions_for`, e.g. "Undo" and "Review" on "memory
updated") are D-Bus notification buttons or banner buttons and emit
:attr:`Notifier.action_invoked`; a tray message has no buttons, so its text says
that a click opens the view that has them.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .qt import QObject, QSystemTrayIcon, Signal

log = logging.getLogger(__name__)

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
KINDS = ("info", "memory", "reminder", "failure")

Banner = Callable[..., None]  # (title, body, kind, target[, actions])
#: [(action key, button label)] a notification offers besides the click, e.g. ("undo", "Undo")
Actions = list[tuple[str, str]]
ActionsFor = Callable[[str, str], Actions]  # (kind, target) -> actions


@dataclass
class Sent:
    title: str
    body: str
    kind: str
    target: str
    channel: str  # "dbus" | "tray" | "banner" | "log"


class Notifier(QObject):
    """``app.notifier.current``: ``notify(title, body, *, kind, target)`` from any thread."""

    clicked = Signal(str)  # target, on the GUI thread
    #: (action key, target) when one of the extra actions was chosen ("undo", "review"), GUI thread
    action_invoked = Signal(str, str)
    _posted = Signal(str, str, str, str, object)
    _dbus_failed = Signal(str, str, str, str, object)
    _dbus_action = Signal(str)
    _dbus_extra = Signal(str, str)

    def __init__(
        self,
        *,
        tray: QSystemTrayIcon | None = None,
        banner: Banner | None = None,
        use_dbus: bool | None = None,
        icon_path: str = "",
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.tray = tray
        self.banner = banner
        self.icon_path = icon_path
        self.use_dbus = sys.platform.startswith("linux") if use_dbus is None else use_dbus
        self.history: list[Sent] = []
        #: the extra actions of a notification, asked on the GUI thread when it is shown
        self.actions_for: ActionsFor | None = None
        self._actions: dict[int, list[str]] = {}
        self._tray_target = ""
        self._ids: dict[int, str] = {}
        self._early: dict[int, str] = {}
        self._bus: Any = None
        self._bus_state = "unknown"  # unknown | ok | absent
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memtray-notify")
        self._closed = False
        self._posted.connect(self._show)
        self._dbus_failed.connect(self._fallback)
        self._dbus_action.connect(self.clicked)
        self._dbus_extra.connect(self.action_invoked)
        if tray is not None:
            tray.messageClicked.connect(self._tray_clicked)

    @property
    def channel(self) -> str:
        """Where the next notification goes (as far as is known now)."""
        if self.use_dbus and self._bus_state != "absent":
            return "dbus"
        return self._fallback_channel()

    def _fallback_channel(self) -> str:
        if self.tray is not None and self.tray.isVisible() and QSystemTrayIcon.supportsMessages():
            return "tray"
        return "banner" if self.banner is not None else "log"

    def notify(self, title: str, body: str = "", *, kind: str = "info", target: str | None = None) -> None:
        """Show a notification. Safe to call from any thread; never raises."""
        kind = kind if kind in KINDS else "info"
        # the actions are worked out here, on the caller's thread (the worker, for memory
        # notifications), so the GUI thread never reads the live state to find them
        self._posted.emit(str(title), str(body), kind, target or "", self._extra_actions(kind, target or ""))

    def _extra_actions(self, kind: str, target: str) -> Actions:
        if self.actions_for is None or not target:
            return []
        try:
            return list(self.actions_for(kind, target))
        except Exception:
            log.exception("could not work out the notification's actions")
            return []

    # --- GUI thread -----------------------------------------------------------------

    def _show(self, title: str, body: str, kind: str, target: str, actions: Actions) -> None:
        if self._after_close(title, body, kind, target):
            return
        if self.use_dbus and self._bus_state != "absent":
            self._pool.submit(self._send_dbus, title, body, kind, target, actions)
            return
        self._fallback(title, body, kind, target, actions)

    def _after_close(self, title: str, body: str, kind: str, target: str) -> bool:
        """Log, not show, what arrives after close(): a worker's post or the D-Bus thread's
        failure, queued as the app quit, comes after the windows a banner would use are gone."""
        if self._closed:
            log.warning("notification after shutdown (not shown): %s: %s", title, body)
            self.history.append(Sent(title, body, kind, target, "log"))
        return self._closed

    def _fallback(self, title: str, body: str, kind: str, target: str, actions: Actions | None = None) -> None:
        if self._after_close(title, body, kind, target):
            return
        channel = self._fallback_channel()
        if actions is None:
            actions = self._extra_actions(kind, target)
        if channel == "tray":
            assert self.tray is not None
            icon = (QSystemTrayIcon.MessageIcon.Warning if kind == "failure"
                    else QSystemTrayIcon.MessageIcon.Information)
            self._tray_target = target
            if actions:  # a tray message has no buttons: its click opens where they are
                body += "\nClick to " + " or ".join(label.lower() for _k, label in actions) + " it."
            self.tray.showMessage(title, body, icon, 8000)
        elif channel == "banner":
            assert self.banner is not None
            if actions:
                self.banner(title, body, kind, target, actions)
            else:
                self.banner(title, body, kind, target)
        else:
            log.warning("notification (no way to show it): %s: %s", title, body)
        self.history.append(Sent(title, body, kind, target, channel))

    def _tray_clicked(self) -> None:
        if self._tray_target:
            self.clicked.emit(self._tray_target)

    # --- D-Bus thread ---------------------------------------------------------------

    def _connect_bus(self) -> Any:
        if self._bus_state == "ok":
            return self._bus
        from .dbus_session import SessionBus

        bus = SessionBus.connect()
        if not bus.has_owner(SERVICE):
            bus.close()
            from .dbus_session import DBusUnavailable

            raise DBusUnavailable("no notification server on the session bus")
        bus.listen(self._on_action, interface=SERVICE, member="ActionInvoked", path=PATH)
        self._bus = bus
        self._bus_state = "ok"
        return bus

    def _send_dbus(self, title: str, body: str, kind: str, target: str, extra: Actions | None = None) -> None:
        try:
            bus = self._connect_bus()
            actions = ["default", "Open"] if target else []
            for key, label in extra or []:
                actions += [key, label]
            # urgency 1 (normal) even for failures: critical ones stay until dismissed
            hints = {"urgency": ("y", 1), "desktop-entry": ("s", "memtray")}
            (nid,) = bus.call(
                SERVICE, PATH, SERVICE, "Notify", "susssasa{sv}i",
                ("memtray", 0, self.icon_path, title, body, actions, hints, -1),
            )
            with self._lock:
                if target:
                    self._ids[int(nid)] = target
                    self._actions[int(nid)] = [k for k, _l in extra or []]
                early = self._early.pop(int(nid), None)
            self.history.append(Sent(title, body, kind, target, "dbus"))
            if early and target:
                self._invoke(int(nid), early, target)
        except Exception as exc:
            if self._bus_state != "absent":  # said once, not for each notification queued meanwhile
                log.info("D-Bus notifications unavailable (%s); using the fallback", exc)
            self._bus_state = "absent"
            if self._bus is not None:
                self._bus.close()
                self._bus = None
            self._dbus_failed.emit(title, body, kind, target, list(extra or []))

    def _on_action(self, msg: Any) -> None:
        nid, action = msg.body[0], msg.body[1]
        with self._lock:
            target = self._ids.get(int(nid))
            if target is None:
                # the click can race the Notify reply (the signal may be read first)
                self._early[int(nid)] = str(action)
                del_keys = list(self._early)[:-32]
                for k in del_keys:
                    del self._early[k]
        if target:
            self._invoke(int(nid), str(action), target)

    def _invoke(self, nid: int, action: str, target: str) -> None:
        if action == "default":
            self._dbus_action.emit(target)
        elif action in self._actions.get(nid, []):
            self._dbus_extra.emit(action, target)

    def close(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._bus is not None:
            self._bus.close()
            self._bus = None
