"""Notifications: the one interface services use to tell the user something.

Services (reminders, memory, consolidation) never touch widgets: they call a
:class:`Notifier` they were given. The headless daemon uses
:class:`StdoutNotifier` (one line per notification on stdout); the desktop
installs a thread-safe adapter that hands the call to the GUI thread by signal.
Services are given the App's :class:`NotifierSlot` and call it *when they
notify*, so a front end may install its notifier after the App was opened;
with none installed, notifications only reach the application log
(:class:`LogNotifier`).

``notify`` may be called from any thread; implementations must be thread-safe
and must not block for long.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any, Literal, Protocol, TextIO, runtime_checkable

log = logging.getLogger(__name__)

Kind = Literal["reminder", "memory", "failure", "info"]
KINDS: tuple[str, ...] = ("reminder", "memory", "failure", "info")


@runtime_checkable
class Notifier(Protocol):
    def notify(self, title: str, body: str, *, kind: str, target: str | None) -> None:
        """Show ``title``/``body``. ``kind`` is one of :data:`KINDS`; ``target`` is what
        clicking the notification opens (e.g. ``"reminder:<id>"``), or None."""


def one_line(text: str) -> str:
    """``text`` with all whitespace runs (newlines included) folded to single spaces."""
    return " ".join(text.split())


class LogNotifier:
    """The fallback: notifications go to the application log only."""

    def notify(self, title: str, body: str, *, kind: str, target: str | None) -> None:
        log.info("notification [%s] %s: %s (target %s)", kind, title, one_line(body), target or "-")


class StdoutNotifier:
    """One line per notification, flushed at once: ``<kind>: <title>: <body>``.

    Used by ``memtray daemon``, whose stdout is meant to be read by people and
    scripts alike, so a body never spans lines.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def notify(self, title: str, body: str, *, kind: str, target: str | None) -> None:
        line = f"{kind}: {one_line(title)}: {one_line(body)}\n"
        with self._lock:
            out = self._stream or sys.stdout
            out.write(line)
            out.flush()


class RecordingNotifier:
    """Keeps every notification in a list (tests, and front ends that poll)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def notify(self, title: str, body: str, *, kind: str, target: str | None) -> None:
        with self._lock:
            self.sent.append({"title": title, "body": body, "kind": kind, "target": target})


class NotifierSlot:
    """The App's notifier: the one a front end installed, else the log-only fallback."""

    def __init__(self) -> None:
        self.current: Notifier | None = None
        self._fallback = LogNotifier()

    @property
    def installed(self) -> bool:
        """A front end (desktop, daemon) shows notifications to the user."""
        return self.current is not None

    def set(self, notifier: Notifier | None) -> None:
        self.current = notifier

    def notify(self, title: str, body: str, *, kind: str, target: str | None) -> None:
        (self.current or self._fallback).notify(title, body, kind=kind, target=target)
