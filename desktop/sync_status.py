"""The tray menu's sync line: when the last sync was, whether it failed, conflicts to review.

The line renders the status the sync service pushes after every attempt (from
whichever thread synced; the signal queues it to the GUI thread) and "Sync now"
runs a sync on a thread of its own: the network never blocks the GUI thread or
the worker.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from memtray.core.base.clock import parse_ts
from memtray.core.base.errors import MemtrayError

from .qt import QAction, QMenu, QObject, Signal


def _ago(ts: str | None, now: datetime) -> str:
    if not ts:
        return "never"
    try:
        secs = (now - parse_ts(ts)).total_seconds()
    except (ValueError, TypeError):
        return ts
    if secs < 60:
        return "just now"
    if secs < 3600:
        return f"{int(secs // 60)} min ago"
    if secs < 86400:
        return f"{int(secs // 3600)} h ago"
    return f"{int(secs // 86400)} d ago"


def describe(status: dict[str, Any], *, configured: bool, now: datetime | None = None) -> tuple[str, str]:
    """The menu line and its tooltip for a sync status (``SyncService.status()``)."""
    now = now or datetime.now(UTC)
    if not status:
        return ("Sync: not set up", "memtray sync REMOTE, or set sync_remote") if not configured else (
            "Sync: not yet", "the first sync runs soon")
    conflicts = len(status.get("conflicts") or [])
    tail = f" · {conflicts} conflict{'s' if conflicts != 1 else ''} to review" if conflicts else ""
    if status.get("last_error"):
        err = str(status["last_error"])
        short = err if len(err) <= 48 else err[:47] + "…"
        return (f"Sync failed {_ago(status.get('last_attempt'), now)}: {short}{tail}",
                f"{err}\nlast success: {_ago(status.get('last_success'), now)}; retried automatically")
    return (f"Synced {_ago(status.get('last_success'), now)}{tail}", f"with {status.get('remote')}")


class SyncStatusMenu(QObject):
    """Adds the sync line and "Sync now" to ``menu`` before ``before``."""

    changed = Signal(dict)

    def __init__(self, menu: QMenu, before: QAction | None, sync: Any, settings: Any) -> None:
        super().__init__(menu)
        self.sync = sync
        self.settings = settings
        self.line = QAction("Sync", menu)
        self.line.setEnabled(False)
        self.now = QAction("Sync now", menu)
        self.now.triggered.connect(self.sync_now)
        if before is not None:
            menu.insertAction(before, self.line)
            menu.insertAction(before, self.now)
        else:
            menu.addAction(self.line)
            menu.addAction(self.now)
        self.changed.connect(self.show_status)
        sync.subscribe(self.changed.emit)  # any thread: the signal is queued to this one
        self.show_status(sync.status())

    def show_status(self, status: dict[str, Any]) -> None:
        text, tip = describe(status, configured=bool(self.settings.current.sync_remote))
        self.line.setText(text)
        self.line.setToolTip(tip)
        self.now.setEnabled(bool(self.settings.current.sync_remote))

    def sync_now(self) -> threading.Thread:
        self.now.setEnabled(False)
        self.line.setText("Syncing…")

        def run() -> None:
            try:
                self.sync.sync()
            except MemtrayError:
                pass  # recorded in the status, which the line shows
            except Exception as exc:  # never a traceback in the tray: the line says it
                self.changed.emit({"last_error": f"{type(exc).__name__}: {exc}"})

        t = threading.Thread(target=run, name="memtray-sync", daemon=True)
        t.start()
        return t
