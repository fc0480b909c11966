"""The layout's tables are the page's tables: each table a block holds is replaced by the
page Markdown's table it reads as, so that blocks, chunks, the viewer and the searchable PDF
show the cells the Markdown shows, spans included.

The engines lay a page out from their raw reading (pymupdf4llm's boxes carry the Markdown
they produced, before the table format and the repairs: a paper's table whose rows the
extractor stacked, "OTSL<br/>HTML" in one cell, is two rows only in the page's Markdown after
``model.table_format`` split them). The page's Markdown is where every table is decided; this
step carries its tables into the blocks, matched in reading order by the words of their cells
(the table model of ``model.tables``).

A page without geometry (a unit of an Office document, an engine that says nothing about
where its text is) is laid out from its Markdown instead (``markdown_layout``): each table a
``table`` block of its own, which chunks never cut.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from model.layout.schema import Block, PageLayout
from model.steps import page_step
from model.tables import Table, table_of, table_spans

# A block's table is the page's table when this share of the larger one's cell words is
# common to both: the repairs change a word here and there (accents, ligatures, a number's
# digits), the table format only how cells are cut.
MIN_SHARED_WORDS = 0.5
_WORD = re.compile(r"\w+")


def _unchanged(layout: PageLayout, markdown: str) -> PageLayout:
    return layout


@page_step("table blocks", fallback=_unchanged)
def tables_from_markdown(layout: PageLayout, markdown: str) -> PageLayout:
    """``layout`` with each table its blocks hold written as the page Markdown's table it
    matches (in reading order); a block that is only a table is a ``table`` block."""
    page_tables = [markdown[start:end] for start, end in table_spans(markdown)]
    if not page_tables:
        return layout
    words = [_cell_words(table_of(text)) for text in page_tables]
    cursor = 0  # the page's tables are met in the order the blocks are read
    blocks: list[Block] = []
    for block in layout.blocks:
        spans = table_spans(block.markdown)
        if not spans:
            blocks.append(block)
            continue
        pieces, last = [], 0
        for start, end in spans:
            found = _match(_cell_words(table_of(block.markdown[start:end])), words, cursor)
            pieces.append(block.markdown[last:start])
            if found is None:
                pieces.append(block.markdown[start:end])
            else:
                pieces.append(page_tables[found])
                cursor = found + 1
            last = end
        pieces.append(block.markdown[last:])
        text = "".join(pieces)
        only_table = len(spans) == 1 and table_spans(text.strip()) == [(0, len(text.strip()))]
        kind, level = ("table", None) if only_table else (block.type, block.level)
        blocks.append(replace(block, type=kind, markdown=text, level=level))
    return replace(layout, blocks=blocks)


def _cell_words(table: Table | None) -> Counter[str]:
    if table is None:
        return Counter()
    return Counter(w.lower() for cell in table.cells for w in _WORD.findall(cell.text))


def _match(found: Counter[str], tables: list[Counter[str]], cursor: int) -> int | None:
    """The first of the page's tables from ``cursor`` on that shares enough words."""
    for index in range(cursor, len(tables)):
        larger = max(sum(found.values()), sum(tables[index].values()))
        if larger and sum((found & tables[index]).values()) / larger >= MIN_SHARED_WORDS:
            return index
    return None


# --- pages without geometry -----------------------------------------------------------------


def markdown_layout(markdown: str, size: tuple[float, float]) -> PageLayout:
    """A page that says nothing about where its text is, as blocks from its Markdown: its
    tables whole, the text between them a block each (a page without a table is one block
    over the page). Each block is a band of the page as tall as its share of the page's lines
    of text (a place in reading order, not a measured box: the layout's ``source`` is
    ``page``)."""
    width, height = size
    parts = _parts(markdown)
    lines = [max(1, len(searchable_lines(text))) for _, text in parts]
    total = sum(lines) or 1
    blocks, top = [], 0.0
    for (kind, text), count in zip(parts, lines, strict=True):
        bottom = top + height * count / total
        blocks.append(Block(kind, text, (0.0, top, width, bottom)))
        top = bottom
    return PageLayout(width, height, blocks, "page")


def searchable_lines(markdown: str) -> list[str]:
    """A block's text as the lines a reader searches for, markup dropped: a table's rows one
    line each, its cells as the table model reads them (a cell spanning rows in the row it
    starts in)."""
    lines: list[str] = []
    last = 0
    for start, end in table_spans(markdown):
        lines += _plain_lines(markdown[last:start])
        table = table_of(markdown[start:end])
        lines += table.text_rows() if table is not None else []
        last = end
    return lines + _plain_lines(markdown[last:])


def _plain_lines(markdown: str) -> list[str]:
    text = re.sub(r"^#{1,6}\s+", "", markdown, flags=re.MULTILINE)
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", text, flags=re.MULTILINE)
    text = re.sub(r"<br\s*/?>", "\n", text, flags=re.IGNORECASE)
    text = re.sub(r"</?(?:sup|sub)>", "", text, flags=re.IGNORECASE)
    text = re.sub(r"[*_`]+", " ", text)
    text = re.sub(r"^\s*-{3,}\s*$", "", text, flags=re.MULTILINE)
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def _parts(markdown: str) -> list[tuple[str, str]]:
    """The Markdown cut at its tables: the text between them one paragraph each."""
    parts: list[tuple[str, str]] = []
    last = 0
    for start, end in table_spans(markdown):
        parts.append(("paragraph", markdown[last:start].strip()))
        parts.append(("table", markdown[start:end].strip()))
        last = end
    parts.append(("paragraph", markdown[last:].strip()))
    return [(kind, text) for kind, text in parts if text]
