"""The mouse wheel scrolls pages, not the settings under the pointer.

A combo box or spin box in a scrolled page takes the wheel by default: scrolling
Settings over "When a fact is dropped" switched the memory policy with no sign of
it. :func:`guard_wheel` makes such widgets take the wheel only once they have the
focus (a click or Tab); until then the wheel scrolls the page around them.
"""

from __future__ import annotations

from .qt import (
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QEvent,
    QObject,
    Qt,
    QWidget,
)


def _scroll_area(w: QWidget) -> QAbstractScrollArea | None:
    parent = w.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea):
            return parent
        parent = parent.parentWidget()
    return None


class WheelGuard(QObject):
    """Event filter: a wheel over an unfocused guarded widget scrolls the page it is in."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget) or watched.hasFocus():
            return False
        area = _scroll_area(watched)
        if area is None:
            event.ignore()  # not accepted: Qt offers a real wheel event to the parents
            return True
        # handed to the page's scroll area directly: Qt propagates only spontaneous wheel
        # events, and this way a real and a synthetic one scroll the same
        QApplication.sendEvent(area.viewport(), event)
        return True


def guard_wheel(root: QWidget) -> None:
    """Guard every combo box and spin box under ``root`` (call again after adding more)."""
    guard = root.findChild(WheelGuard, "wheelGuard")
    if guard is None:
        guard = WheelGuard(root)
        guard.setObjectName("wheelGuard")
    for w in [*root.findChildren(QComboBox), *root.findChildren(QAbstractSpinBox)]:
        if w.property("wheelGuarded"):
            continue
        w.setProperty("wheelGuarded", True)
        # the wheel must not give focus either, or the first notch would still change the value
        w.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        w.installEventFilter(guard)
