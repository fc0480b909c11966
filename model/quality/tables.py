"""Tables found in Markdown output, as rectangular grids: pipe tables and HTML tables.

Merged cells are expanded the way olmOCR-Bench does it: a cell spanning two columns or rows
fills every grid position it covers, so that "the cell to the right of X" means the same
thing whether a transcription merged cells or repeated them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Table:
    rows: list[list[str]]
    # How many leading rows are headings (<th> rows, <thead>, a pipe table's first row).
    header_rows: int = 0
    # Its rows, as written, cover different numbers of columns (spans counted): a pipe table's
    # rows of different widths, an HTML table whose colspans and rowspans do not square.
    ragged: bool = False
    # The last Markdown heading above it ("" where none): a table of contents is known by it.
    heading: str = ""

    @property
    def width(self) -> int:
        return max((len(row) for row in self.rows), default=0)

    def cell(self, row: int, col: int) -> str:
        if 0 <= row < len(self.rows) and 0 <= col < len(self.rows[row]):
            return self.rows[row][col]
        return ""


_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def markdown_tables(text: str) -> list[Table]:
    tables: list[Table] = []
    block: list[str] = []
    heading = ""
    for line in [*text.split("\n"), ""]:
        if line.strip().startswith("|") and line.strip().endswith("|") and len(line.strip()) > 1:
            block.append(line.strip())
            continue
        if block:
            table = _pipe_table(block, heading)
            if table is not None:
                tables.append(table)
            block = []
        if line.startswith("#"):
            heading = line
    return tables


def _pipe_table(lines: list[str], heading: str = "") -> Table | None:
    rows: list[list[str]] = []
    header_rows = 0
    for index, line in enumerate(lines):
        if _RULE.match(line):
            if index == 1:
                header_rows = 1
            continue
        # One pipe opens the row and one closes it: ``|X||X||`` ends in two empty cells, which
        # ``strip("|")`` would take away with the closing pipe.
        inner = line[1:-1] if len(line) > 1 else ""
        rows.append([cell.strip() for cell in inner.split("|")])
    if not rows:
        return None
    ragged = len({len(row) for row in rows}) > 1
    return Table(rows=rows, header_rows=header_rows, ragged=ragged, heading=heading)


@dataclass
class _Cell:
    text: list[str] = field(default_factory=list)
    colspan: int = 1
    rowspan: int = 1
    heading: bool = False


_TABLE_TAGS = ("table", "thead", "tbody", "tfoot", "tr", "td", "th")


class _TableParser(HTMLParser):
    """The tables of a text, and whether their tags balance (``problems``): one pass."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[_Cell]]] = []
        self.thead_rows: list[int] = []
        self.problems: list[str] = []
        self._open: list[str] = []  # the table tags open now, for their balance
        self._stack: list[list[list[_Cell]]] = []
        self._thead_stack: list[int] = []
        self._in_thead = False
        self._cell: _Cell | None = None

    def close(self) -> None:
        super().close()
        self.problems += [f"<{tag}> not closed" for tag in self._open if tag in ("table", "tr")]

    def _balance_start(self, tag: str) -> None:
        if tag in _TABLE_TAGS:
            self._open.append(tag)

    def _balance_end(self, tag: str) -> None:
        if tag not in _TABLE_TAGS:
            return
        if tag not in self._open:
            self.problems.append(f"</{tag}> without <{tag}>")
            return
        while self._open and self._open[-1] != tag:
            # An unclosed <td> before </tr> is valid HTML; an unclosed <table> is not.
            if self._open[-1] in ("table", "tr"):
                self.problems.append(f"<{self._open[-1]}> not closed before </{tag}>")
            self._open.pop()
        self._open.pop()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._balance_start(tag)
        if tag == "table":
            self._stack.append([])
            self._thead_stack.append(0)
        elif not self._stack:
            return
        elif tag == "thead":
            self._in_thead = True
        elif tag == "tr":
            self._stack[-1].append([])
            if self._in_thead:
                self._thead_stack[-1] += 1
        elif tag in ("td", "th"):
            values = dict(attrs)
            self._cell = _Cell(
                colspan=_span(values.get("colspan")),
                rowspan=_span(values.get("rowspan")),
                heading=tag == "th",
            )
            if not self._stack[-1]:
                self._stack[-1].append([])
            self._stack[-1][-1].append(self._cell)
        elif tag == "br" and self._cell is not None:
            self._cell.text.append(" ")

    def handle_endtag(self, tag: str) -> None:
        self._balance_end(tag)
        if tag == "table" and self._stack:
            self.tables.append(self._stack.pop())
            self.thead_rows.append(self._thead_stack.pop())
            self._cell = None
        elif tag == "thead":
            self._in_thead = False
        elif tag in ("td", "th"):
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.text.append(data)


def _span(value: str | None) -> int:
    try:
        return max(1, min(int(value or 1), 1000))
    except ValueError:
        return 1


def html_tables(text: str) -> list[Table]:
    return parse_html_tables(text)[0]


def parse_html_tables(text: str) -> tuple[list[Table], list[str]]:
    """The text's HTML tables, and what is wrong with their tags (a ``<table>`` or ``<tr>``
    left open, an end tag without its start): one parse for both."""
    lowered = text.lower()
    if "<table" not in lowered and "</table" not in lowered:
        return [], []
    parser = _TableParser()
    parser.feed(text)
    parser.close()
    tables = [
        _grid(rows, thead)
        for rows, thead in zip(parser.tables, parser.thead_rows, strict=True)
        if rows
    ]
    return tables, parser.problems


def _grid(rows: list[list[_Cell]], thead_rows: int) -> Table:
    grid: dict[tuple[int, int], str] = {}
    heading_rows: set[int] = set()
    # Grid positions each written row covers: its own cells' spans and the rowspans above
    # reaching down into it. Rows that cover different numbers make a ragged table.
    covered: dict[int, int] = {}
    for r, row in enumerate(rows):
        c = 0
        for cell in row:
            while (r, c) in grid:
                c += 1
            text = " ".join("".join(cell.text).split())
            for dr in range(cell.rowspan):
                for dc in range(cell.colspan):
                    grid[(r + dr, c + dc)] = text
                covered[r + dr] = covered.get(r + dr, 0) + cell.colspan
            c += cell.colspan
        if row and all(cell.heading for cell in row):
            heading_rows.add(r)
    widths = {covered.get(r, 0) for r in range(len(rows))}
    height = max(r for r, _ in grid) + 1 if grid else 0
    width = max(c for _, c in grid) + 1 if grid else 0
    header_rows = thead_rows
    while header_rows in heading_rows:
        header_rows += 1
    return Table(
        rows=[[grid.get((r, c), "") for c in range(width)] for r in range(height)],
        header_rows=header_rows,
        ragged=len(widths) > 1,
    )


def all_tables(text: str) -> list[Table]:
    return markdown_tables(text) + html_tables(text)
