"""A scan's OCR'd text lines laid out as Markdown: columns, paragraphs, headings and tables
in reading order, with the running lines of the margins left out when asked."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from model.ruled_grid import RuledPage
from model.scan_lines import MIN_SKEW, Line, TextBox, group_lines, join_drop_caps, level_box
from model.scan_tables import table_markdown, table_run_end
from model.steps import page_step

# A column gutter must be this wide (fraction of page width) and lie in the page's middle band.
# It is small because detection boxes are padded: LaTeX's 10 pt gutter leaves about 3 px.
_GUTTER_MIN = 0.002
# Most lines of a text column end (or start) within this share of the width from the gutter.
_GUTTER_ALIGN = 0.04
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
    if abs(skew_degrees) >= MIN_SKEW:
        height = page_height or max(b.y1 for b in boxes)
        level = [level_box(b, skew_degrees, page_width / 2, height / 2) for b in boxes]
        original = dict(zip(level, boxes, strict=True))
        boxes = level
    if drop_running and page_height:
        boxes = _without_running_lines(boxes, page_height)
    if not boxes:
        return []
    boxes = join_drop_caps(boxes)
    typical = statistics.median(b.height for b in boxes)
    out: list[tuple[str, list[TextBox]]] = []
    for column in _columns(boxes, page_width):
        for kind, lines in _column_blocks(column):
            members = [original.get(box, box) for line in lines for box in line.boxes]
            if kind == "table":
                out.append((table_markdown(lines, table_format, ruling), members))
            else:
                out.append((_paragraph_markdown(lines, typical), members))
    return out


# --- running heads and feet on a scan ----------------------------------------------------------

# Lines in this share of the page's height at its top or bottom are margin lines ...
_MARGIN_BAND = 0.1


def _without_running_lines(boxes: list[TextBox], page_height: float) -> list[TextBox]:
    """Boxes less the page numbers, revision lines and download stamps in the margins: a
    line there that is one of those patterns (``model.markdown_repair.is_running_line``)."""
    from model.markdown_repair import is_running_line

    top, bottom = _MARGIN_BAND * page_height, (1 - _MARGIN_BAND) * page_height
    kept = []
    lines = group_lines(boxes)
    body = [line for line in lines if top <= line.cy <= bottom]
    if not body:
        return boxes
    for line in lines:
        if top <= line.cy <= bottom:
            kept.extend(line.boxes)
        elif not is_running_line(line.text):
            # A browser's print puts the page count and the date on one row, far apart: each
            # box of a margin row is judged on its own too.
            kept.extend(box for box in line.boxes if not is_running_line(box.text))
    return kept


# --- columns and paragraphs ------------------------------------------------------------------


def _column_blocks(boxes: list[TextBox]) -> list[tuple[str, list[Line]]]:
    """A column's lines as paragraphs and tables, in order."""
    lines = group_lines(boxes)
    typical = statistics.median(line.height for line in lines)
    column = _Column(
        left=statistics.median(line.x0 for line in lines),
        right=statistics.median(line.x1 for line in lines),
        line_height=typical,
        pitch=_line_pitch(lines, typical),
    )
    blocks: list[tuple[str, list[Line]]] = []
    i = 0
    while i < len(lines):
        end = table_run_end(lines, i)
        if end is not None:
            blocks.append(("table", lines[i:end]))
            i = end
            continue
        j = i + 1
        while j < len(lines) and table_run_end(lines, j) is None:
            j += 1
        blocks.extend(("text", p) for p in _paragraphs_of(lines[i:j], column))
        i = j
    return blocks


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


def _paragraphs_of(lines: list[Line], column: _Column) -> list[list[Line]]:
    """Lines as paragraphs. ``column`` holds the column's usual line height, not the two
    neighbours': descenders make single boxes vary by a third, which would split paragraphs
    at random."""
    paragraphs: list[list[Line]] = []
    previous: Line | None = None
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


def _line_pitch(lines: list[Line], line_height: float) -> float:
    steps = [
        b.cy - a.cy
        for a, b in zip(lines, lines[1:], strict=False)
        if 0 < b.cy - a.cy < 2 * line_height
    ]
    return statistics.median(steps) if len(steps) >= _MIN_PITCH_STEPS else 0.0


def _starts_paragraph(previous: Line, line: Line, column: _Column) -> bool:
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


def _paragraph_markdown(lines: list[Line], typical_height: float) -> str:
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
