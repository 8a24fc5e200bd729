"""Sync in Settings: the "Sync" card's fields (``sync_remote``, ``sync_enabled``,
``sync_interval_minutes``), this device's id, the last sync's status and "Sync now".

The fields are saved like every other setting (:meth:`SyncSection.values`, through
``SettingsPage.save``); an address that holds a password is refused before anything
is saved, with the sync service's own message (:func:`~memtray.core.sync.service.check_remote`).
The device id and the status are read on the worker; "Sync now" runs the sync on a
thread of its own, like the tray's: the network never blocks the GUI thread or the
worker. The status line follows every sync attempt (``SyncService.subscribe``), from
whichever thread synced, and says what the tray's line says
(:func:`~.sync_status.describe`), with a failure's hint under it.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any

from memtray.core.base import config as cfgmod
from memtray.core.base.clock import format_ts
from memtray.core.base.errors import MemtrayError
from memtray.core.sync.names import MAX_NAME, name_device
from memtray.core.sync.service import check_remote

from . import texts
from .context import Context
from .forms import label, section_form
from .qt import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    Qt,
    QWidget,
    Signal,
)
from .sync_status import describe, remote_kind

log = logging.getLogger(__name__)

#: the range config accepts for sync_interval_minutes (core/base/config.py; a test keeps them equal)
INTERVAL_MIN, INTERVAL_MAX = 1, 7 * 24 * 60


def _restyle(lab: QLabel, kind: str) -> None:
    for prop in ("ok", "error", "muted"):
        lab.setProperty(prop, prop == kind)
    lab.style().unpolish(lab)
    lab.style().polish(lab)


class SyncSection(QWidget):
    """The Sync card's fields; :meth:`values` are saved like every other setting."""

    #: a sync status (``SyncService.status()``), from any thread: queued to the GUI thread
    status_changed = Signal(object)
    #: "Sync now"'s thread ended: {} or the error it ended with (queued to the GUI thread)
    sync_ended = Signal(object)
    #: this device was named (the name; "" when removed)
    named = Signal(str)

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.sync = ctx.app.sync
        self.form = f = section_form(self)
        self.intro = label(texts.text("sync.intro"), muted=True)
        self.intro.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        f.addRow(self.intro)
        self.remote = QLineEdit()
        self.remote.setPlaceholderText(texts.text("sync.remote_placeholder"))
        self.remote.setToolTip(texts.text("sync.remote_help"))
        f.addRow("Remote", self.remote)
        self.enabled = QCheckBox("Sync automatically")
        f.addRow("", self.enabled)
        self.interval = QSpinBox()
        self.interval.setRange(INTERVAL_MIN, INTERVAL_MAX)
        self.interval.setSuffix(" minutes")
        every = QHBoxLayout()
        every.setContentsMargins(0, 0, 0, 0)
        every.addWidget(self.interval)
        every.addStretch(1)  # a number, not a full-width field
        box = QWidget()
        box.setLayout(every)
        f.addRow("Every", box)
        # the name the user gives this device ("Laptop"): a device.named event, which syncs, so every
        # device shows it (conflicts, where a fact came from); the id stays as detail below it
        naming = QHBoxLayout()
        naming.setContentsMargins(0, 0, 0, 0)
        self.device_name = QLineEdit()
        self.device_name.setPlaceholderText("A name for this device, e.g. Laptop")
        self.device_name.setMaxLength(MAX_NAME)
        self.device_name.returnPressed.connect(self.save_name)
        naming.addWidget(self.device_name, 1)
        self.name_btn = QPushButton("Set name")
        self.name_btn.setToolTip("Shown on your other devices after the next sync, instead of the id")
        self.name_btn.clicked.connect(self.save_name)
        naming.addWidget(self.name_btn)
        box = QWidget()
        box.setLayout(naming)
        f.addRow("This device", box)
        self.device = label("…", muted=True)
        self.device.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.device.setToolTip("This device's id: how sync tells it apart")
        f.addRow("", self.device)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        self.status = label("", muted=True)
        row.addWidget(self.status, 1)
        self.now_btn = QPushButton("Sync now")
        self.now_btn.clicked.connect(self.sync_now)
        row.addWidget(self.now_btn, 0, Qt.AlignmentFlag.AlignTop)
        box = QWidget()
        box.setLayout(row)
        f.addRow("Last sync", box)
        self.detail = label("", muted=True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.hide()
        f.addRow("", self.detail)
        #: whether the remote is encrypted (docs/SYNC.md, "Encrypted remotes"), from the last sync
        self.kind = label("", muted=True)
        self.kind.setWordWrap(True)
        f.addRow("Remote", self.kind)
        #: the last status shown, and the conflicts waiting for review (None: not read yet)
        self.last: dict[str, Any] = {}
        self.pending: int | None = None
        self._interval = 15.0
        self._thread: threading.Thread | None = None
        self.remote.textChanged.connect(lambda _t: self._update())
        self.enabled.toggled.connect(lambda _on: self._update())
        self.status_changed.connect(self.show_status)
        self.sync_ended.connect(self._ended)
        if self.sync is not None:
            self.sync.subscribe(self._emit)  # any thread: the signal is queued to this one
        self.load(ctx.app.config)
        self._read_device()
        self._read_status()

    # --- values -----------------------------------------------------------------------

    def load(self, cfg: cfgmod.Config) -> None:
        self.remote.setText(cfg.sync_remote)
        self.enabled.setChecked(cfg.sync_enabled)
        self._interval = cfg.sync_interval_minutes
        self.interval.setValue(round(cfg.sync_interval_minutes))
        self._update()

    def values(self) -> dict[str, Any]:
        minutes = float(self.interval.value())
        if self.interval.value() == round(self._interval):
            minutes = self._interval  # 2.5 set by `memtray config set` stays 2.5, not a change to 2
        return {
            "sync_remote": self.remote.text().strip(),
            "sync_enabled": self.enabled.isChecked(),
            "sync_interval_minutes": minutes,
        }

    def check(self) -> None:
        """Raise the sync service's error for an address it would refuse (one holding a password)."""
        remote = self.remote.text().strip()
        if remote:
            check_remote(remote)

    def config_saved(self, cfg: cfgmod.Config) -> None:
        """After Settings saved: "Sync now" follows the saved address."""
        self._interval = cfg.sync_interval_minutes
        self._update()
        self._render()

    # --- status -----------------------------------------------------------------------

    def _emit(self, status: dict[str, Any]) -> None:
        try:
            self.status_changed.emit(status)
        except RuntimeError:  # the page is gone (the window closed): nothing to show it in
            pass

    def _read_device(self) -> None:
        app = self.ctx.app

        def read() -> tuple[str, str]:
            if self.sync is not None:
                ident = str(self.sync.device)
            else:
                from memtray.core.base.home import device_id

                ident = device_id(app.home)
            return ident, app.store.state.device_names.get(ident, "")

        def show(found: tuple[str, str]) -> None:
            self.device.setText(found[0])
            if not self.device_name.hasFocus():
                self.device_name.setText(found[1])

        self.ctx.bridge.call(read, name="sync-device", on_result=show,
                             on_error=lambda e: self.device.setText(f"unknown ({e})"))

    def save_name(self) -> None:
        """Name this device (an empty name removes it): recorded at once, as its own event."""
        app, ident, name = self.ctx.app, self.device.text(), self.device_name.text()
        self.name_btn.setEnabled(False)

        def done(_r: Any) -> None:
            self.name_btn.setEnabled(True)
            self.named.emit(name.strip())

        def failed(exc: BaseException) -> None:
            self.name_btn.setEnabled(True)
            self.detail.setText(str(exc))
            self.detail.show()

        self.ctx.bridge.call(lambda: name_device(app.store, ident, name), name="device-name", on_result=done,
                             on_error=failed)

    def _read_status(self) -> None:
        if self.sync is None:
            self._render()
            return
        self.ctx.bridge.call(self.sync.status, name="sync-status", on_result=self.show_status,
                             on_error=lambda _e: self.show_status({}))

    def show_status(self, status: dict[str, Any]) -> None:
        """After a sync attempt (or at start): the line, and the waiting conflicts read again."""
        self.last = status
        self._render()
        self._update()
        if status:
            self.ctx.bridge.call(self.ctx.app.memory.merge_conflicts, name="sync-conflicts",
                                 on_result=self._pending_read, on_error=lambda _e: None)

    def _pending_read(self, items: list[dict[str, Any]]) -> None:
        self.pending = len(items)
        self._render()

    def _saved_remote(self) -> str:
        return str(self.ctx.app.settings.current.sync_remote).strip()

    def _render(self) -> None:
        if self._thread is not None:
            return  # "Syncing…" until the sync ends
        text, tip = describe(self.last, configured=bool(self._saved_remote()), pending=self.pending)
        failed = bool(self.last.get("last_error"))
        if text.startswith("Sync: "):  # under "Last sync": "Not set up", not "Sync: not set up"
            text = text[6:7].upper() + text[7:]
        self.status.setText(text)
        self.status.setToolTip(tip)
        self.kind.setText(remote_kind(self.last))
        _restyle(self.status, "error" if failed else ("ok" if self.last.get("last_success") else "muted"))
        hint = str(self.last.get("hint") or "") if failed else ""
        if failed:
            err = str(self.last["last_error"])
            # the line shortens a long error: the whole of it, then what to do
            self.detail.setText("\n".join(x for x in (err if len(err) > 48 else "", hint) if x))
        else:
            self.detail.setText("")
        _restyle(self.detail, "error" if failed else "muted")
        self._update()

    def _update(self) -> None:
        """The intro while no address is given; "Sync now" for the saved address only."""
        typed = self.remote.text().strip()
        self.intro.setVisible(not typed)
        self.interval.setEnabled(self.enabled.isChecked())
        saved = self._saved_remote()
        idle = self._thread is None
        self.now_btn.setEnabled(self.sync is not None and bool(saved) and typed == saved and idle)
        if typed and typed != saved:
            self.now_btn.setToolTip(texts.text("sync.save_first"))
        else:
            self.now_btn.setToolTip("Sync with the remote now" if saved else "")
        if idle and not self.last.get("last_error"):
            self.detail.setText(texts.text("sync.save_first") if typed and typed != saved else "")
        self.detail.setVisible(bool(self.detail.text()))

    def _ended(self, err: dict[str, Any]) -> None:
        self._thread = None
        if err and self.last.get("last_error") != err["last_error"]:
            # an error the status file does not hold (refused before it started)
            self.last = {**self.last, **err, "last_attempt": format_ts(datetime.now(UTC))}
        self._render()

    # --- sync now ---------------------------------------------------------------------

    def sync_now(self) -> threading.Thread | None:
        """Sync with the saved remote on a thread of its own; the status line says how it ended."""
        sync = self.sync
        if sync is None or self._thread is not None or not self._saved_remote():
            return None

        def run() -> None:
            err: dict[str, Any] = {}
            try:
                sync.sync()
            except MemtrayError as exc:  # recorded in the status too (unless refused before it started)
                err = {"last_error": str(exc), "hint": exc.hint}
            except Exception as exc:  # never a traceback: the line says it
                log.exception("sync failed")
                err = {"last_error": f"{type(exc).__name__}: {exc}"}
            try:
                self.sync_ended.emit(err)
            except RuntimeError:  # the page is gone
                pass

        t = threading.Thread(target=run, name="memtray-sync", daemon=True)
        self._thread = t
        self.status.setText("Syncing…")
        _restyle(self.status, "muted")
        self._update()
        t.start()
        return t


__all__ = ["INTERVAL_MAX", "INTERVAL_MIN", "SyncSection"]
