"""The settings cards' building blocks: a section's form, a word-wrapped label, a status line.

One place for the spacing and alignment every card's form shares (the Model form,
Recall, Sync), so the fields line up down the Settings page.
"""

from __future__ import annotations

from typing import Any

from memtray.core.base.errors import MemtrayError

from .qt import QFormLayout, QLabel, Qt, QVBoxLayout, QWidget


def section_form(owner: QWidget) -> QFormLayout:
    """``owner``'s form layout, spaced and aligned like every settings card's."""
    f = QFormLayout(owner)
    f.setContentsMargins(0, 0, 0, 0)
    f.setHorizontalSpacing(14)
    f.setVerticalSpacing(10)
    f.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    f.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return f


def label(text: str, **props: Any) -> QLabel:
    """A word-wrapped label with style properties (heading, muted, warning, ...)."""
    lab = QLabel(text)
    lab.setWordWrap(True)
    for k, v in props.items():
        lab.setProperty(k, v)
    return lab


LABEL_WIDTH = 150


def align_labels(form: QFormLayout) -> None:
    """Same label column width in every card, so the fields line up down the page."""
    for row in range(form.rowCount()):
        item = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        w = item.widget() if item is not None else None
        if w is not None:
            w.setFixedWidth(LABEL_WIDTH)


def set_state(label: QLabel, text: str, kind: str = "") -> None:
    """Show ``text`` in ``label`` styled as ``kind``: "ok", "error", "muted" or plain."""
    label.setText(text)
    for prop in ("ok", "error", "muted"):
        label.setProperty(prop, prop == kind)
    label.style().unpolish(label)
    label.style().polish(label)


def error_text(exc: BaseException, sep: str = "\n") -> str:
    """An error in words with its hint (core's errors carry one) after ``sep``, never a traceback."""
    hint = exc.hint if isinstance(exc, MemtrayError) else ""
    return f"{exc}{sep}{hint}" if hint else str(exc)


def ask(parent: QWidget, title: str, text: str) -> bool:
    """A Yes/Cancel question (Cancel the default): whether to go on."""
    from .qt import QMessageBox

    box = QMessageBox(QMessageBox.Icon.Question, title, text,
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, parent)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    return box.exec() == QMessageBox.StandardButton.Yes


def clear_column(col: QVBoxLayout) -> None:
    """Remove the rows of a list column, keeping its closing stretch (the last item)."""
    while col.count() > 1:
        item = col.takeAt(0)
        w = item.widget() if item is not None else None
        if w is not None:
            w.deleteLater()
