"""The quick chat: a frameless, always-on-top popup on the active screen.

Focus lands in the input; Enter sends, Shift+Enter adds a line, Esc hides, the
hotkey (or ``memtray toggle``) toggles. Its session key is ``"quick"``.
"""

from __future__ import annotations

from .chatpane import ChatPane
from .checkin import CheckIn
from .context import Context
from .model_switch import ModelSwitch
from .qt import (
    QCursor,
    QFrame,
    QGuiApplication,
    QHBoxLayout,
    QHideEvent,
    QKeyEvent,
    QLabel,
    QPoint,
    QShowEvent,
    Qt,
    QToolButton,
    QVBoxLayout,
    QWidget,
    Signal,
)
from .scope_switch import ScopeSwitch
from .wheel import guard_wheel

SESSION = "quick"


class _Header(QFrame):
    """Title bar substitute: drag to move the frameless popup."""

    def __init__(self, popup: QWidget) -> None:
        super().__init__(popup)
        self.popup = popup
        self._drag: QPoint | None = None

    def mousePressEvent(self, e) -> None:  # type: ignore[no-untyped-def]
        if e.button() == Qt.MouseButton.LeftButton:
            handle = self.popup.windowHandle()
            if handle is not None and handle.startSystemMove():
                return  # Wayland and modern X11 WMs move it themselves
            self._drag = e.globalPosition().toPoint() - self.popup.frameGeometry().topLeft()

    def mouseMoveEvent(self, e) -> None:  # type: ignore[no-untyped-def]
        if self._drag is not None:
            self.popup.move(e.globalPosition().toPoint() - self._drag)

    def mouseReleaseEvent(self, e) -> None:  # type: ignore[no-untyped-def]
        self._drag = None


class QuickChat(QWidget):
    shown = Signal()
    hidden = Signal()

    def __init__(self, ctx: Context, hotkey_text: str = "") -> None:
        super().__init__(None, Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint
                         | Qt.WindowType.WindowStaysOnTopHint)
        self.ctx = ctx
        self.setWindowTitle("memtray — quick chat")
        self.setObjectName("quickchat")
        t = ctx.theme
        self.setStyleSheet(
            f"QWidget#quickchat {{ background: {t.bg}; border: 1px solid {t.border}; }}"
            f"QFrame#qcHeader {{ background: {t.surface}; border-bottom: 1px solid {t.border}; }}"
        )
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(1, 1, 1, 1)
        lay.setSpacing(0)
        head = _Header(self)
        head.setObjectName("qcHeader")
        hl = QHBoxLayout(head)
        hl.setContentsMargins(12, 6, 6, 6)
        title = QLabel("memtray")
        title.setStyleSheet("font-weight: 700;")
        hl.addWidget(title)
        self.hint = QLabel(hotkey_text)
        self.hint.setProperty("muted", True)
        hl.addWidget(self.hint)
        hl.addStretch(1)
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Hide (Esc)")
        close.clicked.connect(self.hide)
        hl.addWidget(close)
        lay.addWidget(head)
        self.pane = ChatPane(ctx, SESSION, compact=True)
        # "Still training for the marathon?", when a check of a fact this chat's scope sees is due
        self.checkin = CheckIn(ctx, lambda: self.pane.session, self)
        lay.addWidget(self.checkin)
        # which model this conversation's turns go to (remembered per session: session.model)
        self.model_switch = ModelSwitch(ctx, lambda: self.pane.session, head)
        self.model_switch.failed.connect(self.pane.attach.say)
        hl.insertWidget(hl.count() - 1, self.model_switch)
        # which memory this conversation sees and writes (remembered per session: session.scope)
        self.scope_switch = ScopeSwitch(ctx, lambda: self.pane.session, head)
        self.scope_switch.failed.connect(self.pane.attach.say)
        self.pane.session_changed.connect(lambda _key: self.scope_switch.refresh())
        hl.insertWidget(hl.count() - 1, self.scope_switch)
        guard_wheel(head)  # a wheel passing over the header never switches the model
        self.pane.escaped.connect(self.hide)
        self.pane.open_main.connect(self._open_main)
        lay.addWidget(self.pane, 1)
        self.resize(600, 640)

    def set_hotkey_text(self, text: str) -> None:
        self.hint.setText(text)

    def _open_main(self, session: str) -> None:
        self.hide()
        self.ctx.nav.open.emit("chat", session)

    def toggle(self) -> None:
        if self.isVisible():
            self.hide()
        else:
            self.present()

    def present(self) -> None:
        if not self.isVisible():
            self._place()
        self.show()
        self.raise_()
        self.activateWindow()
        self.pane.focus_input()

    def _place(self) -> None:
        screen = QGuiApplication.screenAt(QCursor.pos()) or QGuiApplication.primaryScreen()
        if screen is None:
            return
        area = screen.availableGeometry()
        w = max(460, min(640, int(area.width() * 0.42)))
        h = max(420, min(700, int(area.height() * 0.7)))
        self.resize(w, h)
        self.move(area.x() + (area.width() - w) // 2, area.y() + max(24, (area.height() - h) // 5))

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() == Qt.Key.Key_Escape:
            self.hide()
            return
        super().keyPressEvent(e)

    def showEvent(self, e: QShowEvent) -> None:
        super().showEvent(e)
        self.model_switch.ask_server()
        self.checkin.refresh()
        self.pane.focus_input()
        self.shown.emit()

    def hideEvent(self, e: QHideEvent) -> None:
        super().hideEvent(e)
        self.hidden.emit()
