"""The chat's widgets: a message (markdown, copy), an error inline (hint, retry,
settings), the input box and the scrolling column of messages.

:mod:`.chatpane` drives them for one session; the quick chat popup and the
main window both show a :class:`~.chatpane.ChatPane`.
"""

from __future__ import annotations

import logging
from typing import Any

from . import markdown
from .context import Context
from .qt import (
    QApplication,
    QDesktopServices,
    QFrame,
    QHBoxLayout,
    QKeyEvent,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QResizeEvent,
    QScrollArea,
    QSizePolicy,
    Qt,
    QTextBrowser,
    QTextCursor,
    QTimer,
    QToolButton,
    QUrl,
    QVBoxLayout,
    QWidget,
    Signal,
)

log = logging.getLogger(__name__)

class AutoBrowser(QTextBrowser):
    """A read-only rich-text view as tall as its content (the scroll area scrolls)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setOpenLinks(False)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.viewport().setAutoFillBackground(False)
        self.setStyleSheet("QTextBrowser { background: transparent; }")
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.LinksAccessibleByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.document().documentLayout().documentSizeChanged.connect(self._fit)
        self._fit()

    def _fit(self, *_: Any) -> None:
        h = int(self.document().size().height() + 0.999) + 2
        if h != self.height():
            self.setFixedHeight(max(h, 18))

    def resizeEvent(self, e: QResizeEvent) -> None:
        super().resizeEvent(e)
        self._fit()


class MessageView(QFrame):
    """One message: role line, body, and small actions."""

    copy_requested = Signal(str)

    def __init__(self, ctx: Context, role: str, text: str = "", *, streaming: bool = False,
                 tag: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.role = role
        self.text = text
        #: the logged message's seq (None for one not logged yet: typed here, streaming)
        self.seq: int | None = None
        self.codes: list[str] = []
        self.streaming = streaming
        t = ctx.theme
        self.setObjectName("msg")
        self._bg = t.user_bg if role == "user" else "transparent"
        self.marked = False
        self.setStyleSheet(f"QFrame#msg {{ background: {self._bg}; border-radius: 10px; }}")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 8, 12, 6)
        lay.setSpacing(2)
        head = QHBoxLayout()
        head.setSpacing(6)
        self.who = QLabel("You" if role == "user" else "memtray")
        self.who.setStyleSheet(f"color: {t.muted}; font-weight: 600; font-size: 9pt;")
        head.addWidget(self.who)
        self.tag = QLabel(tag)
        self.tag.setStyleSheet(f"color: {t.muted}; font-size: 9pt;")
        head.addWidget(self.tag)
        head.addStretch(1)
        self.copy_btn = QToolButton()
        self.copy_btn.setText("Copy")
        self.copy_btn.setToolTip("Copy this message (markdown)")
        self.copy_btn.clicked.connect(self.copy)
        head.addWidget(self.copy_btn)
        lay.addLayout(head)
        self.body = AutoBrowser()
        self.body.anchorClicked.connect(self._anchor)
        lay.addWidget(self.body)
        if streaming:
            self.body.setPlainText(text)
            self.copy_btn.setEnabled(False)
            self.tag.setText("…")
        else:
            self.render_body()

    def render_body(self) -> None:
        if self.role == "user":
            self.body.setPlainText(self.text)
            self.codes = []
        else:
            self.codes = markdown.render(self.body.document(), self.text, self.ctx.theme)

    def append(self, delta: str) -> None:
        self.text += delta
        cur = QTextCursor(self.body.document())
        cur.movePosition(QTextCursor.MoveOperation.End)
        cur.insertText(delta)

    def mark(self, on: bool = True) -> None:
        """Outline the message (a search result opened here), or not."""
        self.marked = on
        border = f" border: 2px solid {self.ctx.theme.accent};" if on else ""
        self.setStyleSheet(f"QFrame#msg {{ background: {self._bg}; border-radius: 10px;{border} }}")

    def finish(self, text: str | None = None, tag: str = "") -> None:
        if text is not None:
            self.text = text
        self.streaming = False
        self.tag.setText(tag)
        self.copy_btn.setEnabled(True)
        self.render_body()

    def copy(self) -> None:
        QApplication.clipboard().setText(self.text)
        self.copy_requested.emit(self.text)

    def _anchor(self, url: QUrl) -> None:
        href = url.toString()
        if href.startswith(markdown.COPY_CODE):
            try:
                code = self.codes[int(href[len(markdown.COPY_CODE):])]
            except (ValueError, IndexError):
                return
            QApplication.clipboard().setText(code)
            self.copy_requested.emit(code)
        elif url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)


class ErrorView(QFrame):
    """A failure, inline: what happened, what to do, and a way to retry."""

    retry = Signal()
    settings = Signal()

    def __init__(self, ctx: Context, exc: BaseException, *, can_retry: bool = True,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        t = ctx.theme
        self.exc = exc
        self.setObjectName("err")
        self.setStyleSheet(
            f"QFrame#err {{ background: {t.error_bg}; border: 1px solid {t.error_text}; border-radius: 10px; }}"
            f"QLabel {{ color: {t.text}; }}"
        )
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 10, 12, 10)
        lay.setSpacing(4)
        self.message = QLabel(str(exc) or type(exc).__name__)
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setStyleSheet(f"color: {t.error_text}; font-weight: 600;")
        lay.addWidget(self.message)
        from memtray.core.base.errors import MemtrayError

        hint = exc.hint if isinstance(exc, LoggedFailure | MemtrayError) else ""
        if not hint and not _is_memtray_error(exc) and not isinstance(exc, LoggedFailure):
            hint = "This looks like a bug in memtray; the details are in the log (memtray doctor)."
        self.hint = QLabel(hint)
        self.hint.setWordWrap(True)
        self.hint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hint.setVisible(bool(hint))
        lay.addWidget(self.hint)
        row = QHBoxLayout()
        row.addStretch(1)
        if _needs_settings(exc):
            s = QPushButton("Open settings")
            s.clicked.connect(self.settings)
            row.addWidget(s)
        if can_retry:
            r = QPushButton("Retry")
            r.setProperty("primary", True)
            r.clicked.connect(self.retry)
            row.addWidget(r)
        lay.addLayout(row)


class LoggedFailure(Exception):
    """A turn's failure as the log recorded it (``turn.failed``: its words and the kind of
    error), shown again with Retry after the live error card is gone."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def hint(self) -> str:
        from memtray.core.base import errors

        known = {c.__name__: c for c in (errors.LLMAuthError, errors.LLMConnectionError, errors.LLMTimeout,
                                         errors.LLMRateLimited, errors.LLMBadResponse, errors.ConfigError,
                                         errors.KeyringError, errors.NoSecureKeyring)}
        cls = known.get(self.kind)
        return cls.hint if cls is not None else "This message got no answer."


def _is_memtray_error(exc: BaseException) -> bool:
    from memtray.core.base.errors import MemtrayError

    return isinstance(exc, MemtrayError)


def _needs_settings(exc: BaseException) -> bool:
    from memtray.core.base.errors import (
        ConfigError,
        KeyringError,
        LLMAuthError,
        LLMConnectionError,
        LLMError,
    )

    if isinstance(exc, LLMAuthError | LLMConnectionError | ConfigError | KeyringError):
        return True
    if isinstance(exc, LoggedFailure):
        return exc.kind in ("LLMAuthError", "LLMConnectionError", "ConfigError", "KeyringError", "NoSecureKeyring") \
            or "no model is configured" in str(exc)
    return isinstance(exc, LLMError) and "no model is configured" in str(exc)


class InputBox(QPlainTextEdit):
    """Enter sends, Shift+Enter adds a line, Esc asks to hide; grows up to six lines."""

    submitted = Signal()
    escaped = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabChangesFocus(True)
        self.document().documentLayout().documentSizeChanged.connect(self._grow)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._grow()

    def _grow(self, *_: Any) -> None:
        fm = self.fontMetrics()
        lines = max(1, int(self.document().size().height()))
        shown = min(6, lines)
        m = self.contentsMargins()
        doc_margin = int(self.document().documentMargin())
        self.setVerticalScrollBarPolicy(
            Qt.ScrollBarPolicy.ScrollBarAsNeeded if lines > 6 else Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        )
        self.setFixedHeight(shown * fm.lineSpacing() + 2 * doc_margin + m.top() + m.bottom() + 10)

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if e.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.submitted.emit()
            return
        if e.key() == Qt.Key.Key_Escape:
            self.escaped.emit()
            return
        super().keyPressEvent(e)


class ChatView(QScrollArea):
    """A column of messages; keeps to the bottom while the user is there."""

    load_more = Signal()

    def __init__(self, ctx: Context, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFrameShape(QFrame.Shape.NoFrame)
        inner = QWidget()
        inner.setObjectName("chatInner")
        self.col = QVBoxLayout(inner)
        self.col.setContentsMargins(10, 8, 10, 8)
        self.col.setSpacing(8)
        self.more = QPushButton("Show earlier messages")
        self.more.setFlat(True)
        self.more.clicked.connect(self.load_more)
        self.col.addWidget(self.more, 0, Qt.AlignmentFlag.AlignHCenter)
        self.empty = QLabel("Ask anything. memtray remembers what matters.")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setProperty("muted", True)
        self.empty.setWordWrap(True)
        self.col.addWidget(self.empty)
        self.col.addStretch(1)
        self.setWidget(inner)
        self._stick = True
        self.verticalScrollBar().rangeChanged.connect(self._on_range)
        self.verticalScrollBar().valueChanged.connect(self._on_value)

    # the stretch is the last item: new items go before it
    def add(self, w: QWidget) -> None:
        self.empty.hide()
        self.col.insertWidget(self.col.count() - 1, w)

    def insert_before(self, anchor: QWidget | None, w: QWidget) -> None:
        """Insert ``w`` just above ``anchor`` (at the end when there is none)."""
        index = self.col.indexOf(anchor) if anchor is not None else -1
        if index < 0:
            self.add(w)
            return
        self.empty.hide()
        self.col.insertWidget(index, w)

    def prepend(self, widgets: list[QWidget]) -> None:
        bar = self.verticalScrollBar()
        from_bottom = bar.maximum() - bar.value()
        index = 1 + (1 if self.empty is not None else 0)
        for w in reversed(widgets):
            self.col.insertWidget(index, w)
        if widgets:
            self.empty.hide()
        QTimer.singleShot(0, bar, lambda: bar.setValue(bar.maximum() - from_bottom))

    def clear(self) -> None:
        keep = {self.more, self.empty}
        for i in reversed(range(self.col.count())):
            item = self.col.itemAt(i)
            w = item.widget() if item is not None else None
            if w is not None and w not in keep:
                self.col.takeAt(i)
                w.deleteLater()
        self.empty.show()
        self._stick = True

    def messages(self) -> list[MessageView]:
        out = []
        for i in range(self.col.count()):
            item = self.col.itemAt(i)
            w = item.widget() if item is not None else None
            if isinstance(w, MessageView):
                out.append(w)
        return out

    def reveal(self, w: QWidget) -> None:
        """Scroll so that ``w`` is in view (after the layout placed it), and stay there."""
        self._stick = False

        def go() -> None:
            self._stick = False
            self.ensureWidgetVisible(w, 0, 60)

        QTimer.singleShot(0, w, go)

    def scroll_to_end(self) -> None:
        self._stick = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _on_range(self, _lo: int, hi: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(hi)

    def _on_value(self, v: int) -> None:
        self._stick = v >= self.verticalScrollBar().maximum() - 4


def divider(ctx: Context, text: str) -> QLabel:
    lab = QLabel(f"— {text} —")
    lab.setAlignment(Qt.AlignmentFlag.AlignCenter)
    lab.setStyleSheet(f"color: {ctx.theme.muted}; font-size: 9pt; padding: 4px;")
    return lab
