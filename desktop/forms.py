"""The settings cards' building blocks: a section's form and a word-wrapped label.

One place for the spacing and alignment every card's form shares (the Model form,
Recall, Sync), so the fields line up down the Settings page.
"""

from __future__ import annotations

from typing import Any

from .qt import QFormLayout, QLabel, Qt, QWidget


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
