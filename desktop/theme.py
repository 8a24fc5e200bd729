"""Colours, fonts and style sheets, following the system's light or dark scheme."""

from __future__ import annotations

from dataclasses import dataclass

from .qt import QApplication, QColor, QFont, QFontDatabase, QGuiApplication, QPalette


@dataclass(frozen=True)
class Theme:
    dark: bool
    bg: str
    surface: str
    surface2: str
    border: str
    text: str
    muted: str
    accent: str
    accent_text: str
    user_bg: str
    error_bg: str
    error_text: str
    ok_text: str
    added_bg: str
    removed_bg: str
    changed_bg: str
    code_bg: str
    syn_keyword: str
    syn_string: str
    syn_comment: str
    syn_number: str
    syn_func: str


LIGHT = Theme(
    dark=False, bg="#ffffff", surface="#f4f5f8", surface2="#e9ebf1", border="#d9dce4", text="#1d1f24",
    muted="#6a7080", accent="#4f5bd5", accent_text="#ffffff", user_bg="#eef0fd", error_bg="#fdecec",
    error_text="#a42323", ok_text="#1d7a3a", added_bg="#e4f6e8", removed_bg="#fde7e7", changed_bg="#fff5da",
    code_bg="#f6f7f9", syn_keyword="#7a3db8", syn_string="#1d7a3a", syn_comment="#8a8f99",
    syn_number="#b35c00", syn_func="#1f5fbf",
)
DARK = Theme(
    dark=True, bg="#1c1d22", surface="#25262d", surface2="#2e3038", border="#3a3c46", text="#e7e8ec",
    muted="#9a9fae", accent="#7c87ff", accent_text="#0f1020", user_bg="#2c2f45", error_bg="#3d2326",
    error_text="#ff9b9b", ok_text="#7fdc98", added_bg="#1f3a27", removed_bg="#452427", changed_bg="#3d3520",
    code_bg="#17181c", syn_keyword="#c792ea", syn_string="#a5d68a", syn_comment="#7d8290",
    syn_number="#f1a15f", syn_func="#82aaff",
)


def is_dark(*, scheme_hint: bool = True) -> bool:
    """Whether the desktop is dark: its colour scheme, else its palette's window colour.

    ``scheme_hint=False`` looks at the palette only: the first look at the colour
    scheme builds PySide6's whole ``Qt`` namespace (~40 ms of CPU), which the early
    tray icon does without (the desktop looks again once it exists).
    """
    app = QGuiApplication.instance()
    if app is None:
        return False
    if not scheme_hint:
        return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128
    from .qt import Qt

    scheme = QGuiApplication.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Dark:
        return True
    if scheme == Qt.ColorScheme.Light:
        return False
    window = QGuiApplication.palette().color(QPalette.ColorRole.Window)
    return window.lightness() < 128


def current(*, scheme_hint: bool = True) -> Theme:
    return DARK if is_dark(scheme_hint=scheme_hint) else LIGHT


def mono_font(point_delta: float = 0) -> QFont:
    f = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    if point_delta and f.pointSizeF() > 0:
        f.setPointSizeF(f.pointSizeF() + point_delta)
    return f


def apply_palette(theme: Theme) -> None:
    """Give the whole app the theme's colours (Fusion keeps them consistent everywhere)."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    if app.style().name().lower() not in ("fusion", "macos", "windows11", "windowsvista", "breeze"):
        app.setStyle("Fusion")
    pal = app.palette()
    roles = {
        QPalette.ColorRole.Window: theme.bg,
        QPalette.ColorRole.Base: theme.bg,
        QPalette.ColorRole.AlternateBase: theme.surface,
        QPalette.ColorRole.Button: theme.surface,
        QPalette.ColorRole.Text: theme.text,
        QPalette.ColorRole.WindowText: theme.text,
        QPalette.ColorRole.ButtonText: theme.text,
        QPalette.ColorRole.Highlight: theme.accent,
        QPalette.ColorRole.HighlightedText: theme.accent_text,
        QPalette.ColorRole.PlaceholderText: theme.muted,
        QPalette.ColorRole.ToolTipBase: theme.surface2,
        QPalette.ColorRole.ToolTipText: theme.text,
        QPalette.ColorRole.Link: theme.accent,
        QPalette.ColorRole.Mid: theme.border,
    }
    for role, colour in roles.items():
        pal.setColor(role, QColor(colour))
    pal.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor(theme.muted))
    pal.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor(theme.muted))
    app.setPalette(pal)
    app.setStyleSheet(app_stylesheet(theme))


def app_stylesheet(t: Theme) -> str:
    return f"""
QToolTip {{ color: {t.text}; background: {t.surface2}; border: 1px solid {t.border}; padding: 4px 6px; }}
QPushButton {{ padding: 5px 14px; border-radius: 6px; border: 1px solid {t.border}; background: {t.surface}; }}
QPushButton:hover {{ background: {t.surface2}; }}
QPushButton:disabled {{ color: {t.muted}; }}
QPushButton[primary="true"] {{ background: {t.accent}; color: {t.accent_text}; border-color: {t.accent}; font-weight: 600; }}
QPushButton[primary="true"]:disabled {{ background: {t.surface2}; color: {t.muted}; border-color: {t.border}; }}
QPushButton[danger="true"] {{ color: {t.error_text}; }}
QToolButton {{ border: none; border-radius: 6px; padding: 4px 6px; color: {t.muted}; }}
QToolButton:hover {{ background: {t.surface2}; color: {t.text}; }}
QToolButton:checked {{ background: {t.user_bg}; color: {t.accent}; }}
QLineEdit, QPlainTextEdit {{
    border: 1px solid {t.border}; border-radius: 6px; padding: 4px 6px; background: {t.bg};
    selection-background-color: {t.accent}; selection-color: {t.accent_text};
}}
QLineEdit:focus, QPlainTextEdit:focus {{ border-color: {t.accent}; }}
QLineEdit:disabled {{ color: {t.muted}; background: {t.surface}; }}
QListWidget, QTreeWidget {{ border: 1px solid {t.border}; border-radius: 8px; background: {t.bg}; padding: 2px; }}
QListWidget::item, QTreeWidget::item {{ padding: 6px 6px; border-radius: 6px; }}
QListWidget::item:selected, QTreeWidget::item:selected {{ background: {t.user_bg}; color: {t.text}; }}
QHeaderView::section {{ background: {t.surface}; color: {t.muted}; border: none; border-bottom: 1px solid {t.border};
    padding: 5px 6px; font-weight: 600; }}
QLabel[muted="true"] {{ color: {t.muted}; }}
QLabel[heading="true"] {{ font-size: 15pt; font-weight: 600; }}
QLabel[subheading="true"] {{ font-weight: 600; color: {t.text}; }}
QFrame[card="true"] {{ background: {t.surface}; border: 1px solid {t.border}; border-radius: 10px; }}
QFrame[banner="info"] {{ background: {t.user_bg}; border: 1px solid {t.border}; border-radius: 8px; }}
QFrame[banner="failure"] {{ background: {t.error_bg}; border: 1px solid {t.error_text}; border-radius: 8px; }}
QLabel[warning="true"] {{ background: {t.error_bg}; color: {t.error_text}; border-radius: 6px; padding: 8px 10px; }}
QLabel[ok="true"] {{ color: {t.ok_text}; }}
QLabel[error="true"] {{ color: {t.error_text}; }}
QSplitter::handle {{ background: {t.border}; }}
QScrollArea {{ border: none; }}
"""
