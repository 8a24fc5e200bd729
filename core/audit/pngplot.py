"""A tiny chart renderer that writes PNG files with nothing but zlib.

``memtray eval retention --plot FILE.png`` draws fact count, silent drops,
lost facts and survival over the consolidations. Core must not import Qt and
matplotlib is not a runtime dependency, so this module rasterises lines, bars
and a 5x7 bitmap font (upper case, digits, common punctuation) into an RGB
buffer and encodes it as a PNG (filter 0, one IDAT chunk). Deterministic: the
same report gives the same bytes.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtray.core.base.fsutil import atomic_write

RGB = tuple[int, int, int]

WHITE: RGB = (255, 255, 255)
INK: RGB = (40, 44, 52)
GRID: RGB = (225, 228, 234)
BLUE: RGB = (52, 101, 164)
ORANGE: RGB = (230, 145, 56)
RED: RGB = (204, 51, 51)
GREEN: RGB = (56, 142, 60)

# 5x7 glyphs, one string per row ("#" = ink).
_GLYPHS: dict[str, tuple[str, ...]] = {
    "A": (".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "B": ("####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."),
    "C": (".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."),
    "D": ("####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."),
    "E": ("#####", "#....", "#....", "####.", "#....", "#....", "#####"),
    "F": ("#####", "#....", "#....", "####.", "#....", "#....", "#...."),
    "G": (".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"),
    "H": ("#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "I": (".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "J": ("..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."),
    "K": ("#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"),
    "L": ("#....", "#....", "#....", "#....", "#....", "#....", "#####"),
    "M": ("#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"),
    "N": ("#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"),
    "O": (".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "P": ("####.", "#...#", "#...#", "####.", "#....", "#....", "#...."),
    "Q": (".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"),
    "R": ("####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"),
    "S": (".####", "#....", "#....", ".###.", "....#", "....#", "####."),
    "T": ("#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."),
    "U": ("#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "V": ("#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."),
    "W": ("#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."),
    "X": ("#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"),
    "Y": ("#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."),
    "Z": ("#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"),
    "0": (".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."),
    "1": ("..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "2": (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"),
    "3": ("#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."),
    "4": ("...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."),
    "5": ("#####", "#....", "####.", "....#", "....#", "#...#", ".###."),
    "6": ("..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."),
    "7": ("#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."),
    "8": (".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."),
    "9": (".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."),
    " ": (".....",) * 7,
    ".": (".....", ".....", ".....", ".....", ".....", ".##..", ".##.."),
    ",": (".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."),
    ":": (".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."),
    "-": (".....", ".....", ".....", "#####", ".....", ".....", "....."),
    "_": (".....", ".....", ".....", ".....", ".....", ".....", "#####"),
    "+": (".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."),
    "%": ("##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"),
    "(": ("...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."),
    ")": (".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."),
    "/": (".....", "....#", "...#.", "..#..", ".#...", "#....", "....."),
    "=": (".....", ".....", "#####", ".....", "#####", ".....", "....."),
    "'": ("..#..", "..#..", ".#...", ".....", ".....", ".....", "....."),
    "#": (".#.#.", ".#.#.", "#####", ".#.#.", "#####", ".#.#.", ".#.#."),
    "?": (".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."),
    "!": ("..#..", "..#..", "..#..", "..#..", "..#..", ".....", "..#.."),
    "@": (".###.", "#...#", "#.###", "#.#.#", "#.###", "#....", ".###."),
}
_ALIASES = {"—": "-", "–": "-", "−": "-", "×": "X", "·": "."}
GLYPH_W, GLYPH_H = 5, 7


class Canvas:
    """An RGB raster with the few primitives a chart needs."""

    def __init__(self, width: int, height: int, background: RGB = WHITE) -> None:
        self.width = width
        self.height = height
        self.px = bytearray(bytes(background) * (width * height))

    def set(self, x: int, y: int, color: RGB) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            i = (y * self.width + x) * 3
            self.px[i:i + 3] = bytes(color)

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: RGB) -> None:
        """Fill [x0, x1) x [y0, y1) (clipped)."""
        x0, x1 = max(0, min(x0, x1)), min(self.width, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.height, max(y0, y1))
        if x0 >= x1:
            return
        row = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            i = (y * self.width + x0) * 3
            self.px[i:i + len(row)] = row

    def line(self, x0: int, y0: int, x1: int, y1: int, color: RGB, width: int = 1) -> None:
        """A line (Bresenham), ``width`` pixels thick (square pen)."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        lo = -(width // 2)
        hi = lo + width
        while True:
            self.rect(x0 + lo, y0 + lo, x0 + hi, y0 + hi, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def dot(self, x: int, y: int, radius: int, color: RGB) -> None:
        for yy in range(-radius, radius + 1):
            for xx in range(-radius, radius + 1):
                if xx * xx + yy * yy <= radius * radius + radius:
                    self.set(x + xx, y + yy, color)

    def text(self, x: int, y: int, text: str, color: RGB = INK, scale: int = 2) -> int:
        """Draw ``text`` (upper-cased) with its top-left at (x, y); returns the end x."""
        for ch in text.upper():
            glyph = _GLYPHS.get(_ALIASES.get(ch, ch), _GLYPHS["?"])
            for gy, row in enumerate(glyph):
                for gx, cell in enumerate(row):
                    if cell == "#":
                        self.rect(x + gx * scale, y + gy * scale, x + (gx + 1) * scale, y + (gy + 1) * scale, color)
            x += (GLYPH_W + 1) * scale
        return x

    def png(self) -> bytes:
        raw = b"".join(
            b"\x00" + bytes(self.px[y * self.width * 3:(y + 1) * self.width * 3]) for y in range(self.height)
        )
        return (
            b"\x89PNG\r\n\x1a\n"
            + _chunk(b"IHDR", struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(raw, 9))
            + _chunk(b"IEND", b"")
        )


def text_width(text: str, scale: int = 2) -> int:
    return len(text) * (GLYPH_W + 1) * scale - scale if text else 0


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def read_png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG written here (for tests and checks)."""
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        raise ValueError("not a PNG file")
    w, h = struct.unpack(">II", data[16:24])
    return int(w), int(h)


@dataclass(frozen=True)
class Series:
    label: str
    values: Sequence[float]
    color: RGB
    kind: str  # line | bar
    axis: str = "left"  # left (counts) | right (percent)


def _nice_max(v: float) -> int:
    for m in (5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000):
        if v <= m:
            return m
    return int(v) + 1


def chart(title: str, subtitle: str, xlabels: Sequence[str], series: Sequence[Series],
          width: int = 960, height: int = 540) -> Canvas:
    """A line/bar chart with counts on the left axis and percent on the right."""
    c = Canvas(width, height)
    left, right, top, bottom = 90, 90, 84, 120
    pw, ph = width - left - right, height - top - bottom
    c.text(left, 18, title, INK, 3)
    c.text(left, 52, subtitle, (100, 104, 112), 2)
    counts = [v for s in series if s.axis == "left" for v in s.values]
    ymax = _nice_max(max(counts, default=1) or 1)
    for i in range(6):
        y = top + ph - round(ph * i / 5)
        c.line(left, y, left + pw, y, GRID)
        lab = f"{ymax * i / 5:g}"
        c.text(left - 12 - text_width(lab), y - 7, lab)
        pct = f"{20 * i}%"
        c.text(left + pw + 12, y - 7, pct, GREEN)
    c.line(left, top, left, top + ph, INK, 2)
    c.line(left, top + ph, left + pw, top + ph, INK, 2)
    c.line(left + pw, top, left + pw, top + ph, INK, 2)
    n = max(1, len(xlabels))
    slot = pw / n

    def xc(i: int) -> int:
        return round(left + slot * (i + 0.5))

    def yv(v: float, axis: str) -> int:
        frac = v / 100.0 if axis == "right" else v / ymax
        return round(top + ph - ph * max(0.0, min(1.0, frac)))

    every = max(1, round(n / 16))
    for i, lab in enumerate(xlabels):
        if i % every == 0 or i == n - 1:
            c.text(xc(i) - text_width(lab) // 2, top + ph + 10, lab)
    bars = [s for s in series if s.kind == "bar"]
    bw = max(4, min(22, int(slot / (len(bars) + 1))))
    for b, s in enumerate(bars):
        off = round((b - (len(bars) - 1) / 2) * (bw + 2))
        for i, v in enumerate(s.values):
            if v > 0:
                c.rect(xc(i) + off - bw // 2, yv(v, s.axis), xc(i) + off - bw // 2 + bw, top + ph, s.color)
    for s in series:
        if s.kind != "line":
            continue
        pts = [(xc(i), yv(v, s.axis)) for i, v in enumerate(s.values)]
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            c.line(x0, y0, x1, y1, s.color, 3)
        for x, y in pts:
            c.dot(x, y, 4, s.color)
    c.text(left + pw // 2 - text_width("CONSOLIDATION") // 2, top + ph + 34, "consolidation")
    lx, ly = left, height - 44
    for s in series:
        if s.kind == "bar":
            c.rect(lx, ly, lx + 16, ly + 14, s.color)
        else:
            c.line(lx, ly + 7, lx + 16, ly + 7, s.color, 3)
        lx = c.text(lx + 24, ly, s.label + (" (%)" if s.axis == "right" else "")) + 28
    return c


def retention_chart(report: dict[str, Any]) -> bytes:
    """The PNG of a retention report (``Score.to_json()``)."""
    steps = report["steps"]
    title = f"memtray retention: survival@{len(steps)} {100 * report['survival']:.1f}%"
    guard = "guard on" if report.get("guard", True) else "guard OFF"
    subtitle = (f"corpus {report.get('corpus', '?')}, model {report.get('model', '?')}, "
                f"policy {report.get('policy', '?')}, {guard}")
    series = [
        Series("facts in memory", [s["facts"] for s in steps], BLUE, "line"),
        Series("silent drops", [s["silent"] for s in steps], ORANGE, "bar"),
        Series("lost", [s["lost"] for s in steps], RED, "bar"),
        Series("survival", [100 * s["survival"] for s in steps], GREEN, "line", "right"),
    ]
    return chart(title, subtitle, [str(s["index"]) for s in steps], series).png()


def write_retention_chart(report: dict[str, Any], path: Path) -> None:
    atomic_write(path, retention_chart(report))
