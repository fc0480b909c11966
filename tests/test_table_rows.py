"""Table rows whole (``model.table_rows``): a wrapped cell's line that became a row of its
own joined back, and rows of their own left as they are; then the engine on a PDF whose
table wraps one cell of a row."""

from __future__ import annotations

import pymupdf
import pytest

from model import pipeline
from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.table_rows import join_continuation_rows

HEAD = "<tr><th>Part</th><th>Material</th><th>Use</th></tr>"


def table(*rows: tuple[str, ...]) -> str:
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{HEAD}{body}</table>"


def test_a_wrapped_cells_line_joins_its_row():
    split = table(("Elastic", "aluminum alloy", "general use"), ("stop nut", "", ""))
    assert join_continuation_rows(split) == table(
        ("Elastic stop nut", "aluminum alloy", "general use")
    )
    hyphenated = table(("Boots", "cadmium-", "mounts"), ("", "plated steel", ""))
    assert join_continuation_rows(hyphenated) == table(("Boots", "cadmium-plated steel", "mounts"))


def test_rows_of_their_own_stay():
    for rows in (
        (("Fruit", "apple", "red"), ("Vegetables", "", "")),  # a section row: a capital
        (("Wing nut", "alloy", "by hand."), ("", "", "see note")),  # the cell above ends
        (("Wing nut", "", "by hand"), ("", "steel", "")),  # nothing above it to continue
        (("Wing nut", "alloy", "by hand"), ("wing bolt", "steel", "by tool")),  # a full row
    ):
        assert join_continuation_rows(table(*rows)) == table(*rows)
    # the header is never continued
    headed = "<table><tr><th>Part</th><th>Use</th></tr><tr><td>nut</td><td></td></tr></table>"
    assert join_continuation_rows(headed) == headed


def wrapped_table_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    rows = "".join(
        f"<tr><td>{a}</td><td>{b}</td><td>{c}</td></tr>"
        for a, b, c in (
            ("Boots nut", "cadmium-plated carbon steel or stainless steel", "engine mounts"),
            ("Elastic stop nut", "aluminum alloy", "general use"),
            ("Wing nut", "anodized aluminum alloy", "where it is taken off by hand often"),
        )
    )
    html = (
        "<p>Before the table comes a paragraph of ordinary text.</p>"
        '<table border="1" style="border-collapse:collapse">'
        f"<tr><th>Part</th><th>Material</th><th>Use</th></tr>{rows}</table>"
        "<p>After the table, more text.</p>"
    )
    page.insert_htmlbox(pymupdf.Rect(72, 72, 400, 500), html)
    return doc.tobytes()


@pytest.mark.slow
def test_the_engine_keeps_a_row_whose_first_cell_wraps_whole():
    result = pipeline.transcribe_page(
        LocalEngine(), PageInput(wrapped_table_pdf(), "application/pdf", 1), EngineOptions()
    )
    assert "|Elastic stop nut|aluminum alloy|general use|" in result.markdown
    assert "|stop nut|" not in result.markdown
