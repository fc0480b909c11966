"""The one table model behind every output: the tables of a page's Markdown (pipe tables and
HTML tables), their written cells with their spans, and where each table stands in the text.

The page's Markdown is where a table is decided (``model.table_format``); the layout's table
blocks take their text from it (``model.layout.table_blocks``), the searchable PDF sets each
row's cells from this model, and the quality signals read its grids. A test compares what
each output shows cell by cell (``tests/test_table_agreement.py``).

Merged cells are expanded in ``rows`` the way olmOCR-Bench does it: a cell spanning two
columns or rows fills every grid position it covers, so that "the cell to the right of X"
means the same thing whether a transcription merged cells or repeated them; ``cells`` keeps
each cell as written, with its spans.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass(frozen=True)
class Cell:
    """A cell as written: its top-left grid position, its spans, its text (line breaks as
    spaces) and its lines (split at its line breaks)."""

    row: int
    col: int
    rowspan: int
    colspan: int
    text: str
    lines: tuple[str, ...]
    header: bool = False


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
    # Each cell as written, in reading order, with its spans.
    cells: list[Cell] = field(default_factory=list)

    @property
    def merged(self) -> bool:
        """Whether a cell spans more than one row or column."""
        return any(cell.rowspan > 1 or cell.colspan > 1 for cell in self.cells)

    def text_rows(self) -> list[str]:
        """Each grid row's own cells' text, one line a row (a cell spanning rows is in the row
        it starts in): what a reader searches the table for."""
        rows: dict[int, list[str]] = {}
        for cell in self.cells:
            rows.setdefault(cell.row, []).append(cell.text)
        return [" ".join(t for t in rows[r] if t) for r in sorted(rows) if any(rows[r])]

    @property
    def width(self) -> int:
        return max((len(row) for row in self.rows), default=0)

    def cell(self, row: int, col: int) -> str:
        if 0 <= row < len(self.rows) and 0 <= col < len(self.rows[row]):
            return self.rows[row][col]
        return ""


# The delimiter row: a run of dashes a cell (GitHub's tables take one dash, as docling writes).
_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


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
        rows.append([cell.strip() for cell in _PIPE_SPLIT.split(inner)])
    if not rows:
        return None
    ragged = len({len(row) for row in rows}) > 1
    cells = []
    for r, row in enumerate(rows):
        for c, written in enumerate(row):
            parts = _BREAK.split(written.replace("\\|", "|"))
            texts = _lines(parts)
            cells.append(Cell(r, c, 1, 1, " ".join(texts).strip(), texts, r < header_rows))
    return Table(rows=rows, header_rows=header_rows, ragged=ragged, heading=heading, cells=cells)


# A pipe table's cells are split at pipes that are not escaped (``\|`` is a pipe in a cell).
_PIPE_SPLIT = re.compile(r"(?<!\\)\|")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def _lines(parts: list[str]) -> tuple[str, ...]:
    return tuple(" ".join(part.split()) for part in parts)


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
            self._cell.text.append("\n")

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
    cells: list[Cell] = []
    for r, row in enumerate(rows):
        c = 0
        for cell in row:
            while (r, c) in grid:
                c += 1
            written = "".join(cell.text)
            text = " ".join(written.split())
            lines = _lines(written.split("\n"))
            cells.append(Cell(r, c, cell.rowspan, cell.colspan, text, lines, cell.heading))
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
        cells=cells,
    )


def all_tables(text: str) -> list[Table]:
    return markdown_tables(text) + html_tables(text)


def table_spans(text: str) -> list[tuple[int, int]]:
    """Where each table of a Markdown text stands, as ``(start, end)`` offsets in reading
    order: a pipe table (a run of pipe lines, its second the delimiter row), or an outermost
    ``<table>`` … ``</table>`` (nested tables stay inside the one that holds them)."""
    spans = _html_spans(text)
    offset = 0
    run: list[tuple[int, int, str]] = []  # the pipe lines in a row: start, end, text

    def close() -> None:
        # A pipe table is a header line and a delimiter row at least (what a Markdown
        # renderer draws as a table); pipes without one are text.
        if len(run) >= 2 and _RULE.match(run[1][2]):
            spans.append((run[0][0], run[-1][1]))
        run.clear()

    for line in text.split("\n"):
        end = offset + len(line)
        stripped = line.strip()
        inside = any(start <= offset < stop for start, stop in spans)
        if not inside and len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|"):
            run.append((offset, end, stripped))
        else:
            close()
        offset = end + 1
    close()
    return sorted(spans)


_TABLE_TAG = re.compile(r"<(/?)table\b[^>]*>", re.IGNORECASE)


def _html_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    depth, start = 0, 0
    for match in _TABLE_TAG.finditer(text):
        if not match.group(1):
            if depth == 0:
                start = match.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                spans.append((start, match.end()))
    return spans


def table_of(text: str) -> Table | None:
    """The one table ``text`` holds (a pipe table or an HTML table, its nested tables aside),
    or None where it holds none."""
    text = text.strip()
    if text.lower().startswith("<table"):
        tables = html_tables(text)
        return tables[-1] if tables else None  # the outermost closes last
    tables = markdown_tables(text)
    return tables[0] if tables else None
