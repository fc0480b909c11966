"""Turning engine output into clean Markdown: tidying text-layer Markdown, and laying out
OCR'd text lines as paragraphs in reading order."""

from __future__ import annotations

import base64
import html
import io
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from model.ruled_grid import RuledPage, cells_html, ruled_cells
from model.steps import no_findings, page_step, unchanged

# --- Markdown from a text layer ----------------------------------------------------------------

# pymupdf4llm's own markers: page separators, and placeholders for pictures it did not keep.
_ARTIFACT_LINES = re.compile(
    r"^\s*(?:-{5,}|\*\*==> picture \[.*?\] intentionally omitted <==\*\*"
    r"|\*\*----- (?:Start|End) of picture text -----\*\*(?:<br>)?)\s*$",
    re.MULTILINE,
)
_BOLD_HEADING = re.compile(r"^(#{1,6}) +\*\*(.+?)\*\* *$", re.MULTILINE)


@page_step("markdown tidying", fallback=unchanged)
def tidy_markdown(markdown: str) -> str:
    """Strip extractor artifacts and stray whitespace; at most one blank line in a row."""
    text = markdown.replace("\r\n", "\n")
    text = _ARTIFACT_LINES.sub("", text)
    # A heading is already emphasized; "# **Title**" only adds noise for every reader.
    text = _BOLD_HEADING.sub(r"\1 \2", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n" if text.strip() else ""


# --- Markdown from OCR boxes -------------------------------------------------------------------


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
        pad = _BOX_PADDING * self.height
        return self.x0 + pad < x < self.x1 - pad


@dataclass
class _Line:
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


# A column gutter must be this wide (fraction of page width) and lie in the page's middle band.
# It is small because detection boxes are padded: LaTeX's 10 pt gutter leaves about 3 px.
_GUTTER_MIN = 0.002
# Most lines of a text column end (or start) within this share of the width from the gutter.
_GUTTER_ALIGN = 0.04
# The detector pads each box by roughly half the text height on either side (unclip 1.6);
# two columns' boxes can touch across a narrow gutter, their text does not.
_BOX_PADDING = 0.4
# At most this share of a page's boxes may straddle the gutter (titles, centred bylines).
_MAX_CROSSING_SHARE = 0.15
_GUTTER_BAND = (0.25, 0.75)
# Two ragged sides are a form, not columns, when more than this share of the lines of one
# side have a line of the other at the same height (within this share of a line's height).
_MAX_PAIRED_SHARE = 0.5
_SAME_ROW = 0.15
# A box wider than this share of the page spans both columns (a title, a full-width figure note).
_SPANNING = 0.55
# A vertical gap above a line larger than this times the line height starts a new paragraph.
_PARAGRAPH_GAP = 0.8
# ... or its middle is this many times the column's usual line pitch below the line before;
_PARAGRAPH_PITCH = 1.5
# (the pitch is measured on at least this many pairs of lines).
_MIN_PITCH_STEPS = 3
# A first line indented by more than this many line heights starts a paragraph.
_INDENT = 0.8
# A line ending this share of the column's width short of the right edge ends its paragraph
# (generous, so that ragged-right text is not cut at every shorter line).
_SHORT_LINE = 0.3
# Lines this much taller than the page's usual line are set as headings.
_HEADING_RATIO = 1.6


def _lines_top_down(boxes: Sequence[TextBox], *args: object, **kwargs: object) -> str:
    """The OCR's lines top to bottom, one per line: its reading without a layout."""
    ordered = sorted(boxes, key=lambda box: (box.y0, box.x0))
    return "\n".join(box.text for box in ordered if box.text.strip()) + "\n" if boxes else ""


@page_step("OCR layout", fallback=_lines_top_down)
def boxes_to_markdown(
    boxes: Sequence[TextBox],
    page_width: float,
    *,
    page_height: float | None = None,
    drop_running: bool = False,
    table_format: str = "markdown",
    skew_degrees: float = 0.0,
    ruling: RuledPage | None = None,
) -> str:
    """Paragraphs and tables in reading order: top to bottom, left to right, and for a page
    set in two columns, the left column before the right one between full-width blocks.
    With ``drop_running`` (and the page's height), page numbers and other running lines in
    the top and bottom margins are left out. ``skew_degrees`` is how far the page's lines
    slope (``skew_of``): the layout is worked out on the lines turned level. ``ruling`` (the
    page's pixels, ``model.ruled_grid``) tells a ruled table's merged cells, which ``auto``
    and ``html`` tables then write with ``colspan``."""
    paragraphs = boxes_to_paragraphs(
        boxes,
        page_width,
        page_height=page_height,
        drop_running=drop_running,
        table_format=table_format,
        skew_degrees=skew_degrees,
        ruling=ruling,
    )
    if not paragraphs:
        return ""
    return "\n\n".join(markdown for markdown, _ in paragraphs) + "\n"


def boxes_to_paragraphs(
    boxes: Sequence[TextBox],
    page_width: float,
    *,
    page_height: float | None = None,
    drop_running: bool = False,
    table_format: str = "markdown",
    skew_degrees: float = 0.0,
    ruling: RuledPage | None = None,
) -> list[tuple[str, list[TextBox]]]:
    """The paragraphs (and tables) ``boxes_to_markdown`` writes, each with the boxes it was
    read from (the page's layout blocks are built from them: the boxes as given, not as
    turned level)."""
    boxes = [b for b in boxes if b.text.strip()]
    original = {box: box for box in boxes}
    if abs(skew_degrees) >= _MIN_SKEW:
        height = page_height or max(b.y1 for b in boxes)
        level = [_level(b, skew_degrees, page_width / 2, height / 2) for b in boxes]
        original = dict(zip(level, boxes, strict=True))
        boxes = level
    if drop_running and page_height:
        boxes = _without_running_lines(boxes, page_height)
    if not boxes:
        return []
    typical = statistics.median(b.height for b in boxes)
    out: list[tuple[str, list[TextBox]]] = []
    for column in _columns(boxes, page_width):
        for kind, lines in _column_blocks(column):
            members = [original.get(box, box) for line in lines for box in line.boxes]
            if kind == "table":
                out.append((_table_markdown(lines, table_format, ruling), members))
            else:
                out.append((_paragraph_markdown(lines, typical), members))
    return out


# --- skew --------------------------------------------------------------------------------------

# Below this slope (degrees) the lines are level enough as they are.
_MIN_SKEW = 0.15
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


def _level(box: TextBox, skew_degrees: float, cx: float, cy: float) -> TextBox:
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


# --- running heads and feet on a scan ----------------------------------------------------------

# Lines in this share of the page's height at its top or bottom are margin lines ...
_MARGIN_BAND = 0.1


def _without_running_lines(boxes: list[TextBox], page_height: float) -> list[TextBox]:
    """Boxes less the page numbers, revision lines and download stamps in the margins: a
    line there that is one of those patterns (``model.markdown_repair.is_running_line``)."""
    from model.markdown_repair import is_running_line

    top, bottom = _MARGIN_BAND * page_height, (1 - _MARGIN_BAND) * page_height
    kept = []
    lines = _lines(boxes)
    body = [line for line in lines if top <= line.cy <= bottom]
    if not body:
        return boxes
    for line in lines:
        if (line.cy < top or line.cy > bottom) and is_running_line(line.text):
            continue
        kept.extend(line.boxes)
    return kept


# --- tables on a scan --------------------------------------------------------------------------

# A table is at least this many rows in a row of lines, each split by the OCR into at least
# two boxes that fall into the same columns ...
_TABLE_MIN_ROWS = 3
_TABLE_MIN_COLUMNS = 2
# ... and at least one row has this many cells (two boxes a line is also a justified line
# read in two pieces, or a label and its value).
_TABLE_WIDEST_ROW = 3


def _column_blocks(boxes: list[TextBox]) -> list[tuple[str, list[_Line]]]:
    """A column's lines as paragraphs and tables, in order."""
    lines = _lines(boxes)
    typical = statistics.median(line.height for line in lines)
    column = _Column(
        left=statistics.median(line.x0 for line in lines),
        right=statistics.median(line.x1 for line in lines),
        line_height=typical,
        pitch=_line_pitch(lines, typical),
    )
    blocks: list[tuple[str, list[_Line]]] = []
    i = 0
    while i < len(lines):
        end = _table_run_end(lines, i)
        if end is not None:
            blocks.append(("table", lines[i:end]))
            i = end
            continue
        j = i + 1
        while j < len(lines) and _table_run_end(lines, j) is None:
            j += 1
        blocks.extend(("text", p) for p in _paragraphs_of(lines[i:j], column))
        i = j
    return blocks


def _table_run_end(lines: list[_Line], start: int) -> int | None:
    """Where a table starting at ``lines[start]`` ends (exclusive), or None if none does."""
    end = start
    while end < len(lines) and len(lines[end].boxes) >= _TABLE_MIN_COLUMNS:
        end += 1
    # Trailing rows can lack cells, but a table starts with a full row; try the longest run
    # first and shrink it until its columns are consistent.
    while end - start >= _TABLE_MIN_ROWS:
        rows = lines[start:end]
        if max(len(r.boxes) for r in rows) >= _TABLE_WIDEST_ROW and _table_columns(rows):
            return end
        end -= 1
    return None


def _table_columns(rows: list[_Line]) -> list[tuple[float, float]] | None:
    """The x-ranges of the table's columns, if every row puts at most one cell in each.

    A column is a stretch of x that the rows' cells cover; what separates two columns is a
    stretch that at most one row in five crosses: one wide figure ("273.879.750" set
    flush right in the Google Docs table) or a merged cell must not fuse two columns."""
    spans = [_ink(b) for row in rows for b in row.boxes]
    allowed = len(rows) // 5
    edges = sorted({x for span in spans for x in span})
    columns: list[list[float]] = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        mid = (lo + hi) / 2
        covered = sum(1 for x0, x1 in spans if x0 <= mid <= x1)
        if covered <= allowed:
            continue
        if columns and columns[-1][1] >= lo:
            columns[-1][1] = hi
        else:
            columns.append([lo, hi])
    columns = _merge_sparse_columns(rows, columns, allowed)
    if len(columns) < _TABLE_MIN_COLUMNS:
        return None
    for row in rows:
        used = [_column_of(b, columns) for b in row.boxes]
        if len(set(used)) != len(used):
            return None
    return [(c[0], c[1]) for c in columns]


def _merge_sparse_columns(
    rows: list[_Line], columns: list[list[float]], allowed: int
) -> list[list[float]]:
    """Columns less the slivers the one-in-five rule leaves: a column no cell falls in
    goes, and one whose cells are in at most ``allowed`` rows joins its neighbour when no row
    has a cell in both (a flush-right "453" beside the "Vatican" column above it)."""
    while True:
        filled = [set[int]() for _ in columns]
        for r, row in enumerate(rows):
            for box in row.boxes:
                filled[_column_of(box, columns)].add(r)
        empty = next((i for i, f in enumerate(filled) if not f), None)
        if empty is not None and len(columns) > 1:
            del columns[empty]
            continue
        for i in range(len(columns) - 1):
            sparse = min(len(filled[i]), len(filled[i + 1])) <= allowed
            if sparse and not filled[i] & filled[i + 1]:
                columns[i] = [columns[i][0], columns[i + 1][1]]
                del columns[i + 1]
                break
        else:
            return columns


def _ink(box: TextBox) -> tuple[float, float]:
    """A cell's x-range without the detector's padding: padded, the boxes of two narrow
    columns overlap ("simple" and "complex" in the 2305.03393 scan) and merge into one."""
    pad = min(_BOX_PADDING * box.height, 0.25 * (box.x1 - box.x0))
    return (box.x0 + pad, box.x1 - pad)


def _column_of(box: TextBox, columns: list[list[float]]) -> int:
    """The column the cell's ink overlaps most (a cell crossing a column's edge belongs
    where most of it is)."""
    x0, x1 = _ink(box)
    overlaps = [min(x1, c[1]) - max(x0, c[0]) for c in columns]
    return max(range(len(columns)), key=lambda i: (overlaps[i], -abs(box.cx - sum(columns[i]) / 2)))


def _table_markdown(rows: list[_Line], table_format: str, ruling: RuledPage | None = None) -> str:
    columns = [list(c) for c in _table_columns(rows) or []]
    grid = []
    for row in rows:
        cells = [""] * len(columns)
        for box in row.boxes:
            cells[_column_of(box, columns)] = " ".join(box.text.split())
        grid.append(cells)
    if ruling is not None and table_format != "markdown":
        # A ruled table's rules say which lines are one row and which cells are one.
        bands = [(row.y0, row.y1) for row in rows]
        spans = [(c[0], c[1]) for c in columns]
        ruled = ruled_cells(bands, spans, grid, ruling)
        if ruled is not None and any(c.colspan > 1 or c.rowspan > 1 for r in ruled for c in r):
            return cells_html(ruled)
        if ruled is not None:
            grid = [[cell.text for cell in row] for row in ruled]
    if table_format == "html":
        rows_html = ("".join(f"<td>{html.escape(c)}</td>" for c in cells) for cells in grid)
        return "<table>" + "".join(f"<tr>{r}</tr>" for r in rows_html) + "</table>"
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |" for cells in grid]
    lines.insert(1, "|" + "---|" * len(columns))
    return "\n".join(lines)


def _columns(boxes: list[TextBox], page_width: float) -> list[list[TextBox]]:
    gutter = _find_gutter(boxes, page_width)
    if gutter is None:
        return [boxes]
    spanning = sorted((b for b in boxes if b.crosses(gutter)), key=lambda b: b.y0)
    narrow = [b for b in boxes if not b.crosses(gutter)]
    # Full-width boxes cut the page into bands; each band reads left column, then right.
    groups: list[list[TextBox]] = []
    for band in range(len(spanning) + 1):
        members = [b for b in narrow if _band(b, spanning) == band]
        groups.append([b for b in members if b.cx < gutter])
        groups.append([b for b in members if b.cx >= gutter])
        if band < len(spanning):
            groups.append([spanning[band]])
    return [group for group in groups if group]


def _band(box: TextBox, spanning: list[TextBox]) -> int:
    return sum(1 for s in spanning if s.cy < box.cy)


def _find_gutter(boxes: list[TextBox], page_width: float) -> float | None:
    narrow = [b for b in boxes if b.x1 - b.x0 < _SPANNING * page_width]
    if len(narrow) < 6:
        return None
    gap = _widest_gap(narrow, page_width)
    if gap is None:
        return None
    middle = (gap[0] + gap[1]) / 2
    left = [b for b in narrow if not b.crosses(middle) and b.cx < middle]
    right = [b for b in narrow if not b.crosses(middle) and b.cx >= middle]
    # Two real columns each hold several lines; a lone label on one side is not a column.
    if min(len(left), len(right)) < 3:
        return None
    # Columns of running text are set flush against the gutter; a form's labels and values
    # (which must read across, row by row) end and start wherever their words do, and sit
    # on the same rows. Ragged columns (a questionnaire's two pages side by side, lists,
    # bullets) are columns too when their lines keep rows of their own.
    near = _GUTTER_ALIGN * page_width
    flush = statistics.median(abs(middle - b.x1) for b in left) <= near
    flush &= statistics.median(abs(b.x0 - middle) for b in right) <= near
    if not flush and _paired_share(left, right) > _MAX_PAIRED_SHARE:
        return None
    return middle


def _paired_share(left: list[TextBox], right: list[TextBox]) -> float:
    """The share of the side with fewer lines whose lines have a line on the other side at
    the same height: near 1 for a form's labels and values, low for independent columns."""
    fewer, more = sorted((left, right), key=len)
    paired = sum(
        1
        for a in fewer
        if any(abs(a.cy - b.cy) < _SAME_ROW * min(a.height, b.height) for b in more)
    )
    return paired / len(fewer)


def _widest_gap(boxes: list[TextBox], page_width: float) -> tuple[float, float] | None:
    """The widest vertical strip in the page's middle band that the fewest boxes cross.

    A few crossings are allowed: a centred title or author line narrower than a column
    still straddles the gutter, and is then read as a full-width block.
    """
    lo, hi = (page_width * f for f in _GUTTER_BAND)
    step = max(page_width * _GUTTER_MIN / 2, 0.5)
    xs = [lo + i * step for i in range(int((hi - lo) / step) + 1)]
    crossings = [sum(1 for b in boxes if b.crosses(x)) for x in xs]
    fewest = min(crossings)
    if fewest > max(2, _MAX_CROSSING_SHARE * len(boxes)):
        return None
    best: tuple[float, float] | None = None
    run_start: float | None = None
    for x, count in zip([*xs, hi + step], [*crossings, fewest + 1], strict=True):
        if count == fewest and run_start is None:
            run_start = x
        elif count != fewest and run_start is not None:
            if best is None or x - run_start > best[1] - best[0]:
                best = (run_start, x - step)
            run_start = None
    if best is None or best[1] - best[0] < _GUTTER_MIN * page_width:
        return None
    return best


def _lines(boxes: Iterable[TextBox]) -> list[_Line]:
    lines: list[_Line] = []
    for box in sorted(boxes, key=lambda b: (b.cy, b.x0)):
        last = lines[-1] if lines else None
        if last is not None and abs(box.cy - statistics.mean(b.cy for b in last.boxes)) < (
            0.5 * min(box.height, last.height)
        ):
            last.boxes.append(box)
        else:
            lines.append(_Line([box]))
    return lines


def _paragraphs_of(lines: list[_Line], column: _Column) -> list[list[_Line]]:
    """Lines as paragraphs. ``column`` holds the column's usual line height, not the two
    neighbours': descenders make single boxes vary by a third, which would split paragraphs
    at random."""
    paragraphs: list[list[_Line]] = []
    previous: _Line | None = None
    for line in lines:
        if previous is None or _starts_paragraph(previous, line, column):
            paragraphs.append([line])
        else:
            paragraphs[-1].append(line)
        previous = line
    return paragraphs


@dataclass(frozen=True)
class _Column:
    left: float
    right: float
    line_height: float
    # The usual distance from one line's middle to the next one's (0: too few lines to say).
    pitch: float = 0.0


def _line_pitch(lines: list[_Line], line_height: float) -> float:
    steps = [
        b.cy - a.cy
        for a, b in zip(lines, lines[1:], strict=False)
        if 0 < b.cy - a.cy < 2 * line_height
    ]
    return statistics.median(steps) if len(steps) >= _MIN_PITCH_STEPS else 0.0


def _starts_paragraph(previous: _Line, line: _Line, column: _Column) -> bool:
    """A blank gap, a change of type size, an indented first line (books, LaTeX) or a
    short last line before it (a paragraph's end, or a heading) starts a paragraph."""
    gap = line.y0 - previous.y1
    # The detector pads every box by about half its height, so two paragraphs' boxes can
    # almost touch across a blank line; the distance between the lines' middles cannot hide
    # it (measured on the aviation handbook's scan: 25 px a line, 47 px across a blank line).
    spaced = column.pitch > 0 and line.cy - previous.cy > _PARAGRAPH_PITCH * column.pitch
    size_change = max(previous.height, line.height) / max(min(previous.height, line.height), 1.0)
    indented = line.x0 - column.left > _INDENT * column.line_height
    short_before = previous.x1 < column.right - _SHORT_LINE * (column.right - column.left)
    return (
        gap > _PARAGRAPH_GAP * column.line_height
        or spaced
        or size_change > 1.4
        or indented
        or short_before
    )


def _paragraph_markdown(lines: list[_Line], typical_height: float) -> str:
    text = _join_lines([line.text for line in lines])
    height = statistics.median(line.height for line in lines)
    if len(lines) <= 2 and len(text) < 120 and height >= _HEADING_RATIO * typical_height:
        return f"## {text}"
    return text


def _join_lines(texts: list[str]) -> str:
    joined = ""
    for text in texts:
        text = text.strip()
        # "exam-" + "ple" was one word broken at the margin; "well-" + "Known" may not be.
        if joined.endswith("-") and text[:1].islower() and joined[-2:-1].isalpha():
            joined = joined[:-1] + text
        else:
            joined = f"{joined} {text}" if joined else text
    return joined


# --- Markdown from a vision-language model (DeepSeek-OCR / jina-ocr-v1) ------------------------

# A grounded block: <|ref|>label<|/ref|><|det|>[[x1, y1, x2, y2], ...]<|/det|>, boxes on a
# 0-999 scale of the page. The label is the block's type (text, title, table, image, ...).
_GROUNDING = re.compile(
    r"<\|ref\|>(?P<label>.*?)<\|/ref\|>\s*<\|det\|>(?P<boxes>.*?)<\|/det\|>[ \t]*\n?", re.DOTALL
)
_BOX = re.compile(r"\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]")
# Special tokens a model may echo when it was asked for grounding or ran out of tokens.
_STRAY_SPECIAL = re.compile(r"<\|(?:/?ref|/?det|grounding)\|>|<｜end▁of▁sentence｜>")
GROUNDING_SCALE = 999
FIGURE_LABEL = "image"


@dataclass(frozen=True)
class Figure:
    """A picture on the page the model pointed at, in pixels of the page image it saw."""

    index: int  # 1-based, in reading order
    box: tuple[int, int, int, int]
    name: str


def figure_name(page_number: int, index: int) -> str:
    return f"figures/page-{page_number:04d}-figure-{index}.png"


def scale_box(box: tuple[int, int, int, int], width: int, height: int) -> tuple[int, int, int, int]:
    """A 0-999 box as pixels of a width × height page, clamped to the page."""
    x0, y0, x1, y1 = (v / GROUNDING_SCALE for v in box)
    left, right = sorted((round(x0 * width), round(x1 * width)))
    top, bottom = sorted((round(y0 * height), round(y1 * height)))
    return (max(0, left), max(0, top), min(width, right), min(height, bottom))


def _tags_dropped(text: str, **kwargs: object) -> tuple[str, list[Figure]]:
    """The model's output with its grounding tags and special tokens dropped, no figures."""
    return _STRAY_SPECIAL.sub("", _GROUNDING.sub("", text)), []


@page_step("model output cleaning", fallback=_tags_dropped)
def vlm_markdown(
    text: str, *, page_size: tuple[int, int], page_number: int, figures: bool
) -> tuple[str, list[Figure]]:
    """The model's output as clean Markdown, and the figures it found.

    Grounding tags go; each ``image`` region becomes a link to its crop when ``figures`` is
    asked for (the caller cuts and stores the crops), and disappears otherwise. HTML tables
    and LaTeX pass through untouched; blank lines are tidied.
    """
    found: list[Figure] = []

    def replace(match: re.Match[str]) -> str:
        if match.group("label").strip() != FIGURE_LABEL:
            return ""
        boxes = [
            (int(x0), int(y0), int(x1), int(y1))
            for x0, y0, x1, y1 in _BOX.findall(match.group("boxes"))
        ]
        if not figures or not boxes:
            return ""
        links = []
        for raw in boxes:
            box = scale_box(raw, *page_size)
            if box[2] - box[0] < 2 or box[3] - box[1] < 2:
                continue  # a degenerate box cuts no picture
            figure = Figure(len(found) + 1, box, figure_name(page_number, len(found) + 1))
            found.append(figure)
            links.append(f"![]({figure.name})")
        return "\n\n".join(links) + "\n\n" if links else ""

    text = _GROUNDING.sub(replace, text.replace("\r\n", "\n"))
    text = _STRAY_SPECIAL.sub("", text)
    return tidy_markdown(text), found


@page_step("figure crops", fallback=no_findings)
def figure_reports(page: Image.Image, figures: Iterable[Figure]) -> list[dict[str, Any]]:
    """The figures as an engine reports them in ``PageResult.extra["figures"]``: name, box on
    the page, and the crop's PNG (base64; the service stores it and drops the bytes)."""
    return [
        {
            "name": figure.name,
            "box": list(figure.box),
            "png_base64": base64.b64encode(figure_png(page, figure)).decode(),
        }
        for figure in figures
    ]


def figure_png(page: Image.Image, figure: Figure) -> bytes:
    """The figure's crop of the page image, as PNG bytes."""
    buffer = io.BytesIO()
    page.crop(figure.box).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()
