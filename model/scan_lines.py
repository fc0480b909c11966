"""A scan's OCR'd text lines: the boxes the detector found, grouped into lines, and how far
the page's lines slope."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# The detector pads each box by roughly half the text height on either side (unclip 1.6);
# two columns' boxes can touch across a narrow gutter, their text does not.
BOX_PADDING = 0.4


@dataclass(frozen=True)
class TextBox:
    """One recognized text line segment, in upright page pixel coordinates."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    def crosses(self, x: float) -> bool:
        """Whether the text itself, not just the detector's padding around it, spans x."""
        pad = BOX_PADDING * self.height
        return self.x0 + pad < x < self.x1 - pad


@dataclass
class Line:
    boxes: list[TextBox]

    @property
    def y0(self) -> float:
        return min(b.y0 for b in self.boxes)

    @property
    def y1(self) -> float:
        return max(b.y1 for b in self.boxes)

    @property
    def x0(self) -> float:
        return min(b.x0 for b in self.boxes)

    @property
    def x1(self) -> float:
        return max(b.x1 for b in self.boxes)

    @property
    def height(self) -> float:
        return statistics.median(b.height for b in self.boxes)

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def text(self) -> str:
        return " ".join(b.text.strip() for b in sorted(self.boxes, key=lambda b: b.x0))


def group_lines(boxes: Iterable[TextBox]) -> list[Line]:
    lines: list[Line] = []
    for box in sorted(boxes, key=lambda b: (b.cy, b.x0)):
        last = lines[-1] if lines else None
        if last is not None and abs(box.cy - statistics.mean(b.cy for b in last.boxes)) < (
            0.5 * min(box.height, last.height)
        ):
            last.boxes.append(box)
        else:
            lines.append(Line([box]))
    return lines


# --- skew --------------------------------------------------------------------------------------

# Below this slope (degrees) the lines are level enough as they are.
MIN_SKEW = 0.15
# Lines at least this many times longer than tall say how the page slopes ...
_SKEW_SAMPLE_ASPECT = 5.0
# ... and a page slopes when enough of them agree (fewer: a figure's labels, a stamp).
_SKEW_MIN_LINES = 3


def skew_of(quads: Iterable[Sequence[Sequence[float]]]) -> float:
    """How far a scan's text lines slope, in degrees (positive: falling to the right, in
    image coordinates), from the detector's four-cornered boxes (top-left, top-right, ...):
    the median slope of the long lines' top and bottom edges. A page scanned 1° askew puts
    a table's rows 10 px apart from one side to the other, enough to deal its cells into
    the wrong rows; laid out level, they line up."""
    angles = []
    for quad in quads:
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = (tuple(map(float, p[:2])) for p in quad[:4])
        width = math.hypot(x1 - x0, y1 - y0)
        height = math.hypot(x3 - x0, y3 - y0)
        if width < _SKEW_SAMPLE_ASPECT * max(height, 1.0) or x1 <= x0:
            continue
        top = math.atan2(y1 - y0, x1 - x0)
        bottom = math.atan2(y2 - y3, x2 - x3)
        angles.append(math.degrees((top + bottom) / 2))
    if len(angles) < _SKEW_MIN_LINES:
        return 0.0
    return float(statistics.median(angles))


def level_box(box: TextBox, skew_degrees: float, cx: float, cy: float) -> TextBox:
    """The box of a line that slopes ``skew_degrees``, turned level about (cx, cy): its middle
    moves, its size stays (the gutter and cell tests allow for the detector's padding in
    proportion to a box's height as it was measured)."""
    a = math.radians(skew_degrees)
    dx, dy = box.cx - cx, box.cy - cy
    # Turn by -a: a line falling to the right (a > 0) comes up level.
    x = cx + dx * math.cos(a) + dy * math.sin(a)
    y = cy - dx * math.sin(a) + dy * math.cos(a)
    half_w, half_h = (box.x1 - box.x0) / 2, box.height / 2
    return TextBox(x - half_w, y - half_h, x + half_w, y + half_h, box.text)


# --- drop caps ---------------------------------------------------------------------------------

# A drop cap is a lone letter at least this many times the page's usual line height ...
_DROP_CAP_HEIGHT = 1.8
# ... with its paragraph's first line starting within this many line heights to its right,
# its top within one line height of the letter's top.
_DROP_CAP_REACH = 3.0


def join_drop_caps(boxes: list[TextBox]) -> list[TextBox]:
    """Boxes with each drop cap joined to the word it begins.

    The detector finds a drop cap as a box of its own, two or three lines tall; grouped by
    height it lands on the second line of its paragraph ("T" before that line, "HE" left at
    the first's start). Here the letter goes to the front of the first line beside it, and
    the lines beside it start where it does, so that they read as one paragraph, not an
    indented one."""
    if len(boxes) < 3:
        return boxes
    typical = statistics.median(b.height for b in boxes)
    out = list(boxes)
    for cap in boxes:
        letter = cap.text.strip()
        if len(letter) != 1 or not letter.isalpha() or cap.height < _DROP_CAP_HEIGHT * typical:
            continue
        beside = [
            b
            for b in out
            if b is not cap
            and b.height < cap.height / _DROP_CAP_HEIGHT
            and cap.x1 - BOX_PADDING * cap.height <= b.x0 <= cap.x1 + _DROP_CAP_REACH * typical
            and cap.y0 <= b.cy <= cap.y1
        ]
        if not beside:
            continue
        first = min(beside, key=lambda b: b.y0)
        if first.y0 - cap.y0 > typical:
            continue
        out.remove(cap)
        for box in beside:
            text = letter + box.text.lstrip() if box is first else box.text
            out[out.index(box)] = TextBox(cap.x0, box.y0, box.x1, box.y1, text)
    return out
