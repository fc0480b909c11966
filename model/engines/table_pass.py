"""pymupdf4llm's HTML table pass, skipped on pages where it cannot find a table.

Asked for HTML tables (``table_output="html"``, which the engine's default ``auto`` tables
need), pymupdf4llm runs ``page.find_tables(use_layout=True, union=True, refine=True)`` on
every page, table or not. Its tables come from two sources only: the layout model's table
boxes, and grids of ruling lines among the page's vector drawings (a nested line-based
finder). On a page with neither the answer is empty, yet the finder first turns every glyph
into a character record in Python: measured on the real set's text-layer pages, that pass
was a third of pymupdf4llm's time, and the largest share of what the engine spent beyond
bare ``pymupdf4llm.to_markdown`` (``bench/local_speed.py``).

``install`` wraps pymupdf4llm's ``page_html_tables`` so that such a page gets the empty
answer at once; every other page runs the finder as before, so the Markdown is the same.
"""

from __future__ import annotations

from typing import Any

import pymupdf

_installed = False


def cannot_hold_table(page: pymupdf.Page) -> bool:
    """Whether ``find_tables(union=True)`` has nothing to find on the page: the layout model
    (its raw result, already on the page) saw no table, and the page draws no vector path
    from which a ruled grid could be built."""
    layout = page.layout_information
    if layout is None:
        return False  # the layout model has not run: find_tables would run it
    if any(not isinstance(group, dict) or group.get("class_name") == "table" for group in layout):
        return False
    return not page.get_cdrawings()


def install() -> None:
    """Put the wrapper in place of pymupdf4llm's ``page_html_tables`` (once a process).
    pymupdf4llm imports it from its module at each page, so the wrapper is what it calls."""
    global _installed
    if _installed:
        return
    from pymupdf4llm.helpers import table_html

    original = table_html.page_html_tables

    def page_html_tables(page: pymupdf.Page) -> list[Any]:
        if cannot_hold_table(page):
            return []
        return list(original(page))

    table_html.page_html_tables = page_html_tables
    _installed = True
