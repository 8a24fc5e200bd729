"""The tray icon and its menu (only where a system tray exists)."""

from __future__ import annotations

from . import icons
from .nav import Navigator
from .qt import QAction, QMenu, QObject, QSystemTrayIcon, Signal


class Tray(QObject):
    toggle = Signal()
    quit = Signal()

    def __init__(self, nav: Navigator, *, dark_panel: bool, hotkey_text: str = "") -> None:
        super().__init__()
        self.nav = nav
        self.icon = QSystemTrayIcon(icons.tray_icon(dark_panel))
        self.icon.setToolTip("memtray")
        self.menu = QMenu()
        self.quick = QAction("Quick chat", self.menu)
        self.quick.triggered.connect(self.toggle)
        self.menu.addAction(self.quick)
        self.menu.addSeparator()
        for label, page in (("Chats", "chat"), ("Memory", "memory"), ("Reminders", "reminders"),
                            ("Settings", "settings")):
            act = QAction(label, self.menu)
            act.triggered.connect(lambda _=False, p=page: self.nav.open.emit(p, ""))
            self.menu.addAction(act)
        self.menu.addSeparator()
        q = QAction("Quit memtray", self.menu)
        q.triggered.connect(self.quit)
        self.menu.addAction(q)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)
        self.set_hotkey_text(hotkey_text)

    def set_hotkey_text(self, text: str) -> None:
        self.quick.setText(f"Quick chat\t{text}" if text else "Quick chat")

    def set_dark(self, dark_panel: bool) -> None:
        self.icon.setIcon(icons.tray_icon(dark_panel))

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.MiddleClick):
            self.toggle.emit()

    def show(self) -> None:
        self.icon.show()

    def hide(self) -> None:
        self.icon.hide()
