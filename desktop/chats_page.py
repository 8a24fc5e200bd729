"""The Chats page: the conversations a person can find (title, date, the last words,
a failed turn marked), rename, and the chat pane of the one picked.

A conversation's title is the first line its user wrote, an imported conversation's
title, or one set here (``transcript.rename``, a ``session.titled`` event); the
list follows the log like every view (a message from any front end moves its
conversation to the top and updates its line).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memtray.core.log import transcript

from .bridge import Follower
from .chatpane import ChatPane
from .context import Context
from .forms import error_text, label
from .qt import (
    QAction,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPoint,
    QSize,
    QSplitter,
    Qt,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

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
        self.date = QLabel(day_text(info.last_ts if info else None))
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
        new.setText("＋ New")
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
        ll.addWidget(self.sessions, 1)
        self.status = label("", muted=True)
        self.status.hide()
        ll.addWidget(self.status)
        split.addWidget(left)
        self.pane = ChatPane(ctx, "quick")
        split.addWidget(self.pane)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setSizes([260, 700])
        lay.addWidget(split)
        #: conversations started here that have no message in the log yet
        self._started: list[str] = []
        self.infos: dict[str, transcript.SessionInfo] = {}
        self.dialog: RenameDialog | None = None
        # the list follows the log: a session's first message (from any front end) adds it
        self.feed = Follower(ctx.bridge, self._query, self._show_sessions, name="sessions", parent=self,
                             wants=lambda change: bool(change.sessions))
        self.feed.request()

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
        names = [i.key for i in infos]
        self.infos = {i.key: i for i in infos}
        for key in ("quick", *reversed(self._started)):
            if key not in names:
                names.insert(0, key)
        self._started = [k for k in self._started if k not in self.infos]
        current = self.pane.session
        self.sessions.blockSignals(True)
        self.sessions.clear()
        width = self.sessions.viewport().width()
        # two lines and the row's margins: the row's own size hint is not laid out yet here
        height = self.sessions.fontMetrics().lineSpacing() * 2 + 22
        for key in names:
            info = self.infos.get(key)
            item = QListWidgetItem()
            item.setData(Qt.ItemDataRole.UserRole, key)
            row = ConversationItem(self.ctx, key, info)
            row.elide(width)
            item.setSizeHint(QSize(width, height))
            if info is not None and info.first_ts:
                item.setToolTip(f"{title_of(info, key)}\nstarted {info.first_ts[:16].replace('T', ' ')}"
                                f" · last message {str(info.last_ts)[:16].replace('T', ' ')}")
            self.sessions.addItem(item)
            self.sessions.setItemWidget(item, row)
            if key == current:
                self.sessions.setCurrentItem(item)
        self.sessions.blockSignals(False)

    def item_for(self, key: str) -> ConversationItem | None:
        for i in range(self.sessions.count()):
            item = self.sessions.item(i)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == key:
                w = self.sessions.itemWidget(item)
                return w if isinstance(w, ConversationItem) else None
        return None

    def _picked(self, item: QListWidgetItem | None, _prev: Any = None) -> None:
        if item is not None:
            self.pane.set_session(str(item.data(Qt.ItemDataRole.UserRole)))

    def _menu(self, pos: QPoint) -> None:
        item = self.sessions.itemAt(pos)
        if item is None:
            return
        menu = QMenu(self)
        act = QAction("Rename…", menu)
        act.triggered.connect(lambda: self.rename(str(item.data(Qt.ItemDataRole.UserRole))))
        menu.addAction(act)
        menu.exec(self.sessions.viewport().mapToGlobal(pos))

    def rename(self, key: str) -> None:
        if self.dialog is not None:
            self.dialog.close()
        dlg = RenameDialog(title_of(self.infos.get(key), key), self)
        dlg.accepted.connect(lambda: self._renamed(key, dlg.name.text()))
        self.dialog = dlg
        dlg.open()

    def _renamed(self, key: str, title: str) -> None:
        def failed(exc: BaseException) -> None:
            self.status.setText(error_text(exc))
            self.status.show()

        self.status.hide()
        store = self.ctx.app.store
        self.ctx.bridge.call(transcript.rename, store, key, title, name="rename", on_error=failed)

    def new_conversation(self) -> None:
        self.refresh(select=time.strftime("chat-%Y%m%d-%H%M%S"))
        self.pane.focus_input()
