"""Tables on a scan: runs of OCR lines that split into the same columns, written as pipe
tables or HTML (a ruled table's merged cells from its rules, ``model.ruled_grid``)."""

from __future__ import annotations

import html

from model.ruled_grid import RuledPage, cells_html, ruled_cells
from model.scan_lines import BOX_PADDING, Line, TextBox

# A table is at least this many rows in a row of lines, each split by the OCR into at least
# two boxes that fall into the same columns ...
_TABLE_MIN_ROWS = 3
_TABLE_MIN_COLUMNS = 2
# ... and at least one row has this many cells (two boxes a line is also a justified line
# read in two pieces, or a label and its value).
_TABLE_WIDEST_ROW = 3


def table_run_end(lines: list[Line], start: int) -> int | None:
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


def _table_columns(rows: list[Line]) -> list[tuple[float, float]] | None:
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
    rows: list[Line], columns: list[list[float]], allowed: int
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
    pad = min(BOX_PADDING * box.height, 0.25 * (box.x1 - box.x0))
    return (box.x0 + pad, box.x1 - pad)


def _column_of(box: TextBox, columns: list[list[float]]) -> int:
    """The column the cell's ink overlaps most (a cell crossing a column's edge belongs
    where most of it is)."""
    x0, x1 = _ink(box)
    overlaps = [min(x1, c[1]) - max(x0, c[0]) for c in columns]
    return max(range(len(columns)), key=lambda i: (overlaps[i], -abs(box.cx - sum(columns[i]) / 2)))


def table_markdown(rows: list[Line], table_format: str, ruling: RuledPage | None = None) -> str:
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
