"""Shown when no global hotkey backend works: how to bind ``memtray toggle`` yourself
(a dialog, or a page of the first-run onboarding)."""

from __future__ import annotations

import os
import shlex

from .hotkeys import HotkeyStatus
from .qt import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    Qt,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)
from .theme import Theme

HELP = """\
<p>memtray could not register <b>{hotkey}</b> as a global shortcut.</p>
<p style="color:{muted}">{why}</p>
<p>You can bind the command below to any key in your desktop's own keyboard settings.
It shows or hides the quick chat (and starts memtray if it is not running):</p>
<pre style="background:{code_bg}; padding:6px">{command}</pre>
<p><b>GNOME</b>: Settings → Keyboard → View and Customise Shortcuts → Custom Shortcuts → <b>+</b>.
Name: <i>memtray</i>, Command: the line above, Shortcut: press your keys.</p>
<p><b>KDE Plasma</b>: System Settings → Keyboard → Shortcuts → Add New → Command or Script…;
paste the command, then set the trigger.</p>
<p><b>Xfce</b>: Settings → Keyboard → Application Shortcuts → Add.
<b>Cinnamon</b>: Keyboard → Shortcuts → Custom Shortcuts.
<b>MATE</b>: Keyboard Shortcuts → Add.</p>
<p><b>Sway / Hyprland / i3</b>: add to your config, e.g.
<code>bindsym Ctrl+Mod1+space exec {command}</code> (Sway/i3) or
<code>bind = CTRL ALT, space, exec, {command}</code> (Hyprland).</p>
<p><b>macOS</b>: Shortcuts app → new shortcut → Run Shell Script, then give it a keyboard shortcut.
<b>Windows</b>: a shortcut to the command with a "Shortcut key" in its Properties.</p>
"""


def toggle_command() -> str:
    from memtray.desktop.autostart import command

    return shlex.join([*command(), "toggle"])


def why(status: HotkeyStatus) -> str:
    if status.state == "none":
        if status.tried:
            return ("This desktop offers no way for apps to register global shortcuts (tried: "
                    + "; ".join(status.tried) + ").")
        if os.environ.get("MEMTRAY_HOTKEY_BACKEND", "").lower() == "none":
            return "Global shortcuts are turned off: MEMTRAY_HOTKEY_BACKEND is set to \"none\"."
        return "memtray knows no way to register a global shortcut on this platform."
    if status.conflict:
        return f"Another application already uses it: {status.message}"
    return "; ".join(status.tried) or status.message


class HotkeyHelp(QWidget):
    """Why the hotkey is not available and how to bind ``memtray toggle`` instead (the
    dialog below, and a page of the first-run onboarding)."""

    def __init__(self, status: HotkeyStatus, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel("The global hotkey is not available")
        self.title.setProperty("heading", True)
        lay.addWidget(self.title)
        self.text = QTextBrowser()
        self.text.setOpenExternalLinks(True)
        self.text.setFrameShape(QTextBrowser.Shape.NoFrame)
        self.command = toggle_command()
        self.text.setHtml(HELP.format(
            hotkey=status.hotkey or "the hotkey",
            why=why(status).replace("<", "&lt;"),
            command=self.command.replace("<", "&lt;"),
            muted=theme.muted,
            code_bg=theme.code_bg,
        ))
        lay.addWidget(self.text, 1)
        row = QHBoxLayout()
        copy = QPushButton("Copy command")
        copy.clicked.connect(self._copy)
        row.addWidget(copy)
        row.addStretch(1)
        lay.addLayout(row)

    def _copy(self) -> None:
        from .qt import QApplication

        QApplication.clipboard().setText(self.command)


class HotkeyHelpDialog(QDialog):
    def __init__(self, status: HotkeyStatus, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Set up the memtray hotkey")
        self.setMinimumSize(560, 520)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(18, 16, 18, 14)
        self.help = HotkeyHelp(status, theme)
        self.text = self.help.text
        self.command = self.help.command
        lay.addWidget(self.help, 1)
        self.dont_show = QCheckBox("Don't show this again at start (Settings still shows the status)")
        lay.addWidget(self.dont_show)
        box = QDialogButtonBox()
        ok = box.addButton(QDialogButtonBox.StandardButton.Close)
        ok.clicked.connect(self.accept)
        lay.addWidget(box)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
