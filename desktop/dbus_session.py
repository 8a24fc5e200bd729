"""A small session-bus client for the two Linux services we talk to (notifications, portal).

Why not QtDBus: PySide6 cannot marshal the exact wire types these services
check. A Python ``int`` becomes ``i`` (``setArguments``) or ``q``
(``QDBusArgument <<``), never ``u``, and an array of structs ``a(sa{sv})``
cannot be built, so ``Notify(susssasa{sv}i)`` and
``GlobalShortcuts.BindShortcuts(oa(sa{sv})sa{sv})`` are rejected by
signature-checking servers (GDBus-based ones such as GNOME Shell and the
portal). jeepney (pure Python, already installed with keyring on Linux)
marshals by explicit signature. Its router runs its own receiver thread;
callers here must not be the GUI thread when a call can wait.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from memtray.core.base.errors import EnvironmentProblem

log = logging.getLogger(__name__)


class DBusUnavailable(EnvironmentProblem):
    """There is no session bus, or a call on it failed."""


class SessionBus:
    def __init__(self, conn: Any, router: Any) -> None:
        self._conn = conn
        self.router = router
        self._threads: list[tuple[threading.Thread, queue.Queue[Any], Any]] = []
        self._closed = False

    @classmethod
    def connect(cls) -> SessionBus:
        try:
            from jeepney.io.threading import DBusRouter, open_dbus_connection
        except ImportError as exc:  # not on Linux, or a broken install
            raise DBusUnavailable(f"no D-Bus client library ({exc})") from exc
        try:
            conn = open_dbus_connection(bus="SESSION")
        except Exception as exc:
            raise DBusUnavailable(f"no D-Bus session bus ({type(exc).__name__}: {exc})") from exc
        return cls(conn, DBusRouter(conn))

    @property
    def unique_name(self) -> str:
        return str(self.router.unique_name)

    def call(
        self, dest: str, path: str, iface: str, method: str, signature: str | None = None,
        body: tuple[Any, ...] = (), *, timeout: float = 5.0,
    ) -> tuple[Any, ...]:
        from jeepney import DBusAddress, new_method_call
        from jeepney.wrappers import DBusErrorResponse, unwrap_msg

        msg = new_method_call(DBusAddress(path, bus_name=dest, interface=iface), method, signature, body)
        try:
            reply = self.router.send_and_get_reply(msg, timeout=timeout)
            return tuple(unwrap_msg(reply))
        except DBusErrorResponse as exc:
            raise DBusUnavailable(f"{iface}.{method} failed: {exc.name}: {' '.join(map(str, exc.data))}") from exc
        except TimeoutError as exc:
            raise DBusUnavailable(f"{iface}.{method} did not answer within {timeout:.0f}s") from exc
        except Exception as exc:
            raise DBusUnavailable(f"{iface}.{method} failed: {type(exc).__name__}: {exc}") from exc

    def has_owner(self, name: str) -> bool:
        try:
            (owned,) = self.call(
                "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", "s", (name,)
            )
            if owned:
                return True
            (names,) = self.call(
                "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListActivatableNames"
            )
            return name in names
        except DBusUnavailable:
            return False

    def listen(self, callback: Callable[[Any], None], **rule: str) -> None:
        """Call ``callback(message)`` (on a private thread) for each signal matching ``rule``."""
        from jeepney import MatchRule

        mr = MatchRule(type="signal", **rule)
        self.call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s",
            (mr.serialise(),),
        )
        q: queue.Queue[Any] = queue.Queue(maxsize=256)
        handle = self.router.filter(mr, queue=q)

        def pump() -> None:
            while True:
                msg = q.get()
                if msg is None:
                    return
                try:
                    callback(msg)
                except Exception:
                    log.exception("D-Bus signal handler failed")

        t = threading.Thread(target=pump, name="memtray-dbus-signal", daemon=True)
        t.start()
        self._threads.append((t, q, handle))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for _t, q, handle in self._threads:
            with contextlib.suppress(Exception):
                handle.close()
            with contextlib.suppress(queue.Full):
                q.put_nowait(None)
        for t, _q, _h in self._threads:
            t.join(timeout=2)
        with contextlib.suppress(Exception):
            self.router.close()
        with contextlib.suppress(Exception):
            self._conn.close()
