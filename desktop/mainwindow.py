"""The main window: chats (sessions + chat), the memory browser, reminders, settings.

It is also the app's face where no system tray exists (stock GNOME): then it is
shown at start and closing it quits. In-window banners carry notifications
when there is neither a notification server nor a tray.

At start it may be shown before the App exists (``ctx`` None, see
:mod:`.early`): the frame and navigation paint at once, the chats page is built
by :meth:`MainWindow.attach` once the App is open. The pages' modules (and the
core they import) are imported only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .qt import (
    QCloseEvent,
    QFrame,
    QGuiApplication,
    QHBoxLayout,
    QKeyEvent,
    QKeySequence,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QPushButton,
    QShortcut,
    QSize,
    QStackedWidget,
    QTimer,
    QToolButton,
    QVBoxLayout,
    QWidget,
    Signal,
)
from .theme import Theme

if TYPE_CHECKING:

    from .chats_page import ChatsPage
    from .context import Context
    from .memory_browser import MemoryBrowser
    from .reminders_view import RemindersPage
    from .search_view import SearchPage
    from .settings import SettingsPage

PAGES = ("chat", "memory", "reminders", "settings")
NAV_LABELS = ("Chats", "Memory", "Reminders", "Settings")
#: the stack's page of search results (not in the navigation: the field above it shows it)
SEARCH_PAGE = len(PAGES)
SEARCH_KEY = "Ctrl+K"


class SearchField(QLineEdit):
    """The search field above the navigation: Esc clears it (and leaves the results),
    Down moves to the results, Enter searches at once."""

    escaped = Signal()
    down = Signal()
    entered = Signal()

    def keyPressEvent(self, e: QKeyEvent) -> None:
        # Qt's namespace not at import: the window's frame paints before it is built
        from .qt import Qt

        key = e.key()
        if key == Qt.Key.Key_Escape:
            self.escaped.emit()
            return
        if key == Qt.Key.Key_Down:
            self.down.emit()
            return
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.entered.emit()
            return
        super().keyPressEvent(e)

class Banner(QFrame):
    action = Signal(str)
    invoked = Signal(str, str)  # (action key, target): one of the notification's extra actions

    def __init__(self, title: str, body: str, kind: str, target: str,
                 actions: list[tuple[str, str]] | None = None) -> None:
        super().__init__()
        self.setProperty("banner", "failure" if kind == "failure" else "info")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 8, 8, 8)
        text = QLabel(f"<b>{_esc(title)}</b>&nbsp;&nbsp;{_esc(body)}")
        text.setWordWrap(True)
        lay.addWidget(text, 1)
        self.buttons: dict[str, QPushButton] = {}
        for key, label in actions or []:
            b = QPushButton(label)
            b.clicked.connect(lambda _c=False, k=key: self._invoke(k))
            lay.addWidget(b)
            self.buttons[key] = b
        if target:
            b = QPushButton("Open")
            b.clicked.connect(self._act)
            lay.addWidget(b)
        close = QToolButton()
        close.setText("✕")
        close.clicked.connect(self.deleteLater)
        lay.addWidget(close)
        self.title = title
        self.target = target

    def _act(self) -> None:
        self.action.emit(self.target)
        self.deleteLater()

    def _invoke(self, key: str) -> None:
        self.invoked.emit(key, self.target)
        self.deleteLater()


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def default_size() -> QSize:
    """1280x720, or the screen's free area when that is smaller (e.g. 1366x768 at 200 %)."""
    want = QSize(1280, 720)
    screen = QGuiApplication.primaryScreen()
    if screen is None:
        return want
    free = screen.availableGeometry().size()
    return QSize(min(want.width(), free.width()), min(want.height(), free.height()))


class MainWindow(QMainWindow):
    closing = Signal()
    #: a banner's extra action (Undo, Review): (action key, target)
    banner_invoked = Signal(str, str)
    #: a page was built on first use: ("memory" | "reminders" | "settings", the page)
    page_created = Signal(str, object)

    def __init__(self, ctx: Context | None, *, quit_on_close: bool, theme: Theme | None = None) -> None:
        """``ctx`` None: the frame only (``theme`` colours it), until :meth:`attach`."""
        super().__init__()
        self.ctx = ctx
        self.quit_on_close = quit_on_close
        self.setWindowTitle("memtray")
        self.setMinimumSize(760, 520)
        self.resize(default_size())
        central = QWidget()
        outer = QHBoxLayout(central)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        self.nav = QListWidget()
        self.nav.setFixedWidth(168)
        self.nav.setObjectName("nav")
        t = ctx.theme if ctx is not None else theme
        assert t is not None, "a MainWindow without a context needs its theme"
        self.nav.setStyleSheet(
            f"QListWidget#nav {{ background: {t.surface}; border: none; border-right: 1px solid {t.border};"
            f" border-radius: 0; padding: 10px 8px; font-size: 11pt; }}"
            f"QListWidget#nav::item {{ padding: 9px 10px; margin: 1px 0; }}"
        )
        for label in NAV_LABELS:
            self.nav.addItem(QListWidgetItem(label))
        left = QWidget()
        left.setObjectName("navColumn")
        left.setFixedWidth(168)
        left.setStyleSheet(f"QWidget#navColumn {{ background: {t.surface}; border-right: 1px solid {t.border}; }}")
        ll = QVBoxLayout(left)
        ll.setContentsMargins(8, 10, 0, 0)
        ll.setSpacing(0)
        self.search_field = SearchField()
        self.search_field.setPlaceholderText("Search…")
        self.search_field.setToolTip(f"Search conversations, diary and memory ({SEARCH_KEY})")
        self.search_field.setClearButtonEnabled(True)
        self.search_field.setEnabled(ctx is not None)  # searching needs the App (attach)
        self.search_field.textChanged.connect(self._search_typed)
        self.search_field.escaped.connect(self.leave_search)
        self.search_field.down.connect(lambda: self._search_page().focus_results())
        self.search_field.entered.connect(lambda: self._search_typed(self.search_field.text(), now=True))
        ll.addWidget(self.search_field)
        self.nav.setStyleSheet(self.nav.styleSheet().replace(f"border-right: 1px solid {t.border};", ""))
        ll.addWidget(self.nav, 1)
        outer.addWidget(left)
        self._search: SearchPage | None = None
        #: the page shown before the search results (Esc goes back to it)
        self._before_search = 0
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.setSpacing(0)
        self.banners = QVBoxLayout()
        self.banners.setContentsMargins(12, 8, 12, 0)
        self.banners.setSpacing(6)
        rl.addLayout(self.banners)
        self.stack = QStackedWidget()
        # the chats page once the App is open (attach); memory and settings on first use:
        # start-up shows the window sooner
        self._memory: MemoryBrowser | None = None
        self._settings: SettingsPage | None = None
        self._reminders: RemindersPage | None = None
        self._row = 0  # the page asked for, shown once attached
        for _page in (*PAGES, "search"):
            self.stack.addWidget(QWidget())
        rl.addWidget(self.stack, 1)
        outer.addWidget(right, 1)
        self.setCentralWidget(central)
        self.nav.setCurrentRow(0)  # highlighted from the first paint; the page itself comes with attach
        self.nav.currentRowChanged.connect(self._page)
        self._memory_loaded = False
        if ctx is not None:
            self.attach(ctx)

    def attach(self, ctx: Context) -> None:
        """Build the chats page (and any page asked for meanwhile) now that the App is open."""
        from .qt import Qt  # not before: the first use of Qt's namespace costs the start ~40 ms

        self.nav.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        from .chats_page import ChatsPage

        self.ctx = ctx
        self.search_field.setEnabled(True)
        self.search_key = QShortcut(QKeySequence(SEARCH_KEY), self)
        self.search_key.activated.connect(self.focus_search)
        self.chats: ChatsPage = ChatsPage(ctx)
        self._replace(0, self.chats)
        row, self._row = self._row, -1
        self.nav.setCurrentRow(row)
        self._page(row)

    @property
    def attached(self) -> bool:
        return self.ctx is not None

    def _replace(self, index: int, page: QWidget) -> None:
        old = self.stack.widget(index)
        self.stack.insertWidget(index, page)
        if old is not None:
            self.stack.removeWidget(old)
            old.deleteLater()

    @property
    def memory(self) -> MemoryBrowser:
        if self._memory is None:
            from .memory_browser import MemoryBrowser

            assert self.ctx is not None, "the memory page needs the App (attach first)"
            self._memory = MemoryBrowser(self.ctx)
            self._replace(1, self._memory)
            self.page_created.emit("memory", self._memory)
        return self._memory

    @property
    def settings(self) -> SettingsPage:
        if self._settings is None:
            from .settings import SettingsPage

            assert self.ctx is not None, "the settings page needs the App (attach first)"
            self._settings = SettingsPage(self.ctx)
            self._replace(PAGES.index("settings"), self._settings)
            self.page_created.emit("settings", self._settings)
        return self._settings

    @property
    def reminders(self) -> RemindersPage:
        if self._reminders is None:
            from .reminders_view import RemindersPage

            assert self.ctx is not None, "the reminders page needs the App (attach first)"
            self._reminders = RemindersPage(self.ctx)
            self._replace(PAGES.index("reminders"), self._reminders)
            self.page_created.emit("reminders", self._reminders)
        return self._reminders

    # --- search -----------------------------------------------------------------------

    def _search_page(self) -> SearchPage:
        if self._search is None:
            from .search_view import SearchPage

            assert self.ctx is not None, "the search page needs the App (attach first)"
            self._search = SearchPage(self.ctx)
            self._search.open_hit.connect(self.open_hit)
            self._search.results.back_to_field.connect(self.search_field.setFocus)
            self._replace(SEARCH_PAGE, self._search)
        return self._search

    def focus_search(self) -> None:
        """The shortcut: the field focused, its text selected (typing replaces it)."""
        self.present()
        self.search_field.setFocus()
        self.search_field.selectAll()

    def _search_typed(self, text: str, now: bool = False) -> None:
        if self.ctx is None:
            return
        if not text.strip():
            if self.stack.currentIndex() == SEARCH_PAGE:
                self.leave_search(clear=False)
            return
        page = self._search_page()
        if self.stack.currentIndex() != SEARCH_PAGE:
            self._before_search = max(self.nav.currentRow(), 0)
            self.nav.blockSignals(True)
            self.nav.setCurrentRow(-1)
            self.nav.blockSignals(False)
            self.stack.setCurrentWidget(page)
        page.ask(text, now=now)

    def leave_search(self, clear: bool = True) -> None:
        """Back to the page shown before the search, the field emptied."""
        if clear and self.search_field.text():
            self.search_field.blockSignals(True)
            self.search_field.clear()
            self.search_field.blockSignals(False)
        if self.stack.currentIndex() == SEARCH_PAGE:
            self.nav.setCurrentRow(self._before_search)
            self._page(self._before_search)

    @property
    def search_shown(self) -> bool:
        return self._search is not None and self.stack.currentIndex() == SEARCH_PAGE

    def open_hit(self, kind: str, session: str, seq: int) -> None:
        """A search result: a message in its conversation, scrolled to and marked; a diary
        entry or memory change at its memory revision."""
        if kind == "message" and session:
            self.open("chat", session)
            self.chats.pane.show_message(seq)
        else:
            self.open("memory", f"memory:seq:{seq}")

    @property
    def settings_built(self) -> bool:
        return self._settings is not None

    def _page(self, row: int) -> None:
        if self.ctx is None:  # not attached yet: shown once it is
            self._row = row
            return
        name = PAGES[row] if 0 <= row < len(PAGES) else "chat"
        if name == "memory":
            page: QWidget = self.memory
        elif name == "reminders":
            page = self.reminders
        elif name == "settings":
            page = self.settings
        else:
            page = self.chats
        self.stack.setCurrentWidget(page)
        if row == 1 and not self._memory_loaded:
            self._memory_loaded = True
            self.memory.refresh()

    def open(self, page: str, arg: str = "") -> None:
        row = PAGES.index(page) if page in PAGES else 0
        if page == "chat":
            self.chats.refresh(select=arg or None)
        if page == "memory" and arg:
            self._memory_loaded = True
            self.memory.open_target(arg)
        if page == "reminders" and arg:
            self.reminders.show_reminder(arg)
        self.nav.setCurrentRow(row)
        self.present()

    def present(self) -> None:
        if self.isMinimized():
            self.showNormal()
        self.show()
        self.raise_()
        self.activateWindow()

    def show_banner(self, title: str, body: str, kind: str, target: str,
                    actions: list[tuple[str, str]] | None = None) -> Banner:
        b = Banner(title, body, kind, target, actions)
        b.action.connect(self._banner_action)
        b.invoked.connect(self.banner_invoked)
        self.banners.addWidget(b)
        if kind not in ("failure", "notice"):  # those stay until closed
            QTimer.singleShot(30_000, b, b.deleteLater)
        return b

    def _banner_action(self, target: str) -> None:
        if self.ctx is not None:  # banners come from the desktop, which attached the window
            self.ctx.nav.open.emit("target", target)

    def closeEvent(self, e: QCloseEvent) -> None:
        self.closing.emit()
        super().closeEvent(e)
