"""desktop/charts.py: one renderer for the Timeline and the retention PNG; counts start at zero."""

from __future__ import annotations

from typing import Any

import pytest
from memtray.desktop import charts
from memtray.desktop.qt import QColor, QImage
from memtray.desktop.timeline import Point, TimelineView

pytestmark = pytest.mark.gui


def test_the_count_axis_starts_at_zero() -> None:
    chart = charts.Chart(series=[charts.Series("facts", [20, 30, 20], charts.BLUE)])
    f = charts.frame(chart, 400, 200)
    assert f.ticks[0] == 0 and f.ymax == 50 and f.y(0) == f.plot.bottom() and f.y(50) == f.plot.top()
    above = [f.plot.bottom() - f.y(v) for v in (20, 30)]
    assert above[1] / above[0] == pytest.approx(1.5)  # heights are proportional to the counts
    assert [charts.nice_max(v) for v in (0, 3, 7, 19, 23, 49, 101, 2400)] == [5, 5, 10, 20, 25, 50, 200, 2500]


def test_timeline_points_are_drawn_from_zero(qtbot: Any) -> None:
    tl = TimelineView()
    qtbot.addWidget(tl)
    tl.resize(480, 220)
    tl.set_points([Point("a", 2, 0), Point("b", 3, 0), Point("c", 2, 1)])
    f = charts.frame(tl.chart(), tl.width(), tl.height())
    ys = [tl.point_pos(i).y() for i in range(3)]
    assert ys[0] == ys[2] and ys[1] < ys[0]
    assert (f.plot.bottom() - ys[1]) / (f.plot.bottom() - ys[0]) == pytest.approx(1.5)  # 3 facts vs 2, from zero
    assert tl.hit(tl.point_pos(1)) == 1
    image = tl.grab().toImage()
    red = QColor(charts.MARK).getRgb()[:3]
    assert any(image.pixelColor(x, y).getRgb()[:3] == red  # the revision that removed a fact is marked
               for x in range(image.width()) for y in range(image.height()))


def test_png_is_a_headless_qimage_of_the_requested_size() -> None:
    report = {"steps": [{"index": i, "facts": 10 + i, "silent": i % 2, "lost": 0, "survival": 1.0} for i in range(1, 6)],
              "survival": 1.0, "corpus": "synthetic-v1", "model": "openai/x", "policy": "keep"}
    data = charts.png(charts.retention_chart(report), 640, 360)
    img = QImage.fromData(data, "PNG")
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and (img.width(), img.height()) == (640, 360)
    assert data == charts.png(charts.retention_chart(report), 640, 360)  # the same report, the same bytes
