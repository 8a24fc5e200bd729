"""The app's icons (SVG in resources/icons), light/dark aware for the tray."""

from __future__ import annotations

from pathlib import Path

from .qt import QIcon


def icon_dir() -> Path:
    import memtray.resources as res

    return Path(res.__file__).resolve().parent / "icons"


def path(name: str) -> Path:
    return icon_dir() / name


def app_icon() -> QIcon:
    icon = QIcon.fromTheme("memtray")
    return icon if not icon.isNull() else QIcon(str(path("memtray.svg")))


def tray_icon(dark_panel: bool) -> QIcon:
    """A light glyph on dark panels, a dark glyph on light ones."""
    return QIcon(str(path("memtray-tray-dark.svg" if dark_panel else "memtray-tray-light.svg")))
