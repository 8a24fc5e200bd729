"""Notifications: the one interface services use to tell the user something.

Services (reminders, memory, consolidation) never touch widgets: they call a
:class:`Notifier` they were given. The headless daemon uses
:class:`StdoutNotifier` (one line per notification on stdout); the desktop
installs a thread-safe adapter that hands the call to the GUI thread by signal.
A service looks the notifier up in ``app.services["notifier"]`` *when it
notifies* (so a front end may install one after the App was opened) and falls
back to :class:`LogNotifier`, which only writes the application log.

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


def notifier_of(services: dict[str, Any]) -> Notifier:
    """The notifier a front end installed, or the log-only fallback."""
    n = services.get("notifier")
    if n is None:
        return _FALLBACK
    return n  # type: ignore[no-any-return]


_FALLBACK = LogNotifier()
