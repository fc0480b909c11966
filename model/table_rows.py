"""Table rows whole: a cell's wrapped line that the extractor made a row of its own joined
back to the row it belongs to.

pymupdf's table finder cuts a row where one cell's text wraps and the others' does not: a
parts list's "Elastic stop nut" comes out as a row "Elastic | aluminum alloy | general use"
and a row "stop nut | | ". Such a row is a continuation when

- some of its cells are empty and every filled one sits under a filled cell of the row above
  (a section row, "Vegetables | | ", sits under nothing it continues only by chance: see the
  next rule);
- each filled cell goes on in lower case (a wrapped line continues a phrase; a row of its own
  starts with a capital, a digit or a mark), and the cell above does not end a sentence.

Only rows of plain cells (no ``colspan``/``rowspan``), in one table with a row above them;
header rows are never joined to. The text is joined with a space (none after a hyphen)."""

from __future__ import annotations

import re

_ROW = re.compile(r"<tr>(.*?)</tr>", re.DOTALL)
_CELL = re.compile(r"<(td|th)((?:\s[^>]*)?)>(.*?)</\1>", re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")
_SENTENCE_END = (".", "!", "?", ":", ";")


def join_continuation_rows(table_html: str) -> str:
    """The table with each continuation row's cells appended to the row above's."""
    rows = list(_ROW.finditer(table_html))
    if len(rows) < 2:
        return table_html
    cells = [_CELL.findall(row.group(1)) for row in rows]
    kept: list[list[tuple[str, str, str]]] = []
    for row in cells:
        above = kept[-1] if kept else None
        if above is not None and _continues(above, row):
            kept[-1] = [
                (tag, attrs, _joined(body, more[2]))
                for (tag, attrs, body), more in zip(above, row, strict=True)
            ]
            continue
        kept.append(row)
    if len(kept) == len(cells):
        return table_html
    body = "".join(
        "<tr>" + "".join(f"<{tag}{attrs}>{text}</{tag}>" for tag, attrs, text in row) + "</tr>"
        for row in kept
    )
    return table_html[: rows[0].start()] + body + table_html[rows[-1].end() :]


def _text(body: str) -> str:
    return " ".join(_TAGS.sub(" ", body).split())


def _continues(above: list[tuple[str, str, str]], row: list[tuple[str, str, str]]) -> bool:
    if len(above) != len(row) or not row:
        return False
    if any(attrs.strip() for _, attrs, _ in above + row):
        return False
    if all(tag == "th" for tag, _, _ in above) or any(tag == "th" for tag, _, _ in row):
        return False  # a header is never continued, nor a data row by a header
    filled = [i for i, (_, _, body) in enumerate(row) if _text(body)]
    if not filled or len(filled) == len(row):
        return False
    for i in filled:
        over, text = _text(above[i][2]), _text(row[i][2])
        if not over or over.endswith(_SENTENCE_END) or not text[0].islower():
            return False
    return True


def _joined(body: str, more: str) -> str:
    if not _text(more):
        return body
    if not _text(body):
        return more
    separator = "" if _text(body).endswith("-") else " "
    return body.rstrip() + separator + more.lstrip()
