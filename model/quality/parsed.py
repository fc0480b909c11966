"""A page's output parsed once, for every quality signal.

Each signal used to parse the Markdown it judged for itself: followed through the code, one
page's trip through the signals turned the Markdown into plain text three times, parsed its
tables three times (four where the merged-cell check ran) and found its math spans twice.
``parse_page`` does each once; every signal reads the ``ParsedPage`` (``bench/signal_costs.py``
measures the signals' time per page before and after).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from model.plaintext import markdown_to_text
from model.quality.checks import math_spans
from model.tables import Table, markdown_tables, parse_html_tables

_CODE_FENCE = re.compile(r"```.*?```", re.S)
_MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]|\$[^$\n]+\$|\\\(.*?\\\)", re.S)


@dataclass(frozen=True)
class ParsedPage:
    """What the signals read of one page's output."""

    markdown: str
    # The words and their order without markup (``model.plaintext``), NFC.
    text: str
    # Whitespace-separated tokens of the Markdown as written (the repetition check's unit).
    tokens: tuple[str, ...]
    pipe_tables: tuple[Table, ...]
    html_tables: tuple[Table, ...]
    # What is wrong with the HTML tables' tags (unbalanced, left open).
    html_problems: tuple[str, ...]
    # The LaTeX of every $…$, $$…$$, \(…\) and \[…\] span.
    math: tuple[str, ...]
    # The paragraphs outside code blocks, with the math spans taken out: the prose.
    prose_blocks: tuple[str, ...]

    @property
    def tables(self) -> tuple[Table, ...]:
        return self.pipe_tables + self.html_tables

    @property
    def tables_with_gaps(self) -> list[Table]:
        """The tables with an empty cell other than the top-left corner (often empty on
        purpose, above the row headings): the merged-cell check judges these."""
        return [
            table
            for table in self.tables
            if any(
                not cell and (r, c) != (0, 0)
                for r, row in enumerate(table.rows)
                for c, cell in enumerate(row)
            )
        ]


def parse_page(markdown: str) -> ParsedPage:
    html, problems = parse_html_tables(markdown)
    prose = _MATH.sub(" ", _CODE_FENCE.sub("\n\n", markdown))
    return ParsedPage(
        markdown=markdown,
        text=unicodedata.normalize("NFC", markdown_to_text(markdown)),
        tokens=tuple(markdown.split()),
        pipe_tables=tuple(markdown_tables(markdown)),
        html_tables=tuple(html),
        html_problems=tuple(problems),
        math=tuple(math_spans(markdown)),
        prose_blocks=tuple(block.strip() for block in prose.split("\n\n")),
    )
