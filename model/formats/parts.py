"""Long Markdown cut into bounded parts, each a page of a format that has no pages of its own
(a Word file's text, a web page, a long sheet).

Cuts fall between blocks (paragraphs, lists, fenced code, tables), preferably before a heading;
a table longer than a part (a pipe table or an HTML one) is cut between rows, its header
repeated on every part, and only a single paragraph longer than a part is cut inside (between
lines, then words).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

# About one printed page of prose (an A4 page of 11-point text holds 3,000-3,500 characters).
PART_CHARS = 4000
_HEADING = re.compile(r"^#{1,6} ")
_FENCE = re.compile(r"^(```|~~~)")
_HTML_TABLE = re.compile(r"<table\b.*</table>", re.DOTALL)
_HTML_ROW = re.compile(r"<tr\b.*?</tr>", re.DOTALL)
_TABLE_RULE = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def split_markdown(markdown: str, max_chars: int = PART_CHARS) -> list[str]:
    """The parts, in order, each at most ``max_chars`` long (a part holding a table header and
    one row longer than that is the only exception); at least one part, maybe empty."""
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for block in _pieces(_blocks(markdown), max_chars):
        added = len(block) + (2 if current else 0)
        heading_break = _HEADING.match(block) and size > max_chars // 2
        if current and (size + added > max_chars or heading_break):
            parts.append("\n\n".join(current))
            current, size = [], 0
            added = len(block)
        current.append(block)
        size += added
    if current or not parts:
        parts.append("\n\n".join(current))
    return parts


def _blocks(markdown: str) -> list[str]:
    """Blank-line separated blocks; a fenced code block stays one block, blank lines and all."""
    blocks: list[str] = []
    lines: list[str] = []
    fenced = False
    for line in markdown.replace("\r\n", "\n").split("\n"):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        if not line.strip() and not fenced:
            if lines:
                blocks.append("\n".join(lines))
                lines = []
            continue
        lines.append(line)
    if lines:
        blocks.append("\n".join(lines))
    return blocks


def _pieces(blocks: list[str], max_chars: int) -> Iterator[str]:
    for block in blocks:
        if len(block) <= max_chars:
            yield block
        elif _is_table(block):
            yield from _table_pieces(block, max_chars)
        elif _HTML_TABLE.fullmatch(block):
            # A table in a table's cell is kept whole: its rows cannot be told apart by pattern.
            yield from (
                _html_table_pieces(block, max_chars) if block.count("<table") == 1 else [block]
            )
        else:
            yield from _text_pieces(block, max_chars)


def _is_table(block: str) -> bool:
    lines = block.split("\n")
    return (
        len(lines) >= 2
        and lines[0].lstrip().startswith("|")
        and bool(_TABLE_RULE.match(lines[1].strip()))
    )


def _table_pieces(block: str, max_chars: int) -> Iterator[str]:
    """Row ranges of a long table, each with the table's header."""
    lines = block.split("\n")
    header, rows = lines[:2], lines[2:]
    piece = list(header)
    size = sum(len(line) + 1 for line in header)
    for row in rows:
        if len(piece) > 2 and size + len(row) + 1 > max_chars:
            yield "\n".join(piece)
            piece = list(header)
            size = sum(len(line) + 1 for line in header)
        piece.append(row)
        size += len(row) + 1
    yield "\n".join(piece)


def _html_table_pieces(block: str, max_chars: int) -> Iterator[str]:
    """Row ranges of a long HTML table (``table_format`` html or auto), each a whole table
    with the table's header rows (its leading rows of ``<th>`` cells only)."""
    rows = _HTML_ROW.findall(block)
    header_count = 0
    while header_count < len(rows) - 1 and "<td" not in rows[header_count]:
        header_count += 1
    header, body = rows[:header_count], rows[header_count:]
    opening, closing = "<table><tbody>", "</tbody></table>"
    base = len(opening) + len(closing) + sum(len(row) for row in header)
    piece: list[str] = []
    size = base
    for row in body:
        if piece and size + len(row) > max_chars:
            yield opening + "".join(header + piece) + closing
            piece, size = [], base
        piece.append(row)
        size += len(row)
    yield opening + "".join(header + piece) + closing


def _text_pieces(block: str, max_chars: int) -> Iterator[str]:
    piece = ""
    for line in block.split("\n"):
        while len(line) > max_chars:
            cut = line.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            if piece:
                yield piece
                piece = ""
            yield line[:cut]
            line = line[cut:].lstrip()
        if piece and len(piece) + 1 + len(line) > max_chars:
            yield piece
            piece = ""
        piece = f"{piece}\n{line}" if piece else line
    if piece:
        yield piece


def split_exactly(markdown: str, count: int) -> list[str]:
    """``markdown`` in exactly ``count`` parts of about equal length, cut between blocks (a
    long table between rows, header repeated). Parts past the end of a short text are empty:
    the page count was fixed before the conversion, from the text's length."""
    if count <= 1:
        return [markdown.strip()]
    limit = max(math.ceil(len(markdown) / count), 200)
    pieces = list(_pieces(_blocks(markdown), limit))
    total = sum(len(piece) for piece in pieces) or 1
    bins: list[list[str]] = [[] for _ in range(count)]
    done = 0
    for piece in pieces:
        index = min(count - 1, int(done * count / total))
        bins[index].append(piece)
        done += len(piece)
    return ["\n\n".join(part) for part in bins]
