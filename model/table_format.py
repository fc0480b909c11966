"""The ``auto`` table format: a Markdown pipe table for a simple grid, HTML where cells merge.

A pipe table cannot say that a cell spans two rows or columns; HTML can, but is heavier to
read. ``auto`` takes the engine's HTML tables and writes each one that has no merged cell as
a pipe table (a line break inside a cell stays a ``<br>``, which pipe tables allow).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from model.steps import page_step, unchanged
from model.table_rows import join_continuation_rows

_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL | re.IGNORECASE)


class _Grid(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.header_rows = 0
        self.merged = False
        self.nested = 0
        self._cell: list[str] | None = None
        self._row_is_header = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.nested += 1
        elif tag == "tr":
            self.rows.append([])
            self._row_is_header = True
        elif tag in ("td", "th"):
            spans = {k: v for k, v in attrs if k in ("rowspan", "colspan")}
            if any((v or "1").strip() not in ("", "1") for v in spans.values()):
                self.merged = True
            self._row_is_header &= tag == "th"
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("<br>")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif (
            tag == "tr"
            and self.rows
            and self._row_is_header
            and len(self.rows) == (self.header_rows + 1)
        ):
            self.header_rows += 1

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


@page_step("table format", fallback=unchanged)
def html_tables(markdown: str) -> str:
    """The ``html`` format: HTML tables, stacked rows split."""
    return _TABLE.sub(
        lambda m: split_stacked_rows(join_continuation_rows(str(m.group(0)))), markdown
    )


def pipe_table(table_html: str) -> str | None:
    """The table as a pipe table, or None if it merges cells (or nests tables, or is not a
    grid a pipe table can hold)."""
    grid = _Grid()
    grid.feed(table_html)
    grid.close()
    rows = [row for row in grid.rows if row]
    if grid.merged or grid.nested != 1 or not rows or grid.header_rows > 1:
        return None
    width = max(len(row) for row in rows)
    if any(len(row) != width for row in rows):
        return None

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
