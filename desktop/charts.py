"""The one chart renderer: line and bar charts drawn with QPainter.

:func:`draw` paints a :class:`Chart` on any paint device: the memory browser's
Timeline widget paints on itself, and :func:`png` paints on a QImage, which works
headless (no display, no window), for ``memtray eval retention --plot``. The count
axis always starts at zero, so the height of a point is its size, not its distance
from the smallest value; an optional right axis is a percentage (0-100 %).

:func:`frame` is the geometry alone (where a value lands), so a widget can hit-test
clicks against exactly the points it painted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from memtray.core.base.fsutil import atomic_write

from .qt import (
    QBuffer,
    QColor,
    QFont,
    QGuiApplication,
    QImage,
    QIODevice,
    QPainter,
    QPen,
    QPointF,
    QRectF,
    Qt,
)

#: points of a series drawn in this colour are marked (e.g. a revision that removed facts)
MARK = "#dc322f"
INK = "#282c34"
MUTED = "#64686f"
GRID = "#e1e4ea"
WHITE = "#ffffff"
BLUE = "#3465a4"
ORANGE = "#e69138"
RED = "#cc3333"
GREEN = "#388e3c"

#: the size of `memtray eval retention --plot` images
RETENTION_SIZE = (960, 540)


@dataclass(frozen=True)
class Series:
    label: str
    values: Sequence[float]
    color: str
    kind: str = "line"  # line | bar
    axis: str = "left"  # left (counts, from zero) | right (percent)
    marked: Sequence[bool] = ()  # per point: drawn in MARK


@dataclass(frozen=True)
class Chart:
    series: Sequence[Series]
    xlabels: Sequence[str] = ()
    title: str = ""
    subtitle: str = ""
    xtitle: str = ""
    legend: bool = False
    #: left, top, right, bottom (pixels around the plot area: axis labels, title, legend)
    margins: tuple[int, int, int, int] = (44, 26, 14, 14)
    point_radius: float = 4.0
    line_width: float = 2.0


@dataclass(frozen=True)
class Frame:
    """Where values land: slot ``i`` of ``n`` across the plot, 0..``ymax`` up the left axis."""

    plot: QRectF
    n: int
    ymax: float
    ticks: list[float] = field(default_factory=list)

    def x(self, i: int) -> float:
        slot = self.plot.width() / max(1, self.n)
        return self.plot.left() + slot * (i + 0.5)

    def y(self, value: float, axis: str = "left") -> float:
        frac = value / 100.0 if axis == "right" else (value / self.ymax if self.ymax else 0.0)
        frac = max(0.0, min(1.0, frac))
        return self.plot.bottom() - self.plot.height() * frac

    def point(self, i: int, value: float, axis: str = "left") -> QPointF:
        return QPointF(self.x(i), self.y(value, axis))


def nice_max(value: float) -> float:
    """The top of a count axis: the next of 1, 2, 2.5, 5 x 10^k at or above ``value`` (5 at least)."""
    if value <= 5:
        return 5.0
    step = 1.0
    while True:
        for m in (1.0, 2.0, 2.5, 5.0):
            if value <= m * step * 10:
                return m * step * 10
        step *= 10


def frame(chart: Chart, width: float, height: float) -> Frame:
    left, top, right, bottom = chart.margins
    plot = QRectF(left, top, max(1.0, width - left - right), max(1.0, height - top - bottom))
    counts = [v for s in chart.series if s.axis == "left" for v in s.values]
    n = max([len(s.values) for s in chart.series] + [len(chart.xlabels), 1])
    ymax = nice_max(max(counts, default=0.0))
    return Frame(plot, n, ymax, [ymax * i / 5 for i in range(6)])


def _num(v: float) -> str:
    return f"{v:g}" if v != int(v) else str(int(v))


def draw(painter: QPainter, chart: Chart, width: float, height: float, *, ink: QColor | None = None,
         grid: QColor | None = None, background: QColor | None = None, current: int | None = None) -> Frame:
    """Paint ``chart`` in the rectangle (0, 0, width, height); ``current`` is a point drawn larger."""
    ink = ink or QColor(INK)
    grid = grid or QColor(GRID)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    if background is not None:
        painter.fillRect(QRectF(0, 0, width, height), background)
    f = frame(chart, width, height)
    plot = f.plot
    base = QFont(painter.font())
    metrics = painter.fontMetrics()
    right_axis = any(s.axis == "right" for s in chart.series)
    # title and subtitle above the plot
    if chart.title:
        title = QFont(base)
        title.setBold(True)
        if chart.subtitle:
            title.setPointSizeF(base.pointSizeF() * 1.4)
        painter.setFont(title)
        painter.setPen(ink)
        painter.drawText(QRectF(plot.left(), 4, plot.width(), plot.top() * 0.5),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, chart.title)
        painter.setFont(base)
    if chart.subtitle:
        painter.setPen(QColor(MUTED))
        painter.drawText(QRectF(plot.left(), plot.top() * 0.5, plot.width(), plot.top() * 0.4),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, chart.subtitle)
    # grid, ticks (counts on the left from zero; percent on the right) and axes
    h = metrics.height()
    for i, tick in enumerate(f.ticks):
        y = f.y(tick)
        painter.setPen(QPen(grid, 1))
        painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
        painter.setPen(ink)
        painter.drawText(QRectF(0, y - h / 2, plot.left() - 6, h),
                         Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, _num(tick))
        if right_axis:
            painter.setPen(QColor(GREEN))
            painter.drawText(QRectF(plot.right() + 6, y - h / 2, 60, h),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, f"{20 * i}%")
    painter.setPen(QPen(ink, 1.5))
    painter.drawLine(plot.bottomLeft(), plot.topLeft())
    painter.drawLine(plot.bottomLeft(), plot.bottomRight())
    if right_axis:
        painter.drawLine(plot.bottomRight(), plot.topRight())
    # x labels (thinned to about 16) and the x title
    if chart.xlabels:
        every = max(1, round(len(chart.xlabels) / 16))
        painter.setPen(ink)
        for i, lab in enumerate(chart.xlabels):
            if i % every == 0 or i == len(chart.xlabels) - 1:
                painter.drawText(QRectF(f.x(i) - 40, plot.bottom() + 4, 80, h),
                                 Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, lab)
    if chart.xtitle:
        painter.drawText(QRectF(plot.left(), plot.bottom() + 4 + h, plot.width(), h),
                         Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, chart.xtitle)
    # bars side by side in each slot, then lines with their points on top
    bars = [s for s in chart.series if s.kind == "bar"]
    slot = plot.width() / max(1, f.n)
    bw = max(3.0, min(22.0, slot / (len(bars) + 1)))
    painter.setPen(Qt.PenStyle.NoPen)
    for b, s in enumerate(bars):
        off = (b - (len(bars) - 1) / 2) * (bw + 2)
        painter.setBrush(QColor(s.color))
        for i, v in enumerate(s.values):
            if v > 0:
                top = f.y(v, s.axis)
                painter.drawRect(QRectF(f.x(i) + off - bw / 2, top, bw, plot.bottom() - top))
    for s in chart.series:
        if s.kind != "line":
            continue
        pts = [f.point(i, v, s.axis) for i, v in enumerate(s.values)]
        colour = QColor(s.color)
        painter.setPen(QPen(colour, chart.line_width))
        for a, b2 in pairwise(pts):
            painter.drawLine(a, b2)
        for i, xy in enumerate(pts):
            c = QColor(MARK) if i < len(s.marked) and s.marked[i] else colour
            painter.setPen(QPen(c, 1))
            painter.setBrush(c)
            r = chart.point_radius * (1.5 if i == current else 1.0)
            painter.drawEllipse(xy, r, r)
    # the legend along the bottom
    if chart.legend:
        x, y = plot.left(), height - h - 10
        for s in chart.series:
            colour = QColor(s.color)
            if s.kind == "bar":
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(colour)
                painter.drawRect(QRectF(x, y + h / 2 - 6, 16, 12))
            else:
                painter.setPen(QPen(colour, 3))
                painter.drawLine(QPointF(x, y + h / 2), QPointF(x + 16, y + h / 2))
            label = s.label + (" (%)" if s.axis == "right" else "")
            painter.setPen(ink)
            painter.drawText(QPointF(x + 22, y + metrics.ascent()), label)
            x += 22 + metrics.horizontalAdvance(label) + 24
    painter.setBrush(Qt.BrushStyle.NoBrush)
    return f


_app: list[Any] = []


def _gui() -> None:
    """Painting text needs a QGuiApplication: make an offscreen one when none runs (the CLI)."""
    if QGuiApplication.instance() is None:
        _app.append(QGuiApplication(["memtray", "-platform", "offscreen"]))


def png(chart: Chart, width: int, height: int) -> bytes:
    """``chart`` as PNG bytes, drawn on a QImage (no display needed)."""
    _gui()
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor(WHITE))
    painter = QPainter(image)
    try:
        draw(painter, chart, width, height)
    finally:
        painter.end()
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    # PySide6 takes the format as str at run time; its stubs say bytes
    if not image.save(buf, "PNG"):  # type: ignore[call-overload]
        raise RuntimeError("Qt could not encode the chart as PNG")
    return bytes(buf.data().data())


def retention_chart(report: dict[str, Any]) -> Chart:
    """The chart of a retention report (``Score.to_json()``): facts, drops, losses, survival."""
    steps = report["steps"]
    guard = "guard on" if report.get("guard", True) else "guard OFF"
    return Chart(
        series=[
            Series("facts in memory", [s["facts"] for s in steps], BLUE),
            Series("silent drops", [s["silent"] for s in steps], ORANGE, "bar"),
            Series("lost", [s["lost"] for s in steps], RED, "bar"),
            Series("survival", [100 * s["survival"] for s in steps], GREEN, axis="right"),
        ],
        xlabels=[str(s["index"]) for s in steps],
        title=f"memtray retention: survival@{len(steps)} {100 * report['survival']:.1f}%",
        subtitle=(f"corpus {report.get('corpus', '?')}, model {report.get('model', '?')}, "
                  f"policy {report.get('policy', '?')}, {guard}"),
        xtitle="consolidation",
        legend=True,
        margins=(80, 84, 80, 96),
        point_radius=4.0,
        line_width=3.0,
    )


def write_retention_png(report: dict[str, Any], path: Path) -> None:
    width, height = RETENTION_SIZE
    atomic_write(path, png(retention_chart(report), width, height))


__all__ = ["Chart", "Frame", "Series", "draw", "frame", "nice_max", "png", "retention_chart",
           "write_retention_png"]
