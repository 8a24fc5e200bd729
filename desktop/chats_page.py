"""The Chats page: the conversations a person can find (title, date, the last words,
a failed turn marked), rename, pin, delete and restore, and the chat pane of the one picked.

A conversation's title is the first line its user wrote, an imported conversation's
title, or one set here (``transcript.rename``, a ``session.titled`` event); the
list follows the log like every view (a message from any front end moves its
conversation to the top and updates its line). Pinned ones head the list. A deleted
one (``chats.delete``: its messages stay in the log) leaves the list for "Recently
deleted", where Restore brings it back; right after a delete an Undo is offered.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memtray.core.log import chats, transcript

from .bridge import Follower
from .chatpane import ChatPane
from .context import Context
from .forms import error_text, label
from .model_switch import ModelSwitch
from .qt import (
    QAction,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QKeySequence,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPoint,
    QPushButton,
    QShowEvent,
    QSize,
    QSplitter,
    Qt,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from .scope_switch import ScopeSwitch
from .wheel import guard_wheel

#: the long-running sessions of the front ends: named for where they are, not their first line
SESSION_NAMES = {"quick": "Quick chat", "cli": "Terminal", "default": "Default"}


def session_label(key: str) -> str:
    return SESSION_NAMES.get(key, key)


def title_of(info: transcript.SessionInfo | None, key: str) -> str:
    """What the list calls a conversation: the name it was given (here or by an import),
    else the quick chat's and the terminal's own names, else its first line."""
    if info is not None and info.title and info.titled:
        return info.title
    if key in SESSION_NAMES:
        return SESSION_NAMES[key]
    if info is not None and info.title:
        return info.title
    return "New conversation" if key.startswith("chat-") else key


def day_text(ts: str | None, now: datetime | None = None) -> str:
    """"14:05" today, "Tue" within the week, "3 Nov" this year, else "3 Nov 2025"."""
    if not ts:
        return ""
    t = datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone()
    now = now or datetime.now().astimezone()
    if t.date() == now.date():
        return t.strftime("%H:%M")
    if 0 < (now.date() - t.date()).days < 7:
        return t.strftime("%a")
    if t.year == now.year:
        return f"{t.day} {t.strftime('%b')}"
    return f"{t.day} {t.strftime('%b %Y')}"


class ConversationItem(QWidget):
    """One line of the list: the title and the date, then the last words (or the failure)."""

    def __init__(self, ctx: Context, key: str, info: transcript.SessionInfo | None) -> None:
        super().__init__()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        lay.setSpacing(1)
        top = QHBoxLayout()
        top.setSpacing(6)
        self.title = QLabel(title_of(info, key))
        self.title.setStyleSheet("font-weight: 600;")
        self.title.setMinimumWidth(40)
        top.addWidget(self.title, 1)
        when = day_text(info.last_ts if info else None)
        if info is not None and info.deleted:
            when = f"deleted {day_text(info.deleted)}"
        elif info is not None and info.pinned:
            when = f"Pinned · {when}" if when else "Pinned"
        self.date = QLabel(when)
        self.date.setProperty("muted", True)
        top.addWidget(self.date)
        lay.addLayout(top)
        if info is not None and info.failed:
            line = "⚠ Not answered — open it to retry"
        else:
            line = info.preview if info is not None and info.preview else "No messages yet"
        self.preview = QLabel(line)
        self.preview.setProperty("muted", True)
        if info is not None and info.failed:
            self.preview.setStyleSheet(f"color: {ctx.theme.error_text};")
        self.preview.setMinimumWidth(40)
        lay.addWidget(self.preview)
        for lab in (self.title, self.preview):
            lab.setTextFormat(Qt.TextFormat.PlainText)
        self.key = key

    def elide(self, width: int) -> None:
        """Cut the title and preview to ``width`` pixels (the list's), with an ellipsis."""
        for lab, full in ((self.title, self.title.toolTip() or self.title.text()),
                          (self.preview, self.preview.toolTip() or self.preview.text())):
            lab.setToolTip(full)
            room = width - (self.date.sizeHint().width() + 30 if lab is self.title else 20)
            lab.setText(lab.fontMetrics().elidedText(full, Qt.TextElideMode.ElideRight, max(room, 40)))


class RenameDialog(QDialog):
    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Rename conversation")
        self.setMinimumWidth(420)
        lay = QVBoxLayout(self)
        self.name = QLineEdit(title)
        self.name.selectAll()
        self.name.setMaxLength(transcript.MAX_TITLE)
        lay.addWidget(self.name)
        self.message = label("", error=True)
        self.message.hide()
        lay.addWidget(self.message)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok_btn = box.addButton("Rename", QDialogButtonBox.ButtonRole.AcceptRole)
        self.ok_btn.setProperty("primary", True)
        box.accepted.connect(self._check)
        box.rejected.connect(self.reject)
        lay.addWidget(box)

    def _check(self) -> None:
        if not self.name.text().strip():
            self.message.setText("A name needs some words.")
            self.message.show()
            return
        self.accept()


class ChatsPage(QWidget):
    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(12, 12, 6, 12)
        ll.setSpacing(8)
        head = QHBoxLayout()
        cap = QLabel("Conversations")
        cap.setProperty("subheading", True)
        head.addWidget(cap)
        head.addStretch(1)
        new = QToolButton()
        new.setText("New chat")  # words every font has (a full-width plus drew as a box under Xvfb)
        new.setToolTip("Start a separate conversation")
        new.clicked.connect(self.new_conversation)
        head.addWidget(new)
        ll.addLayout(head)
        self.sessions = QListWidget()
        self.sessions.currentItemChanged.connect(self._picked)
        self.sessions.itemDoubleClicked.connect(lambda item: self.rename(str(item.data(Qt.ItemDataRole.UserRole))))
        self.sessions.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.sessions.customContextMenuRequested.connect(self._menu)
        self.sessions.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        delete = QAction("Delete", self.sessions)
        delete.setShortcut(QKeySequence(QKeySequence.StandardKey.Delete))
        delete.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        delete.triggered.connect(self._delete_current)
        self.sessions.addAction(delete)
        ll.addWidget(self.sessions, 1)
        self.status = label("", muted=True)
        self.status.hide()
        ll.addWidget(self.status)
        # right after a delete: the one-click way back
        self.undo_bar = QWidget()
        ub = QHBoxLayout(self.undo_bar)
        ub.setContentsMargins(0, 0, 0, 0)
        self.undo_text = label("", muted=True)
        self.undo_text.setTextFormat(Qt.TextFormat.PlainText)
        ub.addWidget(self.undo_text, 1)
        self.undo_btn = QPushButton("Undo")
        self.undo_btn.clicked.connect(self.undo_delete)
        ub.addWidget(self.undo_btn)
        self.undo_bar.hide()
        ll.addWidget(self.undo_bar)
        #: the conversation the Undo bar would bring back
        self.undone: str | None = None
        self.deleted_btn = QToolButton()
        self.deleted_btn.setCheckable(True)
        self.deleted_btn.setText("Recently deleted")
        self.deleted_btn.setToolTip("Deleted conversations: their messages are kept until a purge; restore one here")
        self.deleted_btn.toggled.connect(self._show_deleted)
        self.deleted_btn.hide()
        ll.addWidget(self.deleted_btn)
        self.deleted = QListWidget()
        self.deleted.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.deleted.itemDoubleClicked.connect(lambda item: self.restore(str(item.data(Qt.ItemDataRole.UserRole))))
        self.deleted.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.deleted.customContextMenuRequested.connect(self._deleted_menu)
        self.deleted.hide()
        ll.addWidget(self.deleted)
        self.restore_btn = QPushButton("Restore")
        self.restore_btn.setEnabled(False)
        self.restore_btn.clicked.connect(self._restore_current)
        self.deleted.currentItemChanged.connect(lambda *_: self.restore_btn.setEnabled(
            self.deleted.currentItem() is not None))
        self.restore_btn.hide()
        ll.addWidget(self.restore_btn)
        split.addWidget(left)
        self.pane = ChatPane(ctx, "quick")
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.setSpacing(0)
        bar = QHBoxLayout()
        bar.setContentsMargins(12, 8, 12, 0)
        bar.setSpacing(8)
        bar.addStretch(1)
        bar.addWidget(label("Model", muted=True))
        # the open conversation's own model, as in the quick chat (session.model)
        self.model_switch = ModelSwitch(ctx, lambda: self.pane.session, right)
        self.model_switch.failed.connect(self.pane.attach.say)
        self.pane.session_changed.connect(lambda _key: self.model_switch.refresh())
        bar.addWidget(self.model_switch)
        bar.addWidget(label("Memory", muted=True))
        # and its memory scope (session.scope): what memory it sees and writes
        self.scope_switch = ScopeSwitch(ctx, lambda: self.pane.session, right)
        self.scope_switch.failed.connect(self.pane.attach.say)
        self.pane.session_changed.connect(lambda _key: self.scope_switch.refresh())
        bar.addWidget(self.scope_switch)
        rl.addLayout(bar)
        rl.addWidget(self.pane, 1)
        guard_wheel(right)
        split.addWidget(right)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setSizes([300, 700])
        lay.addWidget(split)
        #: conversations started here that have no message in the log yet
        self._started: list[str] = []
        self.infos: dict[str, transcript.SessionInfo] = {}
        self.dialog: RenameDialog | None = None
        # the list follows the log: a session's first message (from any front end) adds it
        self.feed = Follower(ctx.bridge, self._query, self._show_sessions, name="sessions", parent=self,
                             wants=lambda change: bool(change.sessions))
        self.feed.request()

    def showEvent(self, e: QShowEvent) -> None:
        super().showEvent(e)
        self.model_switch.ask_server()

    def refresh(self, select: str | None = None) -> None:
        """Show ``select`` (or the current session) and list the sessions again."""
        if select:
            if select not in self._started:
                self._started.insert(0, select)
            self.pane.set_session(select)
        self.feed.request()

    def _query(self) -> Callable[[], list[transcript.SessionInfo]]:
        store = self.ctx.app.store
        return lambda: transcript.sessions(store.state)  # on the worker

    def _show_sessions(self, infos: list[transcript.SessionInfo]) -> None:
        self.infos = {i.key: i for i in infos}
        gone = [i for i in infos if i.deleted is not None]
        names = [i.key for i in infos if i.deleted is None]
        pinned = sum(1 for i in infos if i.pinned and i.deleted is None)
        for key in ("quick", *reversed(self._started)):
            if key not in self.infos:
                names.insert(pinned, key)  # below the pinned ones: new and never written in
        self._fill_deleted(gone)
        self._started = [k for k in self._started if k not in self.infos]
        current = self.pane.session
        self.sessions.blockSignals(True)
        self.sessions.clear()
        for key in names:
            info = self.infos.get(key)
            item = self._add_row(self.sessions, key, info)
            if info is not None and info.first_ts:
                item.setToolTip(f"{title_of(info, key)}\nstarted {info.first_ts[:16].replace('T', ' ')}"
                                f" · last message {str(info.last_ts)[:16].replace('T', ' ')}")
            if key == current:
                self.sessions.setCurrentItem(item)
        self.sessions.blockSignals(False)

    def _add_row(self, lst: QListWidget, key: str, info: transcript.SessionInfo | None) -> QListWidgetItem:
        """A conversation's two-line row at the end of ``lst``."""
        width = lst.viewport().width()
        # two lines and the row's margins: the row's own size hint is not laid out yet here
        height = lst.fontMetrics().lineSpacing() * 2 + 22
        item = QListWidgetItem()
        item.setData(Qt.ItemDataRole.UserRole, key)
        row = ConversationItem(self.ctx, key, info)
        row.elide(width)
        item.setSizeHint(QSize(width, height))
        lst.addItem(item)
        lst.setItemWidget(item, row)
        return item

    def item_for(self, key: str) -> ConversationItem | None:
        """The row of ``key`` in the list, if it is there."""
        return _row_in(self.sessions, key)

    def _picked(self, item: QListWidgetItem | None, _prev: Any = None) -> None:
        if item is not None:
            self.pane.set_session(str(item.data(Qt.ItemDataRole.UserRole)))

    def _fill_deleted(self, gone: list[transcript.SessionInfo]) -> None:
        gone = sorted(gone, key=lambda i: i.deleted or "", reverse=True)
        self.deleted_btn.setText(f"Recently deleted ({len(gone)})")
        self.deleted_btn.setVisible(bool(gone))
        if not gone and self.deleted_btn.isChecked():
            self.deleted_btn.setChecked(False)
        self.deleted.clear()
        for info in gone:
            self._add_row(self.deleted, info.key, info)
        self.restore_btn.setEnabled(self.deleted.currentItem() is not None)
        # as tall as its rows (three at most): the conversations above keep the room
        height = self.deleted.fontMetrics().lineSpacing() * 2 + 22
        self.deleted.setFixedHeight(height * max(1, min(len(gone), 3)) + 2 * self.deleted.frameWidth() + 4)

    def _show_deleted(self, on: bool) -> None:
        self.deleted.setVisible(on)
        self.restore_btn.setVisible(on)

    def deleted_item(self, key: str) -> ConversationItem | None:
        """The row of ``key`` under "Recently deleted", if it is there."""
        return _row_in(self.deleted, key)

    def _menu(self, pos: QPoint) -> None:
        item = self.sessions.itemAt(pos)
        if item is None:
            return
        menu = self.menu_for(str(item.data(Qt.ItemDataRole.UserRole)))
        menu.exec(self.sessions.viewport().mapToGlobal(pos))

    def menu_for(self, key: str) -> QMenu:
        """A listed conversation's menu: Rename, Pin or Unpin, Delete."""
        info = self.infos.get(key)
        menu = QMenu(self)
        pinned = info is not None and info.pinned
        for text, fn in (("Rename…", lambda: self.rename(key)),
                         ("Unpin" if pinned else "Pin to top", lambda: self.pin(key, not pinned)),
                         ("Delete", lambda: self.delete(key))):
            act = QAction(text, menu)
            act.triggered.connect(fn)
            act.setEnabled(info is not None or text.startswith("Rename"))  # nothing logged yet: nothing to keep
            menu.addAction(act)
        return menu

    def _deleted_menu(self, pos: QPoint) -> None:
        item = self.deleted.itemAt(pos)
        if item is None:
            return
        menu = QMenu(self)
        act = QAction("Restore", menu)
        act.triggered.connect(lambda: self.restore(str(item.data(Qt.ItemDataRole.UserRole))))
        menu.addAction(act)
        menu.exec(self.deleted.viewport().mapToGlobal(pos))

    def _delete_current(self) -> None:
        item = self.sessions.currentItem()
        key = str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else ""
        if key in self.infos:
            self.delete(key)

    def _restore_current(self) -> None:
        item = self.deleted.currentItem()
        if item is not None:
            self.restore(str(item.data(Qt.ItemDataRole.UserRole)))

    def _act(self, fn: Callable[..., Any], *args: Any, name: str, done: Callable[[Any], None] | None = None) -> None:
        """Run one of core's conversation commands on the worker; a refusal is said in words."""
        def failed(exc: BaseException) -> None:
            self.status.setText(error_text(exc))
            self.status.show()

        self.status.hide()
        self.ctx.bridge.call(fn, self.ctx.app.store, *args, name=name, on_result=done, on_error=failed)

    def pin(self, key: str, pinned: bool = True) -> None:
        self._act(chats.pin, key, pinned, name="pin-chat")

    def delete(self, key: str) -> None:
        """Move ``key`` to "Recently deleted" and offer Undo; the pane leaves it."""
        title = title_of(self.infos.get(key), key)

        def done(_r: Any) -> None:
            self.undone = key
            self.undo_text.setText(f"Deleted “{title}”.")
            self.undo_bar.show()
            if self.pane.session == key:
                rest = [i.key for i in self.infos.values() if i.deleted is None and i.key != key]
                self.pane.set_session(rest[0] if rest else "quick")

        self._act(chats.delete, key, name="delete-chat", done=done)

    def undo_delete(self) -> None:
        if self.undone is not None:
            key = self.undone
            self.restore(key, select=True)

    def restore(self, key: str, *, select: bool = False) -> None:
        def done(_r: Any) -> None:
            if self.undone == key:
                self.undone = None
                self.undo_bar.hide()
            if select:
                self.pane.set_session(key)

        self._act(chats.restore, key, name="restore-chat", done=done)

    def rename(self, key: str) -> None:
        if self.dialog is not None:
            self.dialog.close()
        dlg = RenameDialog(title_of(self.infos.get(key), key), self)
        dlg.accepted.connect(lambda: self._renamed(key, dlg.name.text()))
        self.dialog = dlg
        dlg.open()

    def _renamed(self, key: str, title: str) -> None:
        self._act(transcript.rename, key, title, name="rename")

    def new_conversation(self) -> None:
        self.refresh(select=time.strftime("chat-%Y%m%d-%H%M%S"))
        self.pane.focus_input()


def _row_in(lst: QListWidget, key: str) -> ConversationItem | None:
    for i in range(lst.count()):
        item = lst.item(i)
        if item is not None and item.data(Qt.ItemDataRole.UserRole) == key:
            w = lst.itemWidget(item)
            return w if isinstance(w, ConversationItem) else None
    return None
