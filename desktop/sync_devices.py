"""The Sync card's devices: the paired devices, pairing a new one (show a code, or join
with a code another device shows) and removing one (docs/SYNC.md, "Encrypted remotes").

Every command runs on the worker (``ctx.bridge.call``): the keyring and git never run
on the GUI thread. Pairing and joining reach the remote (a push, a fetch); the sync a
join is followed by (so the first device's data is here right after, as ``memtray sync
pair --join`` does) and the one that publishes a removal run on the card's own sync
thread (:meth:`~.sync_settings.SyncSection.sync_now`), like "Sync now".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memtray.core.sync.identity import LOSS_WARNING

from . import texts
from .context import Context
from .forms import ask, error_text, label
from .qt import (
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
)

#: the role of a row's handle: a device id, or the start of the key of a device invited that
#: never synced (what ``Pairing.remove`` takes); None for a row that cannot be removed
HANDLE = Qt.ItemDataRole.UserRole


def row_text(d: dict[str, Any], names: dict[str, str]) -> str:
    """One paired device as the list shows it."""
    dev = d["device"]
    if dev is None:
        what = "the recovery code's keys" if d["recovery"] else "invited, has not synced yet"
        text = f"{what} (key {d['key']}…)"
    else:
        text = f"{names[dev]} ({dev})" if dev in names else dev
    if d["this"]:
        text += " · this device"
    if d["removed"]:
        text += " · removed"
    return text


class SyncDevices(QWidget):
    """Paired devices, "Pair a new device", "Join" and "Remove" (below the Sync card's fields)."""

    #: the devices were read again: (whether this device has keys, the listed devices)
    listed = Signal(bool, object)
    #: a command ended: its message (what happened, or the error in words)
    done = Signal(str)

    def __init__(self, ctx: Context, remote: Callable[[], str], sync_now: Callable[[], Any],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.sync = ctx.app.sync
        self._remote = remote
        self._sync_now = sync_now
        self.encrypted = False
        self._busy = False
        self._names: dict[str, str] = {}  # device names, read with the devices
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        self.devices = QListWidget()
        self.devices.setMaximumHeight(110)
        self.devices.setToolTip("The devices paired with this one: only they can read the remote and write to it")
        self.devices.currentItemChanged.connect(lambda *_a: self._update())
        col.addWidget(self.devices)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        self.pair_btn = QPushButton("Pair a new device")
        self.pair_btn.setToolTip(texts.text("sync.pair_help"))
        self.pair_btn.clicked.connect(self.pair)
        buttons.addWidget(self.pair_btn)
        self.remove_btn = QPushButton("Remove device…")
        self.remove_btn.setToolTip(texts.text("sync.remove_help"))
        self.remove_btn.clicked.connect(self.remove)
        buttons.addWidget(self.remove_btn)
        buttons.addStretch(1)
        col.addLayout(buttons)
        joining = QHBoxLayout()
        joining.setContentsMargins(0, 0, 0, 0)
        self.code = QLineEdit()
        self.code.setPlaceholderText("A pairing code from another device, e.g. 7KQ2-M9XD-4TRA")
        self.code.textChanged.connect(lambda _t: self._update())
        self.code.returnPressed.connect(self.join)
        joining.addWidget(self.code, 1)
        self.join_btn = QPushButton("Join")
        self.join_btn.setToolTip(texts.text("sync.join_help"))
        self.join_btn.clicked.connect(self.join)
        joining.addWidget(self.join_btn)
        col.addLayout(joining)
        self.message = label("", muted=True)
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.hide()
        col.addWidget(self.message)
        self.listed.connect(self._show)
        self.done.connect(self._said)
        self.refresh()

    # --- reading ----------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the paired devices again, on the worker (the buttons follow the saved address now)."""
        sync = self.sync
        self._update()
        if sync is None:
            return
        store = self.ctx.app.store

        def read() -> tuple[bool, list[dict[str, Any]], dict[str, str]]:
            return sync.pairing.encrypted, sync.pairing.devices(), dict(store.state.device_names)

        def show(got: tuple[bool, list[dict[str, Any]], dict[str, str]]) -> None:
            self._names = got[2]
            self.listed.emit(got[0], got[1])

        self.ctx.bridge.call(read, name="sync-devices", on_result=show, on_error=lambda e: self.done.emit(error_text(e)))

    def _show(self, encrypted: bool, listed: list[dict[str, Any]]) -> None:
        self.encrypted = encrypted
        names = self._names
        self.devices.clear()
        # this device first, then the others by name, then those invited, the removed last
        for d in sorted(listed, key=lambda d: (not d["this"], d["removed"], d["device"] is None,
                                               row_text(d, names).casefold())):
            item = QListWidgetItem(row_text(d, names))
            removable = not d["this"] and not d["removed"]
            item.setData(HANDLE, (d["device"] or d["key"]) if removable else None)
            self.devices.addItem(item)
        self.devices.setVisible(bool(listed))
        alone = encrypted and [d["this"] for d in listed if not d["removed"]] == [True]
        if alone and not self.message.text():  # the only device holding the keys: say what losing it means
            self._said(texts.text("sync.alone") + "\n" + LOSS_WARNING)
        self._update()

    # --- commands ---------------------------------------------------------------------

    def _run(self, fn: Callable[[], str], then_sync: bool) -> None:
        """``fn`` on the worker; its message said; then a sync on the card's thread if asked."""
        self._busy = True
        self._update()

        def ok(msg: str) -> None:
            self._busy = False
            self.done.emit(msg)
            if then_sync:
                self._sync_now()
            self.refresh()

        def failed(exc: BaseException) -> None:
            self._busy = False
            self.done.emit(error_text(exc))
            self.refresh()

        self.ctx.bridge.call(fn, name="sync-pairing", on_result=ok, on_error=failed)

    def pair(self) -> None:
        """Make a new device's keys and leave them on the remote for a code shown here."""
        sync, url = self.sync, self._remote()
        if sync is None or not url:
            return

        def invite() -> str:
            code = sync.pairing.invite(url)
            return texts.text("sync.code_shown", code=code, remote=url) + "\n" + LOSS_WARNING

        self._run(invite, then_sync=False)

    def join(self) -> None:
        """Take the keys the typed code names on the remote, then sync."""
        sync, url, code = self.sync, self._remote(), self.code.text().strip()
        if sync is None or not url or not code:
            return

        def take() -> str:
            inviter = sync.pairing.join(url, code)
            return f"Paired with {inviter}: syncing now, its data arrives here."

        self.code.clear()
        self._run(take, then_sync=True)

    def remove(self) -> None:
        """Remove the chosen device (asked first): its stream is refused from now on, and a
        new sync key it does not get seals what is written next; synced at once."""
        item = self.devices.currentItem()
        sync = self.sync
        handle = item.data(HANDLE) if item is not None else None
        if sync is None or item is None or handle is None:
            return
        if not ask(self, "Remove device", texts.text("sync.remove_confirm", device=item.text())):
            return

        def drop() -> str:
            done = sync.pairing.remove(str(handle))
            return (f"Removed {done.device or 'the invited device'}: what is written from now on is sealed with "
                    f"a new key it does not have (generation {done.gen}).")

        self._run(drop, then_sync=bool(self._remote()))

    # --- state ------------------------------------------------------------------------

    def _said(self, msg: str) -> None:
        self.message.setText(msg)
        self.message.setVisible(bool(msg))

    def _update(self) -> None:
        url = self._remote()
        idle = self.sync is not None and not self._busy
        self.pair_btn.setEnabled(idle and bool(url))
        self.join_btn.setEnabled(idle and bool(url) and bool(self.code.text().strip()) and not self.encrypted)
        self.code.setEnabled(idle and not self.encrypted)
        item = self.devices.currentItem()
        self.remove_btn.setEnabled(idle and item is not None and item.data(HANDLE) is not None)
        if not url:
            self.pair_btn.setToolTip(texts.text("sync.save_first"))
        else:
            self.pair_btn.setToolTip(texts.text("sync.pair_help"))


__all__ = ["SyncDevices", "row_text"]
