"""Notifications from any thread: the D-Bus server when present, else the tray, else an in-window banner."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from memtray.desktop.notify import Notifier

pytestmark = pytest.mark.gui


def test_banner_when_no_dbus_and_no_tray_from_a_worker_thread(
    qtbot: Any, desktop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert desktop.app.notifier.current is desktop.notifier
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    t = threading.Thread(target=lambda: desktop.app.notifier.current.notify(
        "Memory updated", "2 facts added, 1 removed — review", kind="memory", target="memory:HEAD"))
    t.start()
    t.join()
    qtbot.waitUntil(lambda: bool(desktop.notifier.history), timeout=10000)
    sent = desktop.notifier.history[-1]
    assert sent.channel == "banner" and sent.target == "memory:HEAD"
    from memtray.desktop.mainwindow import Banner

    banners = desktop.window.findChildren(Banner)
    assert banners and banners[-1].title == "Memory updated"


def test_clicking_routes_to_the_target_view(qtbot: Any, desktop: Any) -> None:
    desktop.notifier.clicked.emit("consolidation:abc")
    assert desktop.window.stack.currentWidget() is desktop.window.memory
    desktop.notifier.clicked.emit("session:quick")
    assert desktop.window.stack.currentWidget() is desktop.window.chats


def test_core_services_use_the_notifier_on_failure(qtbot: Any, desktop: Any, llm_server: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fixtures.llm_server import reply

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    pane = desktop.popup.pane
    llm_server.script(reply("ok"))
    with qtbot.waitSignal(pane.turn_done, timeout=90000):
        pane.send("hello")
    llm_server.script(reply("no tool call, so consolidation fails"))
    pane.new_session()
    qtbot.waitUntil(lambda: any(s.kind == "failure" for s in desktop.notifier.history), timeout=20000)
    sent = next(s for s in desktop.notifier.history if s.kind == "failure")
    assert sent.target.startswith("consolidation:")


# --- a real session bus with a fake notification server --------------------------------------


@pytest.fixture
def session_bus(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if not shutil.which("dbus-daemon"):
        pytest.skip("dbus-daemon is not installed")
    proc = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    address = proc.stdout.readline().strip()
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    try:
        yield address
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


class FakeNotificationServer:
    """org.freedesktop.Notifications on the test bus (jeepney), answering Notify and emitting a click."""

    def __init__(self) -> None:
        from jeepney.io.blocking import open_dbus_connection

        self.conn = open_dbus_connection(bus="SESSION")
        from jeepney.bus_messages import message_bus

        self.conn.send_and_get_reply(message_bus.RequestName("org.freedesktop.Notifications"))
        self.received: list[tuple[Any, ...]] = []
        self.click = "default"  # the action the "user" invokes on a notification with actions
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        from jeepney import new_method_return, new_signal
        from jeepney.low_level import MessageType

        while not self.stop:
            try:
                msg = self.conn.receive(timeout=0.2)
            except TimeoutError:
                continue
            except Exception:
                return
            h = msg.header
            if h.message_type != MessageType.method_call:
                continue
            member = h.fields.get(3)
            if member == "Notify":
                self.received.append(msg.body)
                nid = len(self.received)
                self.conn.send(new_method_return(msg, "u", (nid,)))
                if msg.body[5]:  # has actions: the user clicks it
                    from jeepney import DBusAddress

                    addr = DBusAddress("/org/freedesktop/Notifications", interface="org.freedesktop.Notifications")
                    action = self.click if self.click in msg.body[5] else "default"
                    self.conn.send(new_signal(addr, "ActionInvoked", "us", (nid, action)))
            elif member == "GetCapabilities":
                self.conn.send(new_method_return(msg, "as", (["actions", "body"],)))

    def close(self) -> None:
        self.stop = True
        self.thread.join(timeout=5)
        self.conn.close()


def test_dbus_notification_with_click_action(qtbot: Any, session_bus: str) -> None:
    server = FakeNotificationServer()
    n = Notifier(banner=None, use_dbus=True)
    try:
        with qtbot.waitSignal(n.clicked, timeout=10000) as sig:
            threading.Thread(target=lambda: n.notify(
                "Memory updated", "1 fact added", kind="memory", target="memory:abc123")).start()
        assert sig.args == ["memory:abc123"]
        app_name, replaces, _icon, title, body, actions, hints, timeout = server.received[0]
        assert (app_name, replaces, title, body) == ("memtray", 0, "Memory updated", "1 fact added")
        assert actions[0] == "default" and hints["urgency"] == ("y", 1) and timeout == -1
        assert n.history[-1].channel == "dbus"
    finally:
        n.close()
        server.close()


def test_no_notification_server_falls_back(qtbot: Any, session_bus: str) -> None:
    got: list[tuple[str, ...]] = []
    n = Notifier(banner=lambda *a: got.append(a), use_dbus=True)
    try:
        n.notify("Reminder", "tea time", kind="reminder", target="reminder:1")
        qtbot.waitUntil(lambda: bool(got), timeout=10000)
        assert got[0] == ("Reminder", "tea time", "reminder", "reminder:1")
        assert n.channel == "banner"
    finally:
        n.close()
    assert os.environ["DBUS_SESSION_BUS_ADDRESS"] == session_bus


def test_a_notification_arriving_after_close_is_logged_not_raised(qtbot: Any) -> None:
    """A worker may post as the app quits: its queued signal reaches the GUI thread after
    close() shut the D-Bus pool down, and must not raise in Qt's event loop."""
    n = Notifier(banner=None, use_dbus=True)
    n.close()
    n.notify("Memory updated", "1 fact added", kind="memory", target="memory:abc123")
    qtbot.waitUntil(lambda: bool(n.history), timeout=10000)
    assert n.history[-1].channel == "log" and n.history[-1].title == "Memory updated"


def test_a_dbus_failure_arriving_after_close_shows_no_banner(qtbot: Any) -> None:
    """The D-Bus thread's failure is queued to the GUI thread; when it lands after close() the
    windows a banner would use are gone (ci45: 'Target signal has been deleted'): logged instead."""
    shown: list[str] = []
    n = Notifier(banner=lambda title, *_rest: shown.append(title), use_dbus=True)
    sender = threading.Thread(target=lambda: n._dbus_failed.emit("Memory updated", "1 fact added", "memory",
                                                                  "memory:abc123", []))
    sender.start()
    sender.join()
    n.close()
    qtbot.waitUntil(lambda: bool(n.history), timeout=10000)
    assert n.history[-1].channel == "log" and n.history[-1].title == "Memory updated"
    assert shown == []
