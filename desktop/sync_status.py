"""The tray menu's sync line: when the last sync was, whether it failed, conflicts to review.

The line renders the status the sync service pushes after every attempt (from
whichever thread synced; the signal queues it to the GUI thread) and "Sync now"
runs a sync on a thread of its own: the network never blocks the GUI thread or
the worker.

The conflict count is the live one, not the last sync's list: the merge conflicts
still waiting in the memory review queue (``MemoryService.merge_conflicts``), read
on the worker by a :class:`~.bridge.Follower` after every sync and whenever the
log's memory changes (a review resolved in the memory browser, or by ``memtray
memory review`` in a terminal, which is forwarded to this instance and logged
here). While conflicts wait, choosing the line opens the memory browser's review.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memtray.core.base.clock import parse_ts
from memtray.core.base.errors import MemtrayError

from .bridge import Bridge, Follower
from .qt import QAction, QMenu, QObject, Signal

if TYPE_CHECKING:
    from memtray.core.base.config import Settings
    from memtray.core.sync.service import SyncService


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


def describe(status: dict[str, Any], *, configured: bool, now: datetime | None = None,
             pending: int | None = None) -> tuple[str, str]:
    """The menu line and its tooltip for a sync status (``SyncService.status()``).

    ``pending``: the merge conflicts waiting for review now (``MemoryService.merge_conflicts``);
    None counts the last sync's list in the status instead."""
    now = now or datetime.now(UTC)
    if not status:
        return ("Sync: not set up", "memtray sync REMOTE, or set sync_remote") if not configured else (
            "Sync: not yet", "the first sync runs soon")
    conflicts = len(status.get("conflicts") or []) if pending is None else pending
    tail = f" · {conflicts} conflict{'s' if conflicts != 1 else ''} to review" if conflicts else ""
    review = "\nchoose this line to review them (or: memtray memory review)" if conflicts else ""
    if status.get("last_error"):
        err = str(status["last_error"])
        short = err if len(err) <= 48 else err[:47] + "…"
        return (f"Sync failed {_ago(status.get('last_attempt'), now)}: {short}{tail}",
                f"{err}\nlast success: {_ago(status.get('last_success'), now)}; retried automatically{review}")
    return (f"Synced {_ago(status.get('last_success'), now)}{tail}", f"with {status.get('remote')}{review}")


def remote_kind(status: dict[str, Any], *, keys: bool = False, encrypt_new: bool = True) -> str:
    """Which kind the remote is: from the last sync (encrypted, or in clear with the way to an
    encrypted one); before one, from this device (``keys``: it has its sync keys) and the
    ``sync_encrypt`` setting (``encrypt_new``)."""
    if status.get("encrypted"):
        n = int(status.get("devices") or 0)
        return f"Encrypted: signed and encrypted on your devices ({n} paired device{'s' if n != 1 else ''})"
    if status.get("encrypted") is False:
        return ("In clear: whoever holds the remote can read everything. To encrypt it, move to a new "
                "remote: docs/SYNC.md, \"From a clear remote to an encrypted one\"")
    if keys:
        return "Encrypted: this device has its sync keys (not synced yet)"
    if encrypt_new:
        return "Not synced yet: a new remote will be encrypted (this device makes its keys at the first sync)"
    return "Not synced yet: a new remote will be in clear (encryption is off)"


class SyncStatusMenu(QObject):
    """Adds the sync line and "Sync now" to ``menu`` before ``before``.

    With ``bridge`` and ``conflicts`` (``app.memory.merge_conflicts``, run on the worker)
    the line counts the conflicts waiting now; without, the last sync's. ``open_review``
    is what choosing the line does while conflicts wait (the memory browser's review)."""

    changed = Signal(dict)

    def __init__(self, menu: QMenu, before: QAction | None, sync: SyncService, settings: Settings,
                 bridge: Bridge | None = None, conflicts: Callable[[], list[dict[str, Any]]] | None = None,
                 open_review: Callable[[], None] | None = None) -> None:
        super().__init__(menu)
        self.sync = sync
        self.settings = settings
        self.open_review = open_review
        self.last: dict[str, Any] = {}
        #: the merge conflicts waiting for review, as last read on the worker (None: not yet read)
        self.pending: int | None = None
        self.line = QAction("Sync", menu)
        self.line.setEnabled(False)
        self.line.triggered.connect(self._line_chosen)
        self.feed: Follower | None = None
        if bridge is not None and conflicts is not None:
            # a review resolved (memory.reviewed), a merge, a hand edit: all are memory events
            self.feed = Follower(bridge, lambda: conflicts, self._pending_read,
                                 name="sync-conflicts", parent=self,
                                 wants=lambda change: change.what.memory)
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
        """After a sync attempt (or at start): the line, and the live count read again."""
        self.last = status
        self._render()
        self.now.setEnabled(bool(self.settings.current.sync_remote))
        if self.feed is not None:
            self.feed.request()  # a sync may have merged conflicts in, or resolved some

    def _pending_read(self, items: list[dict[str, Any]]) -> None:
        self.pending = len(items)
        self._render()

    def _render(self) -> None:
        live = self.feed is not None
        text, tip = describe(self.last, configured=bool(self.settings.current.sync_remote),
                             pending=(self.pending or 0) if live else None)
        self.line.setText(text)
        self.line.setToolTip(tip)
        waiting = bool(self.pending) if live else bool(self.last.get("conflicts"))
        self.line.setEnabled(waiting and bool(self.last) and self.open_review is not None)

    def _line_chosen(self) -> None:
        if self.open_review is not None and self.line.isEnabled():
            self.open_review()

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
