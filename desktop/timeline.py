"""The memory timeline: fact count over revisions, drops in red; click a point to pick its revision.

Drawn by :mod:`.charts` (the renderer `memtray eval retention --plot` uses too), with
the count axis from zero.

Counts are exact relative to the newest revision: the browser counts the facts
in HEAD's MEMORY.md (on the worker) and walks back with each revision's
``added``/``removed`` (:func:`fact_counts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import charts
from .qt import (
    QColor,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPointF,
    QSize,
    Qt,
    QWidget,
    Signal,
)

#: how far (pixels) from a point a click still picks it
HIT_RADIUS = 12.0


@dataclass(frozen=True)
class Point:
    rev: str
    facts: int
    removed: int


def fact_counts(revisions: Sequence[Any], head_facts: int) -> list[Point]:
    """Oldest first: one point per revision (``revisions`` is newest first, as ``memory.revisions`` gives)."""
    out: list[Point] = []
    count = head_facts
    for r in revisions:
        out.append(Point(r.rev, count, r.removed))
        count = count - r.added + r.removed
    out.reverse()
    return out


class TimelineView(QWidget):
    """Paints fact count per revision; emits ``revision_clicked(sha)`` for a click near a point."""

    revision_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.points: list[Point] = []
        self.current: str | None = None
        self.setMinimumHeight(160)
        self.setMouseTracking(False)

    def sizeHint(self) -> QSize:
        return QSize(480, 220)

    def set_points(self, points: list[Point]) -> None:
        self.points = list(points)
        self.update()

    def set_current(self, rev: str | None) -> None:
        self.current = rev
        self.update()

    # --- the chart ---------------------------------------------------------------------

    def chart(self) -> charts.Chart:
        pal = self.palette()
        lo = min((p.facts for p in self.points), default=0)
        hi = max((p.facts for p in self.points), default=0)
        return charts.Chart(
            series=[charts.Series("facts", [p.facts for p in self.points],
                                  pal.color(pal.ColorRole.Highlight).name(),
                                  marked=[p.removed > 0 for p in self.points])],
            title=f"{hi} facts" if hi == lo else f"{lo}–{hi} facts",
        )

    def point_pos(self, i: int) -> QPointF:
        f = charts.frame(self.chart(), self.width(), self.height())
        return f.point(i, self.points[i].facts)

    def hit(self, pos: QPointF) -> int | None:
        best, best_d = None, HIT_RADIUS
        for i in range(len(self.points)):
            p = self.point_pos(i)
            d = ((p.x() - pos.x()) ** 2 + (p.y() - pos.y()) ** 2) ** 0.5
            if d <= best_d:
                best, best_d = i, d
        return best

    # --- events ------------------------------------------------------------------------

    def mousePressEvent(self, event: QMouseEvent) -> None:
        i = self.hit(event.position())
        if i is None or event.button() != Qt.MouseButton.LeftButton:
            super().mousePressEvent(event)
            return
        self.current = self.points[i].rev
        self.update()
        self.revision_clicked.emit(self.points[i].rev)

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        pal = self.palette()
        fg = pal.color(pal.ColorRole.WindowText)
        try:
            if not self.points:
                painter.setPen(fg)
                painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "No revisions yet")
                return
            current = next((i for i, p in enumerate(self.points) if p.rev == self.current), None)
            grid = QColor(fg)
            grid.setAlphaF(0.15)
            charts.draw(painter, self.chart(), self.width(), self.height(), ink=fg, grid=grid, current=current)
        finally:
            painter.end()


__all__ = ["Point", "TimelineView", "fact_counts"]
