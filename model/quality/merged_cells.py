"""Merged table cells written as empty cells: what the page's ruled grid says against what the
output's table holds.

A pipe table cannot merge cells. A converter that meets "Europe" spanning four columns writes
it in one of them and leaves the other three empty, and from the Markdown alone that is a
table with empty cells. The page's rules tell them apart: PyMuPDF's table finder, on the
drawn lines alone (``use_layout=False``: no layout model; about 20-120 ms a page,
``bench/review_costs.py``), returns each grid position a merged cell covers as ``None``. A
position the output leaves empty, that the page's grid covers with a merged cell holding
text, is a merge the output lost.

Only pages that can have the problem pay for the table finder: a text layer, and an output
table with an empty cell other than its top-left corner
(``model.quality.parsed.ParsedPage.tables_with_gaps``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.tables import Table


@dataclass(frozen=True)
class GridCell:
    """One position of the page's ruled grid: its text, or the text of the merged cell that
    covers it (``covered``)."""

    text: str
    covered: bool = False


Grid = list[list[GridCell]]


def page_grids(pdf_page: Any) -> list[Grid]:
    """The page's ruled tables (PyMuPDF's finder on its drawn lines), each position holding
    its cell's text or, where a merged cell covers it, that cell's text marked as covered."""
    grids = []
    for table in pdf_page.find_tables(use_layout=False).tables:
        texts = table.extract()
        anchors = [
            (cell, texts[r][c] or "")
            for r, row in enumerate(table.rows)
            for c, cell in enumerate(row.cells)
            if cell is not None
        ]
        grid: Grid = []
        for r, row in enumerate(table.rows):
            cells = []
            for c, cell in enumerate(row.cells):
                if cell is not None:
                    cells.append(GridCell(_clean(texts[r][c] or "")))
                    continue
                centre = _position_centre(table, r, c)
                cover = next((text for box, text in anchors if _contains(box, centre)), "")
                cells.append(GridCell(_clean(cover), covered=True))
            grid.append(cells)
        grids.append(grid)
    return grids


def lost_merges(tables: list[Table], grids: list[Grid]) -> int:
    """How many empty cells of the output's tables the page's grid covers with a merged cell
    that holds text. A table is compared with a grid of its shape whose texts it shares."""
    lost = 0
    for table in tables:
        grid = next((g for g in grids if _same_table(table, g)), None)
        if grid is None:
            continue
        for r, row in enumerate(table.rows):
            for c, cell in enumerate(row):
                position = grid[r][c]
                if not cell and position.covered and position.text:
                    lost += 1
    return lost


def _same_table(table: Table, grid: Grid) -> bool:
    if len(grid) != len(table.rows):
        return False
    if any(len(row) != len(cells) for row, cells in zip(table.rows, grid, strict=True)):
        return False
    output = [_clean(cell) for row in table.rows for cell in row if cell.strip()]
    page = {cell.text for row in grid for cell in row if not cell.covered}
    return bool(output) and sum(text in page for text in output) >= len(output) / 2


def _clean(text: str) -> str:
    return " ".join(text.replace("*", "").split()).casefold()


def _position_centre(table: Any, r: int, c: int) -> tuple[float, float]:
    """The centre of a grid position a merged cell covers: its column's span from the rows
    where that column has a cell of its own, its row's from the row's own cells."""
    lefts, rights = [], []
    for row in table.rows:
        cells = row.cells
        if c < len(cells) and cells[c] is not None:
            lefts.append(cells[c][0])
            if c + 1 >= len(cells) or cells[c + 1] is not None:
                rights.append(cells[c][2])
    x0 = min(lefts) if lefts else table.bbox[0]
    x1 = min(rights) if rights else table.bbox[2]
    y0, y1 = table.rows[r].bbox[1], table.rows[r].bbox[3]
    return (x0 + x1) / 2, (y0 + y1) / 2


def _contains(box: Any, point: tuple[float, float]) -> bool:
    x0, y0, x1, y1 = (float(v) for v in box)
    return x0 <= point[0] <= x1 and y0 <= point[1] <= y1
