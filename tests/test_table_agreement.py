"""One table model behind every output: the Markdown, the blocks, the chunks, the viewer and
the searchable PDF's text show the same cells, spans included, on every table of the shared
corpus's PDFs, Word files and workbooks.

Each page is read by the real pipeline (the local engine for PDFs, the structural conversion
for Office files); its stored layout is what the blocks output serves, the chunks are cut
from it, the viewer renders it (``panel_blocks``), and the searchable PDF sets it over the
page's image. Every table is compared cell by cell as ``model.tables`` reads it: position,
row and column span, text (Markdown emphasis and HTML markup aside, which the viewer renders).

The PDF pages with tables were found by reading every page of every PDF in the corpus with
the local engine (the encrypted sample aside) and keeping those whose Markdown holds a table
(each listed page is checked to hold one); the Office files' tables are found on each run.
"""

from __future__ import annotations

import html
import io
import re
import unicodedata
from functools import cache

import pymupdf
import pytest

from model.documents import PDF, inspect_document
from model.engines.base import EngineOptions, PageInput
from model.layout.chunks import chunk_document
from model.layout.schema import PageLayout
from model.layout.searchable_pdf import PageText, searchable_pdf
from model.layout.table_blocks import searchable_lines, tables_from_markdown
from model.pipeline import transcribe_page
from model.tables import Table, html_tables, table_of, table_spans
from tests.office import CORPUS, CORPUS_MISSING

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING)

# (document under the corpus, page): every PDF page of the corpus whose Markdown holds a
# table (the search is described above).
PDF_TABLE_PAGES = [
    ("docling-testdata/odf/sources/odf_table_with_title_01.ods.pdf", 1),
    ("docling-testdata/odf/sources/text_document_03.odt.pdf", 1),
    ("docling-testdata/odf/sources/text_document_03.odt.pdf", 2),
    ("docling-testdata/pdf/sources/2305.03393v1-pg9.pdf", 1),
    ("docling-testdata/pdf/sources/normal_4pages.pdf", 2),
    ("docling-testdata/pdf/sources/redp5110_sampled.pdf", 8),
    ("docling-testdata/pdf/sources/redp5110_sampled.pdf", 9),
    ("docling-testdata/pdf/sources/redp5110_sampled.pdf", 11),
    ("docling-testdata/pdf/sources/redp5110_sampled.pdf", 12),
    ("docling-testdata/pdf/sources/redp5110_sampled.pdf", 18),
    ("docling-testdata/pdf/sources/right_to_left_03.pdf", 1),
    ("docling-testdata/pdf/sources/table_mislabeled_as_picture.pdf", 1),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 8),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 9),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 13),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 31),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 50),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 55),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 56),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 57),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 78),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 82),
    ("pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf", 86),
    ("pdf-samples/010-pdflatex-forms/pdflatex-forms.pdf", 1),
    ("pdf-samples/011-google-doc-document/google-doc-document.pdf", 1),
    ("pdf-samples/012-libreoffice-form/libreoffice-form.pdf", 1),
    ("pdf-samples/026-latex-multicolumn/multicolumn.pdf", 3),
]
OFFICE_GLOBS = ("docx/sources/*.docx", "xlsx/sources/*.xls*")
ROOTS = ("docling-testdata/", "pdf-samples/")

Signature = tuple[tuple[int, int, int, int, str], ...]


def _clean(text: str) -> str:
    """A cell's words as a reader sees them: entities decoded; emphasis, strike-through and
    math delimiters (which the viewer renders) and spacing aside."""
    text = html.unescape(text).replace("\\|", "|")
    return " ".join(re.sub(r"[*_`$]+|~~", " ", text).split())


_RIGHT_TO_LEFT = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
# The searchable PDF's fonts: Helvetica, and MuPDF's CJK font for a line Helvetica cannot set.
_LATIN, _FALLBACK = pymupdf.Font("helv"), pymupdf.Font("cjk")


def reads_as(got: str, wanted: str) -> bool:
    """Whether a line read back from the searchable PDF is the line set there. A character
    the line's font has no glyph for (a flag, Arabic punctuation) comes back as another, so
    it matches anything; PyMuPDF reads a right-to-left line in visual order and in
    presentation forms, so such a line is compared by its letters and digits (what comes
    back for Arabic punctuation is neither)."""
    wanted = _clean(wanted)
    font = _LATIN if all(_LATIN.has_glyph(ord(c)) for c in wanted) else _FALLBACK
    got = _clean(unicodedata.normalize("NFKC", got))
    if _RIGHT_TO_LEFT.search(wanted):
        kept = unicodedata.normalize("NFKC", wanted)
        return sorted(c for c in kept if c.isalnum()) == sorted(c for c in got if c.isalnum())
    wanted = unicodedata.normalize("NFKC", wanted)
    pattern = "".join(re.escape(c) if font.has_glyph(ord(c)) else "." for c in wanted)
    return re.fullmatch(pattern, got) is not None


def signature(table: Table | None) -> Signature:
    assert table is not None
    return tuple((c.row, c.col, c.rowspan, c.colspan, _clean(c.text)) for c in table.cells)


def markdown_signatures(text: str) -> list[Signature]:
    return [signature(table_of(text[start:end])) for start, end in table_spans(text)]


def viewer_signatures(layout: dict) -> list[Signature]:
    from webapp.ui.views.jobs import panel_blocks

    rendered = "".join(str(block["html"]) for block in panel_blocks(1, layout))
    return [signature(table) for table in html_tables(rendered)]


def pdf_table_rows(layout: PageLayout) -> list[list[str]]:
    """Each table block's lines as the searchable PDF holds them, when the page's text is set
    from its blocks (a page image with an engine's blocks, no words): one page per table."""
    picture = io.BytesIO()
    blank = pymupdf.open()
    # At 72 dpi the picture is as many pixels as the page is points: boxes stay put.
    blank.new_page(width=layout.width, height=layout.height)
    blank[0].get_pixmap(dpi=72).pil_save(picture, format="PNG")
    rows = []
    for block in layout.blocks:
        if block.type != "table":
            continue
        alone = PageLayout(layout.width, layout.height, [block], "grounding")
        built = searchable_pdf(picture.getvalue(), "image/png", [PageText(1, alone)])
        with pymupdf.open(stream=built) as pdf:
            rows.append([text for text in _pdf_lines(pdf[0]) if text.strip()])
    return rows


def _pdf_lines(page: pymupdf.Page) -> list[str]:
    """The page's text lines in the order they were written."""
    return [
        "".join(span["text"] for span in line["spans"])
        for block in page.get_text("dict")["blocks"]
        for line in block.get("lines", [])
    ]


def check_agreement(markdown: str, layout: PageLayout) -> int:
    """Every output of one page against its Markdown, table by table; the number of tables."""
    expected = markdown_signatures(markdown)
    stored = PageLayout.from_dict(layout.to_dict())  # what a worker saves and the API serves
    blocks = [
        s for b in stored.blocks if b.type == "table" for s in markdown_signatures(b.markdown)
    ]
    assert blocks == expected, "blocks"
    for max_tokens in (32, 400):  # a table is never cut, however small the chunks
        chunks = chunk_document([(1, stored)], max_tokens=max_tokens)
        found = [s for chunk in chunks for s in markdown_signatures(chunk["text"])]
        assert found == expected, f"chunks of {max_tokens} tokens"
    assert viewer_signatures(stored.to_dict()) == expected, "viewer"
    tables = [table_of(b.markdown) for b in stored.blocks if b.type == "table"]
    for table, lines in zip(tables, pdf_table_rows(stored), strict=True):
        assert table is not None
        wanted = table.text_rows()
        assert len(lines) == len(wanted), ("searchable PDF", lines, wanted)
        for got, row in zip(lines, wanted, strict=True):
            assert reads_as(got, row), ("searchable PDF", got, row)
    return len(expected)


@cache
def _engine():
    from model.engines.local import LocalEngine

    return LocalEngine()


def read_page(relative: str, number: int, mime_type: str | None = None):
    """Page ``number`` of a corpus document (under docling-testdata/, or the corpus's root
    for a path that starts there) through the pipeline."""
    path = CORPUS.parent / relative if relative.startswith(ROOTS) else CORPUS / relative
    data = path.read_bytes()
    mime_type = mime_type or inspect_document(data).mime_type
    engine = _engine() if mime_type == PDF else None
    return transcribe_page(engine, PageInput(data, mime_type, number), EngineOptions())


def office_pages() -> list[tuple[str, int]]:
    pages = []
    for pattern in OFFICE_GLOBS:
        for path in sorted(CORPUS.glob(pattern)):
            count = inspect_document(path.read_bytes()).page_count
            pages += [(str(path.relative_to(CORPUS)), n) for n in range(1, count + 1)]
    return pages


@pytest.mark.parametrize(
    "relative", ["docx/sources/word_tables.docx", "xlsx/sources/xlsx_05_table_with_title.xlsx"]
)
def test_the_tables_of_a_word_file_and_a_workbook_agree_in_every_output(relative):
    """The edit-run loop's share of the sweep below: a Word file's seven tables (rich cells
    among them) and a sheet's titled tables."""
    result = read_page(relative, 1)
    assert check_agreement(result.markdown, result.layout) >= 2


@pytest.mark.slow
def test_every_table_of_the_corpus_office_files_agrees_in_every_output():
    tables = documents = 0
    seen = set()
    for relative, number in office_pages():
        result = read_page(relative, number)
        found = check_agreement(result.markdown, result.layout)
        tables += found
        if found:
            seen.add(relative)
        # A structured page's tables are blocks of their own, in the Markdown's order.
        assert [b.type for b in result.layout.blocks].count("table") == found
    documents = len(seen)
    # Not vacuous: 8 Word files and 11 workbooks of the corpus hold 71 tables.
    assert documents >= 19 and tables >= 70, (documents, tables)


@pytest.mark.slow
@pytest.mark.parametrize(("relative", "number"), PDF_TABLE_PAGES)
def test_every_table_of_the_corpus_pdfs_agrees_in_every_output(relative, number):
    result = read_page(relative, number)
    assert result.method == "text-layer"
    assert check_agreement(result.markdown, result.layout) >= 1


@pytest.mark.slow
def test_the_paper_table_keeps_its_two_rows_per_setting_in_blocks_chunks_and_viewer():
    """The issue's page: the Markdown splits the extractor's stacked "OTSL<br/>HTML" rows into
    two rows under a cell spanning both; every other output did not."""
    result = read_page("docling-testdata/pdf/sources/2305.03393v1-pg9.pdf", 1)
    (table,) = [b for b in result.layout.blocks if b.type == "table"]
    parsed = table_of(table.markdown)
    assert parsed is not None
    languages = [c.text for c in parsed.cells if c.text in ("OTSL", "HTML", "OTSL HTML")]
    assert languages == ["OTSL", "HTML"] * 4
    assert [c.rowspan for c in parsed.cells if c.text == "6"] == [2, 2]
    assert "OTSL<br/>HTML" not in "".join(str(b["html"]) for b in _viewer(result.layout))


def _viewer(layout: PageLayout) -> list[dict]:
    from webapp.ui.views.jobs import panel_blocks

    return panel_blocks(1, layout.to_dict())


def test_a_block_takes_the_table_the_page_markdown_made_of_it():
    """The text layer's block holds the extractor's table; the page's Markdown, after the
    table format, another cut of the same cells: the block takes the Markdown's."""
    raw = (
        "<table><tr><th>Setting</th><th>Language</th><th>TEDs</th><th>mAP</th></tr>"
        "<tr><td>6</td><td>OTSL<br/>HTML</td><td>0.965<br/>0.969</td><td>0.88<br/>0.857</td>"
        "</tr></table>"
    )
    page = (
        "Intro.\n\n"
        "<table><tr><th>Setting</th><th>Language</th><th>TEDs</th><th>mAP</th></tr>"
        '<tr><td rowspan="2">6</td><td>OTSL</td><td>0.965</td><td>0.88</td></tr>'
        "<tr><td>HTML</td><td>0.969</td>"
        "<td>0.857</td></tr></table>\n\nAfter."
    )
    from model.layout.schema import Block

    layout = PageLayout(
        595,
        842,
        [
            Block("paragraph", "Intro.", (0, 0, 595, 100)),
            Block("paragraph", raw, (0, 100, 595, 300)),  # an engine that did not type it
            Block("paragraph", "After.", (0, 300, 595, 400)),
        ],
        "text-layer",
    )
    aligned = tables_from_markdown(layout, page)
    assert [b.type for b in aligned.blocks] == ["paragraph", "table", "paragraph"]
    assert markdown_signatures(aligned.blocks[1].markdown) == markdown_signatures(page)
    assert aligned.blocks[1].bbox == (0, 100, 595, 300)
    assert check_agreement(page, aligned) == 1
    # The searchable PDF's lines: the spanning cell once, in the row it starts in.
    assert searchable_lines(aligned.blocks[1].markdown) == [
        "Setting Language TEDs mAP",
        "6 OTSL 0.965 0.88",
        "HTML 0.969 0.857",
    ]


def test_a_table_the_page_markdown_does_not_hold_stays_as_the_block_had_it():
    from model.layout.schema import Block

    other = "|a|b|\n|---|---|\n|1|2|"
    layout = PageLayout(595, 842, [Block("table", other, (0, 0, 595, 100))], "text-layer")
    page = "|x|y|\n|---|---|\n|7|8|"
    assert tables_from_markdown(layout, page).blocks[0].markdown == other
