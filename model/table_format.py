"""The ``auto`` table format: a Markdown pipe table for a simple grid, HTML where cells merge.

A pipe table cannot say that a cell spans two rows or columns; HTML can, but is heavier to
read. ``auto`` takes the engine's HTML tables and writes each one that has no merged cell as
a pipe table (a line break inside a cell stays a ``<br>``, which pipe tables allow).
"""

from __future__ import annotations

import re

from model.steps import page_step, unchanged
from model.table_rows import join_continuation_rows
from model.tables import parse_html_tables

_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL | re.IGNORECASE)


@page_step("table format", fallback=unchanged)
def html_tables(markdown: str) -> str:
    """The ``html`` format: HTML tables, stacked rows split."""
    return _TABLE.sub(
        lambda m: split_stacked_rows(join_continuation_rows(str(m.group(0)))), markdown
    )


def pipe_table(table_html: str) -> str | None:
    """The table as a pipe table, or None if it merges cells (or nests tables, or is not a
    grid a pipe table can hold): read by the table model every output shares
    (``model.tables``), a line break inside a cell kept as ``<br>``."""
    tables = parse_html_tables(table_html)[0]
    if len(tables) != 1:  # none, or a table nested in another
        return None
    table = tables[0]
    if table.merged or table.ragged or table.header_rows > 1:
        return None
    written: dict[int, list[str]] = {}
    for cell in table.cells:
        written.setdefault(cell.row, []).append("<br>".join(cell.lines))
    rows = [written[r] for r in sorted(written)]
    if not rows or len({len(row) for row in rows}) != 1:
        return None
    width = len(rows[0])

    def line(cells: list[str]) -> str:
        return "|" + "|".join(c.replace("|", "\\|") for c in cells) + "|"

    lines = [line(rows[0]), "|" + "---|" * width, *(line(row) for row in rows[1:])]
    return "\n".join(lines)


# A row whose cells each stack the same number of short values, one per line, is that many
# rows the extractor read as one (a paper's "OTSL / HTML" pairs): at least this many cells
# stack, and each stacked value is at most this long.
_STACKED_MIN_CELLS = 3
_STACKED_MAX_CHARS = 24
_ROW = re.compile(r"<tr>(.*?)</tr>", re.DOTALL)
_CELL = re.compile(r"<(td|th)((?:\s[^>]*)?)>(.*?)</\1>", re.DOTALL)
_BREAK = re.compile(r"<br\s*/?>")


def split_stacked_rows(table_html: str) -> str:
    """Rows that stack k values in their cells, as k rows; a cell with one value spans them."""

    def split(match: re.Match[str]) -> str:
        cells = _CELL.findall(match.group(1))
        if not cells or any(attrs.strip() for _, attrs, _ in cells):
            return str(match.group(0))
        parts = [[p.strip() for p in _BREAK.split(body)] for _, _, body in cells]
        counts = {len(p) for p in parts if len(p) > 1}
        stacked = sum(1 for p in parts if len(p) > 1)
        if len(counts) != 1 or stacked < _STACKED_MIN_CELLS:
            return str(match.group(0))
        if any(len(v) > _STACKED_MAX_CHARS for p in parts for v in p):
            return str(match.group(0))
        k = counts.pop()
        rows = []
        for i in range(k):
            row = ""
            for (tag, _, _), values in zip(cells, parts, strict=True):
                if len(values) == 1:
                    if i == 0:
                        row += f'<{tag} rowspan="{k}">{values[0]}</{tag}>'
                    continue
                row += f"<{tag}>{values[i]}</{tag}>"
            rows.append(f"<tr>{row}</tr>")
        return "".join(rows)

    return _ROW.sub(split, table_html)


@page_step("table format", fallback=unchanged)
def auto_tables(markdown: str) -> str:
    """Each HTML table without merged cells in ``markdown`` written as a pipe table (stacked
    rows split first)."""

    def simplify(match: re.Match[str]) -> str:
        html = split_stacked_rows(join_continuation_rows(str(match.group(0))))
        table = pipe_table(html)
        return html if table is None else table

    return _TABLE.sub(simplify, markdown)
