"""A small line-chart writer: panels of time-vs-size series drawn into an RGB PNG.

No plotting library: a PNG is an IHDR chunk, zlib-compressed rows (each led by filter byte 0)
and an IEND chunk. Text uses a 3x5 pixel font, upper case, drawn at twice its size.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from pathlib import Path

from bench.core import Panel

Color = tuple[int, int, int]
_COLORS: tuple[Color, ...] = ((120, 120, 120), (31, 119, 180), (214, 39, 40), (44, 160, 44))
_INK, _GRID, _PAPER = (0, 0, 0), (225, 225, 225), (255, 255, 255)

# Each glyph: five rows of three pixels, one octal digit per row (4 = the left pixel).
_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ .,:-()/=_"
_GLYPHS = ("75557 26227 71747 71317 55711 74717 74757 71122 75757 75717 25755 65656 34443 65556 "
           "74647 74644 34553 55755 72227 11152 55655 44447 57755 65555 25552 65644 25563 65655 "
           "34216 72222 55557 55552 55775 55255 55222 71247 00000 00002 00024 02020 00700 12221 "
           "42224 11244 07070 00007")
_FONT = {char: _GLYPHS[6 * i:6 * i + 5] for i, char in enumerate(_CHARS)}


class Canvas:
    """An RGB image with a clip rectangle for the chart lines."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(_PAPER * (width * height))
        self.clip = (0, 0, width, height)

    def dot(self, x: int, y: int, color: Color) -> None:
        x0, y0, x1, y1 = self.clip
        if x0 <= x < x1 and y0 <= y < y1:
            at = 3 * (y * self.width + x)
            self.pixels[at:at + 3] = bytes(color)

    def line(self, a: tuple[int, int], b: tuple[int, int], color: Color, width: int = 1) -> None:
        """Bresenham's line, `width` pixels thick."""
        (x, y), (x1, y1) = a, b
        dx, dy = abs(x1 - x), -abs(y1 - y)
        sx, sy = (1 if x < x1 else -1), (1 if y < y1 else -1)
        err = dx + dy
        while True:
            for w in range(width):
                self.dot(x + w, y, color)
                self.dot(x, y + w, color)
            if (x, y) == (x1, y1):
                return
            twice = 2 * err
            if twice >= dy:
                err, x = err + dy, x + sx
            if twice <= dx:
                err, y = err + dx, y + sy

    def text(self, x: int, y: int, words: str, color: Color = _INK, scale: int = 2) -> None:
        """`words` upper-cased, top-left at (x, y); characters without a glyph are blanks."""
        for i, char in enumerate(words.upper()):
            for row, bits in enumerate(_FONT.get(char, "00000")):
                for col in range(3):
                    if int(bits) & (4 >> col):
                        for u in range(scale):
                            for v in range(scale):
                                self.dot(x + (4 * i + col) * scale + u, y + row * scale + v,
                                         color)

    def png(self) -> bytes:
        def chunk(kind: bytes, data: bytes) -> bytes:
            return (struct.pack(">I", len(data)) + kind + data
                    + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

        stride = 3 * self.width
        raw = b"".join(b"\x00" + self.pixels[y * stride:(y + 1) * stride]
                       for y in range(self.height))
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _label(n: float) -> str:
    return f"{n / 1e6:g}M" if n >= 1e6 else f"{n / 1e3:g}K" if n >= 1e3 else f"{n:g}"


def _panel(canvas: Canvas, panel: Panel, left: int, top: int, width: int, height: int) -> None:
    """Time of each series as a multiple of the first series' first point, vs input size."""
    unit = panel.series[0].seconds[0]
    xmax = max(max(s.sizes) for s in panel.series if s.sizes)
    # The y range fits every series but the last (the naive one may leave the chart).
    ymax = 1.15 * max(t / unit for s in panel.series[:-1] for t in s.seconds)
    plot = (left + 60, top + 30, left + width - 10, top + height - 40)
    x0, y0, x1, y1 = plot

    def at(n: float, t: float) -> tuple[int, int]:
        return (round(x0 + (x1 - x0) * n / xmax), round(y1 - (y1 - y0) * t / unit / ymax))

    canvas.text(left + 10, top + 5, panel.title)
    step = _nice(ymax / 5)
    for i in range(int(ymax / step) + 1):
        y = at(0, i * step * unit)[1]
        canvas.line((x0, y), (x1, y), _GRID)
        canvas.text(x0 - 8 - 8 * len(f"{i * step:g}"), y - 5, f"{i * step:g}")
    for n in panel.series[0].sizes:
        x = at(n, 0)[0]
        canvas.line((x, y1), (x, y1 + 5), _INK)
        canvas.text(x - 4 * len(_label(n)), y1 + 10, _label(n))
    canvas.line((x0, y0), (x0, y1), _INK)
    canvas.line((x0, y1), (x1, y1), _INK)
    canvas.text(x0, y1 + 26, "N  (Y: TIME / BASELINE AT SMALLEST N)")
    canvas.clip = (x0, y0 - 1, x1 + 1, y1 + 1)
    for k, series in enumerate(panel.series):
        color = _COLORS[k % len(_COLORS)]
        points = [at(n, t) for n, t in zip(series.sizes, series.seconds, strict=True)]
        for a, b in itertools.pairwise(points):
            if segment := _below(a, b, y0 - 1):
                canvas.line(*segment, color, width=2)
        for x, y in points:
            for d in range(-2, 3):
                if y0 <= y + d <= y1:
                    canvas.line((x - 2, y + d), (x + 2, y + d), color)
    canvas.clip = (0, 0, canvas.width, canvas.height)
    for k, series in enumerate(panel.series):
        y = y0 + 8 + 16 * k
        canvas.line((x0 + 10, y + 4), (x0 + 30, y + 4), _COLORS[k % len(_COLORS)], width=3)
        canvas.text(x0 + 36, y, series.label)


Point = tuple[int, int]


def _below(a: Point, b: Point, top: int) -> tuple[Point, Point] | None:
    """The segment a-b cut where it rises above `top` (a series that leaves the chart)."""
    (xa, ya), (xb, yb) = a, b
    if ya < top and yb < top:
        return None
    if ya < top:
        (xa, ya), (xb, yb) = (xb, yb), (xa, ya)
    if yb < top:
        xb = round(xa + (xb - xa) * (ya - top) / (ya - yb))
        yb = top
    return ((xa, ya), (xb, yb))


def _nice(raw: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is >= raw."""
    power = 10.0 ** (len(str(int(raw))) - 1) if raw >= 1 else 0.1
    while power * 10 < raw:
        power *= 10
    while power > raw and power / 10 >= raw:
        power /= 10
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def write_chart(panels: list[Panel], path: Path) -> Path:
    """Draw `panels` side by side into the PNG at `path`; returns the path."""
    width, height = 620, 460
    canvas = Canvas(width * len(panels), height)
    for i, panel in enumerate(panels):
        _panel(canvas, panel, i * width, 0, width, height)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(canvas.png())
    return path
