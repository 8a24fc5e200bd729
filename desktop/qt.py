"""The one door to Qt: every desktop module imports Qt names from here.

Keeping the binding behind one module (qutebrowser style) means a binding
switch, a version quirk or a missing module is handled in one place. Only the
names the app uses are re-exported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6 import __version__ as PYSIDE_VERSION
from PySide6.QtCore import qVersion

if TYPE_CHECKING:
    from PySide6.QtCore import (
        QAbstractNativeEventFilter,
        QBuffer,
        QByteArray,
        QCoreApplication,
        QDate,
        QDateTime,
        QEvent,
        QEventLoop,
        QIODevice,
        QLibraryInfo,
        QMetaObject,
        QObject,
        QPoint,
        QPointF,
        QRect,
        QRectF,
        QRunnable,
        QSettings,
        QSignalBlocker,
        QSize,
        QSocketNotifier,
        Qt,
        QThread,
        QThreadPool,
        QTime,
        QTimer,
        QUrl,
        Signal,
        Slot,
        qVersion,
    )
    from PySide6.QtGui import (
        QAction,
        QBrush,
        QClipboard,
        QCloseEvent,
        QColor,
        QCursor,
        QDesktopServices,
        QFont,
        QFontDatabase,
        QFontMetrics,
        QGuiApplication,
        QHideEvent,
        QIcon,
        QImage,
        QKeyEvent,
        QKeySequence,
        QMouseEvent,
        QPainter,
        QPainterPath,
        QPaintEvent,
        QPalette,
        QPen,
        QPixmap,
        QResizeEvent,
        QShortcut,
        QShowEvent,
        QTextBlockFormat,
        QTextCharFormat,
        QTextCursor,
        QTextDocument,
        QTextDocumentFragment,
        QTextFrameFormat,
        QTextLength,
        QTextOption,
        QTextTableFormat,
        QWindow,
    )
    from PySide6.QtNetwork import QLocalServer, QLocalSocket
    from PySide6.QtWidgets import (
        QAbstractItemView,
        QAbstractScrollArea,
        QAbstractSpinBox,
        QApplication,
        QButtonGroup,
        QCheckBox,
        QComboBox,
        QDateTimeEdit,
        QDialog,
        QDialogButtonBox,
        QDoubleSpinBox,
        QFileDialog,
        QFormLayout,
        QFrame,
        QGridLayout,
        QHBoxLayout,
        QHeaderView,
        QInputDialog,
        QKeySequenceEdit,
        QLabel,
        QLineEdit,
        QListWidget,
        QListWidgetItem,
        QMainWindow,
        QMenu,
        QMessageBox,
        QPlainTextEdit,
        QProgressBar,
        QPushButton,
        QScrollArea,
        QSizePolicy,
        QSpinBox,
        QSplitter,
        QStackedWidget,
        QStyle,
        QSystemTrayIcon,
        QTabWidget,
        QTextBrowser,
        QTextEdit,
        QToolButton,
        QTreeWidget,
        QTreeWidgetItem,
        QVBoxLayout,
        QWidget,
    )

#: where each name lives. Names are imported when first asked for (``from .qt import
#: QLabel`` asks), not all at once: PySide6 builds a class's Python type on first
#: access, and building all of them cost the start ~0.1-0.3 s before the tray icon showed.
_MODULES: dict[str, tuple[str, ...]] = {
    "QtCore": (
        "QAbstractNativeEventFilter", "QBuffer", "QByteArray", "QCoreApplication", "QDate", "QDateTime", "QEvent",
        "QEventLoop", "QIODevice", "QLibraryInfo", "QMetaObject", "QObject", "QPoint", "QPointF", "QRect", "QRectF",
        "QRunnable", "QSettings", "QSignalBlocker", "QSize", "QSocketNotifier", "Qt", "QThread", "QThreadPool",
        "QTime", "QTimer", "QUrl", "Signal", "Slot", "qVersion",
    ),
    "QtGui": (
        "QAction", "QBrush", "QClipboard", "QCloseEvent", "QColor", "QCursor", "QDesktopServices", "QFont",
        "QFontDatabase", "QFontMetrics", "QGuiApplication", "QHideEvent", "QIcon", "QImage", "QKeyEvent",
        "QKeySequence", "QMouseEvent", "QPainter", "QPainterPath", "QPaintEvent", "QPalette", "QPen", "QPixmap",
        "QResizeEvent", "QShortcut", "QShowEvent", "QTextBlockFormat", "QTextCharFormat", "QTextCursor",
        "QTextDocument", "QTextDocumentFragment", "QTextFrameFormat", "QTextLength", "QTextOption",
        "QTextTableFormat", "QWindow",
    ),
    "QtWidgets": (
        "QAbstractItemView", "QAbstractScrollArea", "QAbstractSpinBox", "QApplication", "QButtonGroup", "QCheckBox", "QComboBox", "QDateTimeEdit", "QDialog",
        "QDialogButtonBox", "QDoubleSpinBox", "QFileDialog", "QFormLayout", "QFrame", "QGridLayout", "QHBoxLayout", "QHeaderView",
        "QInputDialog", "QKeySequenceEdit", "QLabel", "QLineEdit", "QListWidget", "QListWidgetItem", "QMainWindow", "QMenu",
        "QMessageBox", "QPlainTextEdit", "QProgressBar", "QPushButton", "QScrollArea", "QSizePolicy", "QSpinBox",
        "QSplitter", "QStackedWidget", "QStyle", "QSystemTrayIcon", "QTabWidget", "QTextBrowser", "QTextEdit",
        "QToolButton", "QTreeWidget", "QTreeWidgetItem", "QVBoxLayout", "QWidget",
    ),
    "QtNetwork": ("QLocalServer", "QLocalSocket"),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"PySide6.{module}"), name)
    globals()[name] = value
    return value


QT_VERSION = qVersion()


def _mend_emit() -> bool:
    """PySide6 6.12.0's ``SignalInstance.emit`` returns ``True`` without a reference of its
    own: every emit from Python takes one from ``True``'s count, and after enough of them
    (a long chat's streamed deltas) the interpreter aborts ("bool_dealloc: deallocating True
    or False"). When one probe emit shows the loss, each emit gives its result the reference
    back. Whether it was needed (tests/gui/test_sync_settings.py checks the count holds)."""
    import ctypes
    import sys

    from PySide6.QtCore import QObject, Signal, SignalInstance

    class Probe(QObject):
        ping = Signal()

    probe = Probe()
    before = sys.getrefcount(True)
    probe.ping.emit()  # its result (True) is dropped here, taking one more reference than it had
    lost = sys.getrefcount(True) < before
    if not lost:
        return False
    incref = ctypes.pythonapi.Py_IncRef
    incref.argtypes = [ctypes.py_object]
    incref.restype = None
    incref(True)  # the probe's
    emit = SignalInstance.emit

    def mended(self: Any, *args: Any) -> Any:
        out = emit(self, *args)
        if isinstance(out, bool):
            incref(out)  # one too many is harmless for the singletons; one too few aborts
        return out

    SignalInstance.emit = mended  # type: ignore[method-assign]
    return True


EMIT_MENDED = _mend_emit()


def dbus():  # type: ignore[no-untyped-def]
    """QtDBus, imported on first use (it is not needed to show the tray)."""
    from PySide6 import QtDBus

    return QtDBus


__all__ = [
    "PYSIDE_VERSION",
    "QT_VERSION",
    "QAbstractItemView",
    "QAbstractNativeEventFilter",
    "QAbstractScrollArea",
    "QAbstractSpinBox",
    "QAction",
    "QApplication",
    "QBrush",
    "QBuffer",
    "QButtonGroup",
    "QByteArray",
    "QCheckBox",
    "QClipboard",
    "QCloseEvent",
    "QColor",
    "QComboBox",
    "QCoreApplication",
    "QCursor",
    "QDate",
    "QDateTime",
    "QDateTimeEdit",
    "QDesktopServices",
    "QDialog",
    "QDialogButtonBox",
    "QDoubleSpinBox",
    "QEvent",
    "QEventLoop",
    "QFileDialog",
    "QFont",
    "QFontDatabase",
    "QFontMetrics",
    "QFormLayout",
    "QFrame",
    "QGridLayout",
    "QGuiApplication",
    "QHBoxLayout",
    "QHeaderView",
    "QHideEvent",
    "QIODevice",
    "QIcon",
    "QImage",
    "QInputDialog",
    "QKeyEvent",
    "QKeySequence",
    "QKeySequenceEdit",
    "QLabel",
    "QLibraryInfo",
    "QLineEdit",
    "QListWidget",
    "QListWidgetItem",
    "QLocalServer",
    "QLocalSocket",
    "QMainWindow",
    "QMenu",
    "QMessageBox",
    "QMetaObject",
    "QMouseEvent",
    "QObject",
    "QPaintEvent",
    "QPainter",
    "QPainterPath",
    "QPalette",
    "QPen",
    "QPixmap",
    "QPlainTextEdit",
    "QPoint",
    "QPointF",
    "QProgressBar",
    "QPushButton",
    "QRect",
    "QRectF",
    "QResizeEvent",
    "QRunnable",
    "QScrollArea",
    "QSettings",
    "QShortcut",
    "QShowEvent",
    "QSignalBlocker",
    "QSize",
    "QSizePolicy",
    "QSocketNotifier",
    "QSpinBox",
    "QSplitter",
    "QStackedWidget",
    "QStyle",
    "QSystemTrayIcon",
    "QTabWidget",
    "QTextBlockFormat",
    "QTextBrowser",
    "QTextCharFormat",
    "QTextCursor",
    "QTextDocument",
    "QTextDocumentFragment",
    "QTextEdit",
    "QTextFrameFormat",
    "QTextLength",
    "QTextOption",
    "QTextTableFormat",
    "QThread",
    "QThreadPool",
    "QTime",
    "QTimer",
    "QToolButton",
    "QTreeWidget",
    "QTreeWidgetItem",
    "QUrl",
    "QVBoxLayout",
    "QWidget",
    "QWindow",
    "Qt",
    "Signal",
    "Slot",
    "dbus",
]
