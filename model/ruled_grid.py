"""Where a scanned table's ruling says two cells are one.

The OCR table layout (``model.scan_layout``) knows a table's columns from where its text
lines sit, but a text line's box is as wide as its text, not as its cell: "Europe" centred
over four columns looks like a cell of one column with three empty neighbours, and a cell
whose text wraps onto a second line looks like a second row. A ruled table says which it is:
between two cells of a row there is a vertical rule, between two rows a horizontal one, and
where a rule is missing the cells are one (Google Docs' "Europe", "EUR (€)"). This reads the
page's pixels, turned level like the lines, for a dark stroke down the gap between two
columns across a line's height, and across a column between two lines. A table without
rules in both directions says nothing, and nothing is merged.

Cells join across a missing rule only while at most one of them holds text: two texts with
no rule between them are more likely a rule the scan lost than one cell, and are kept apart.
Lines with no rule between them in any column are one row (a wrapped cell's lines).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

import numpy as np

from model.steps import nothing, page_step

# A gap holds a rule when some pixel column of it is dark over this share of the row's height
# (a glyph's stem covers under half of a padded text box; noise and JPEG leave gaps in a
# rule, so not all of it).
RULE_COVER = 0.75
# Darker than this (0-255 grey) is ink; the scans of the real-page set have paper at 200-255
# with their noise and rules at 0-120 after blur.
INK_BELOW = 150
# A rule is at most this wide (px) and is looked for this many pixels round each x (a rule
# 1° askew that the levelling leaves a pixel off).
RULE_SLACK = 1


class RuledPage:
    """A page's pixels (grey, or RGB), asked lazily whether a rule crosses a gap: nothing is
    computed for a page without a table."""

    def __init__(self, pixels: np.ndarray, skew_degrees: float = 0.0, upside_down: bool = False):
        self._pixels = pixels
        self._skew = skew_degrees
        self._upside_down = upside_down
        self._ink: np.ndarray | None = None

    def _ink_mask(self) -> np.ndarray:
        if self._ink is None:
            import cv2

            grey = np.asarray(self._pixels)
            if grey.ndim == 3:
                grey = cv2.cvtColor(grey, cv2.COLOR_RGB2GRAY)
            if self._upside_down:
                grey = np.ascontiguousarray(np.rot90(grey, 2))
            if abs(self._skew) >= 0.15:
                height, width = grey.shape[:2]
                # The same turn as ``scan_lines.level_box``: about the middle, by -skew.
                turn = cv2.getRotationMatrix2D((width / 2, height / 2), self._skew, 1.0)
                grey = cv2.warpAffine(grey, turn, (width, height), borderValue=255)
            self._ink = np.asarray(grey) < INK_BELOW
        return self._ink

    def rule_between(self, x0: float, x1: float, y0: float, y1: float) -> bool:
        """Whether a vertical rule runs down the gap ``x0``-``x1`` over most of ``y0``-``y1``
        (level page pixels)."""
        ink = self._ink_mask()
        height, width = ink.shape
        top, bottom = max(int(y0), 0), min(int(y1) + 1, height)
        left, right = max(int(x0) - RULE_SLACK, 0), min(int(x1) + RULE_SLACK + 1, width)
        if bottom - top < 3 or right <= left:
            return False
        band = ink[top:bottom, left:right]
        # A column counts a row as dark when it or a neighbour is: a rule a pixel askew.
        widened = band.copy()
        widened[:, 1:] |= band[:, :-1]
        widened[:, :-1] |= band[:, 1:]
        return bool(widened.mean(axis=0).max() >= RULE_COVER)

    def rule_across(self, x0: float, x1: float, y0: float, y1: float) -> bool:
        """Whether a horizontal rule runs across ``x0``-``x1`` somewhere between ``y0`` and
        ``y1`` (level page pixels), over most of that width."""
        ink = self._ink_mask()
        height, width = ink.shape
        top, bottom = max(int(y0) - RULE_SLACK, 0), min(int(y1) + RULE_SLACK + 1, height)
        left, right = max(int(x0), 0), min(int(x1) + 1, width)
        if right - left < 3 or bottom <= top:
            return False
        band = ink[top:bottom, left:right]
        widened = band.copy()
        widened[1:, :] |= band[:-1, :]
        widened[:-1, :] |= band[1:, :]
        return bool(widened.mean(axis=1).max() >= RULE_COVER)


# A table is ruled when every gap between two columns holds a rule in at least this share of
# its lines, and this share of the gaps between its lines hold one in most columns: then a
# missing rule is a merged cell, not a rule the scan lost.
RULED_SHARE = 0.5


@dataclass
class Cell:
    text: str
    colspan: int = 1
    rowspan: int = 1
    column: int = 0  # the first column it covers


@page_step("ruled grids", fallback=nothing)
def ruled_cells(
    bands: list[tuple[float, float]],
    columns: list[tuple[float, float]],
    grid: list[list[str]],
    ruling: RuledPage,
) -> list[list[Cell]] | None:
    """A ruled table's rows of cells (a cell covered by one above it, ``rowspan``, is left out
    of its row), from its text lines' vertical extents ``bands``, its columns' x-ranges and
    each line's cell texts ``grid``; None for a table not ruled both ways."""
    if len(columns) < 2 or len(bands) < 2:
        return None
    middles = [(c[0] + c[1]) / 2 for c in columns]
    # A rule between two columns lies somewhere between their middles: the columns' own
    # edges can be pushed past it by a merged cell's text, which is what is looked for. A
    # glyph's stem never runs down a whole line's height, so text in the stretch is no rule.
    gaps = list(zip(middles, middles[1:], strict=False))
    upright = [[ruling.rule_between(lo, hi, y0, y1) for lo, hi in gaps] for y0, y1 in bands]
    if any(sum(r[i] for r in upright) < RULED_SHARE * len(bands) for i in range(len(gaps))):
        return None
    # A cell's width: from the rule on its left to the one on its right, near enough.
    edges = [columns[0][0], *((a + b) / 2 for a, b in gaps), columns[-1][1]]
    widths = list(zip(edges, edges[1:], strict=False))
    # Between two lines: from the middle of one to the middle of the next.
    level = [
        [ruling.rule_across(x0, x1, (a[0] + a[1]) / 2, (b[0] + b[1]) / 2) for x0, x1 in widths]
        for a, b in zip(bands, bands[1:], strict=False)
    ]
    ruled_rows = [sum(r) > len(columns) / 2 for r in level]
    if sum(ruled_rows) < RULED_SHARE * len(level):
        return None
    # Lines with no rule between them in any column are one row.
    rows: list[list[int]] = [[0]]
    for k, between in enumerate(level):
        if any(between):
            rows.append([k + 1])
        else:
            rows[-1].append(k + 1)
    texts = [
        [" ".join(grid[k][c] for k in members if grid[k][c]) for c in range(len(columns))]
        for members in rows
    ]
    open_gaps = [
        [all(not upright[k][i] for k in members) for i in range(len(gaps))] for members in rows
    ]
    out: list[list[Cell]] = []
    for cells, gaps_open in zip(texts, open_gaps, strict=True):
        row = [Cell(cells[0])]
        for i, is_open in enumerate(gaps_open):
            text = cells[i + 1]
            if is_open and not (row[-1].text and text):
                row[-1].colspan += 1
                row[-1].text = row[-1].text or text
            else:
                row.append(Cell(text, column=i + 1))
        out.append(row)
    _merge_down(out, [level[members[0] - 1] for members in rows[1:]])
    return out


def _merge_down(rows: list[list[Cell]], between: list[list[bool]]) -> None:
    """Cells of one column with no rule between them and at most one text, one above the
    other, as one cell: the upper one's ``rowspan`` grows, the lower one goes."""
    owner: dict[int, Cell] = {}  # column → the cell reaching down into the next row
    for r, row in enumerate(rows):
        kept = []
        for cell in row:
            above = owner.get(cell.column)
            joins = (
                r > 0
                and above is not None
                and cell.colspan == 1
                and above.colspan == 1
                and above.column == cell.column
                and not between[r - 1][cell.column]
                and not (above.text and cell.text)
            )
            if joins and above is not None:
                above.rowspan += 1
                above.text = above.text or cell.text
                continue
            for column in range(cell.column, cell.column + cell.colspan):
                owner[column] = cell
            kept.append(cell)
        row[:] = kept


def cells_html(rows: list[list[Cell]]) -> str:
    out = []
    for row in rows:
        tds = []
        for cell in row:
            spans = "".join(
                f' {name}="{n}"'
                for name, n in (("colspan", cell.colspan), ("rowspan", cell.rowspan))
                if n > 1
            )
            tds.append(f"<td{spans}>{escape(cell.text)}</td>")
        out.append("<tr>" + "".join(tds) + "</tr>")
    return "<table>" + "".join(out) + "</table>"


@page_step("ruled grids", fallback=nothing)
def ruled_page(pixels: Any, rotation: int, skew_degrees: float) -> RuledPage | None:
    """The ruling of an upright page (``rotation`` 0) or one scanned upside down (180) from
    the scanned image's pixels; None for a sideways page (its tables are left unmerged)."""
    if rotation not in (0, 180):
        return None
    return RuledPage(np.asarray(pixels), skew_degrees, upside_down=rotation == 180)
