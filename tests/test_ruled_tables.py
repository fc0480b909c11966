"""Merged cells of ruled tables on scans: where a row has no rule between two columns (and
at most one of them holds text) the cells are one, written with ``colspan`` under ``auto``
and ``html`` tables. An unruled table says nothing and stays a pipe table. The first tests
are pure (boxes and pixels drawn here); the last ones OCR whole pages (slow)."""

from __future__ import annotations

import io

import numpy as np
import pymupdf
import pytest

from model.engines.base import EngineOptions, PageInput
from model.quality.checks import TableTest
from model.quality.realpages import CORPUS, degrade, scan_page
from model.ruled_grid import RuledPage
from model.scan_layout import boxes_to_markdown
from model.scan_lines import TextBox
from model.tables import all_tables

# A four-column table: x borders at 100, 300, 500, 700, 900; rows 40 px tall from y = 100.
BORDERS = [100, 300, 500, 700, 900]
ROWS = [
    ["", "Indonesia", "Germany", "Austria"],
    ["Continent", "Asia", "Europe", ""],
    ["Capital", "Jakarta", "Berlin", "Vienna"],
]


def _boxes() -> list[TextBox]:
    boxes = []
    for r, cells in enumerate(ROWS):
        y = 110 + 40 * r
        for c, text in enumerate(cells):
            if not text:
                continue
            x = BORDERS[c] + 20
            if text == "Europe":  # centred over the last two columns
                x = 700 - 30
            boxes.append(TextBox(x, y, x + 60 + 6 * len(text), y + 22, text))
    return boxes


def _ruling(merged: bool = True, ruled: bool = True) -> RuledPage:
    pixels = np.full((400, 1000), 245, dtype=np.uint8)
    for r in range(len(ROWS) + 1):
        pixels[100 + 40 * r, 100:900] = 20
    for x in BORDERS:
        if x in (100, 900) or ruled:
            pixels[100:220, x - 1 : x + 1] = 20
    if merged:
        pixels[140:180, 699:701] = 245  # no rule between Germany's and Austria's cells
    return RuledPage(pixels)


def test_a_missing_rule_in_a_ruled_table_is_a_merged_cell():
    markdown = boxes_to_markdown(_boxes(), page_width=1000, table_format="auto", ruling=_ruling())
    assert '<td>Continent</td><td>Asia</td><td colspan="2">Europe</td></tr>' in markdown
    (table,) = all_tables(markdown)
    assert TableTest("t.pdf", 1, "t", "table", cell="Vienna", up="Europe").run(markdown)[0]
    assert table.rows[0] == ["", "Indonesia", "Germany", "Austria"]


def test_the_same_table_fully_ruled_or_unruled_or_as_markdown_stays_a_pipe_table():
    for ruling in (_ruling(merged=False), _ruling(ruled=False), None):
        markdown = boxes_to_markdown(_boxes(), page_width=1000, table_format="auto", ruling=ruling)
        assert "colspan" not in markdown and "\n|---|---|---|---|\n" in markdown, markdown
    markdown = boxes_to_markdown(
        _boxes(), page_width=1000, table_format="markdown", ruling=_ruling()
    )
    assert "colspan" not in markdown and "| Continent | Asia |" in markdown


def test_two_texts_with_no_rule_between_them_stay_two_cells():
    boxes = _boxes() + [TextBox(720, 150, 800, 172, "EU")]
    boxes = [b for b in boxes if b.text != "Europe"] + [TextBox(520, 150, 600, 172, "Europe")]
    markdown = boxes_to_markdown(boxes, page_width=1000, table_format="html", ruling=_ruling())
    assert "colspan" not in markdown and "<td>Europe</td><td>EU</td>" in markdown, markdown


def test_a_wrapped_cell_is_one_row_and_a_missing_rule_below_a_cell_is_a_rowspan():
    """Rules at x 100, 300, 500, 700 and y 100, 140, 200, 240; the second row's cells wrap
    onto a second line ("Alpha" / "beta", "12" / "(est.)"), and column 2 has no rule between
    the second and third rows: "First" reaches down over both."""
    pixels = np.full((300, 800), 245, dtype=np.uint8)
    for y in (100, 140, 200, 240):
        pixels[y, 100:700] = 20
    pixels[200, 301:499] = 245
    for x in (100, 300, 500, 700):
        pixels[100:240, x - 1 : x + 1] = 20

    def box(x: float, y: float, text: str) -> TextBox:
        return TextBox(x, y, x + 60 + 6 * len(text), y + 22, text)

    boxes = [box(120, 108, "Name"), box(320, 108, "Group"), box(520, 108, "Score")]
    boxes += [box(120, 146, "Alpha"), box(320, 146, "First"), box(520, 146, "12")]
    boxes += [box(120, 172, "beta"), box(520, 172, "(est.)")]
    boxes += [box(120, 210, "Gamma"), box(520, 210, "15")]
    markdown = boxes_to_markdown(
        boxes, page_width=800, table_format="auto", ruling=RuledPage(pixels)
    )
    assert (
        '<tr><td>Alpha beta</td><td rowspan="2">First</td><td>12 (est.)</td></tr>'
        "<tr><td>Gamma</td><td>15</td></tr>"
    ) in markdown, markdown
    test = TableTest("t.pdf", 1, "t", "table", cell="15", left="First", up="12 (est.)")
    assert test.run(markdown)[0]


def _drawn_table(ruled: bool) -> bytes:
    """A table drawn with PyMuPDF, "Europe" centred over three columns, scanned (150 dpi,
    1° askew, blurred, speckled, JPEG) as a PNG."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 90), "Countries of the example, by continent.", fontsize=11)
    xs = [72, 160, 250, 340, 430, 520]
    header = ["", "Indonesia", "Germany", "Austria", "France"]
    rows = [header, ["Continent", "Asia", "", "", ""], ["Capital", "Jakarta", "Berlin"]]
    rows[2] += ["Vienna", "Paris"]
    rows.append(["Currency", "Rupiah", "Euro", "Euro", "Euro"])
    for r, cells in enumerate(rows):
        y = 130 + 30 * r
        for c, text in enumerate(cells):
            page.insert_text((xs[c] + 8, y + 19), text, fontsize=11)
    page.insert_text((340 - 17, 160 + 19), "Europe", fontsize=11)
    if ruled:
        for r in range(len(rows) + 1):
            page.draw_line((72, 130 + 30 * r), (520, 130 + 30 * r), width=0.8)
        for c, x in enumerate(xs):
            page.draw_line((x, 130), (x, 160), width=0.8)
            page.draw_line((x, 190), (x, 250), width=0.8)
            if c in (0, 1, 2, 5):
                page.draw_line((x, 160), (x, 190), width=0.8)
    pix = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
    from PIL import Image

    image = degrade(Image.frombytes("L", (pix.width, pix.height), pix.samples), seed=3)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.slow  # OCR of whole pages
def test_a_scanned_ruled_table_keeps_its_merged_cell_and_an_unruled_one_stays_pipes():
    from model.engines.local import LocalEngine

    engine = LocalEngine()
    ruled = engine.transcribe(PageInput(_drawn_table(True), "image/png", 1), EngineOptions())
    assert '<td colspan="3">Europe</td>' in ruled.markdown, ruled.markdown
    assert TableTest("t.pdf", 1, "t", "table", cell="Vienna", up="Europe").run(ruled.markdown)[0]
    plain = engine.transcribe(PageInput(_drawn_table(False), "image/png", 1), EngineOptions())
    assert "colspan" not in plain.markdown and "| Continent |" in plain.markdown, plain.markdown


GOOGLE_DOC = CORPUS / "pdf-samples/011-google-doc-document/google-doc-document.pdf"


@pytest.mark.slow  # OCR of a whole page
@pytest.mark.skipif(not GOOGLE_DOC.is_file(), reason="the shared corpus is not beside")
def test_the_google_docs_scan_keeps_europe_and_the_euro_over_their_columns():
    from model.engines.local import LocalEngine

    page = PageInput(scan_page(GOOGLE_DOC, 1), "application/pdf", 1)
    markdown = LocalEngine().transcribe(page, EngineOptions()).markdown
    assert '<td colspan="4">Europe</td>' in markdown, markdown
    assert '<td colspan="3">EUR (€)</td>' in markdown
    assert TableTest("t.pdf", 1, "t", "table", cell="Vienna", up="Europe").run(markdown)[0]
