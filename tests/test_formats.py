"""Office, OpenDocument, web, text and e-book documents without a worker: the type from the
bytes, the refusals before any parsing, the page plan, and the conversion of docling's test
documents compared with docling's own reference Markdown."""

from __future__ import annotations

import zipfile

import pytest
from rapidfuzz import fuzz

from model.documents import (
    CorruptDocument,
    DocumentTooLarge,
    UnsafeDocument,
    UnsupportedDocument,
    inspect_document,
)
from model.engines import load_engine
from model.engines.base import EngineOptions, PageInput
from model.formats import parts, units
from model.formats import types as formats
from model.pipeline import STRUCTURE_METHOD, transcribe_page
from tests import documents, office

needs_corpus = pytest.mark.skipif(not office.CORPUS.is_dir(), reason=office.CORPUS_MISSING)

# A refusal is decided from the zip directory and a streamed scan of the XML: what it inflates
# is the parts' beginnings and small parts, never the bomb's 64 MiB.
REFUSAL_INFLATED_BYTES = 1024 * 1024


def similarity(markdown: str, reference: str) -> float:
    return fuzz.ratio(" ".join(markdown.split()), " ".join(reference.split())) / 100


@needs_corpus
@pytest.mark.parametrize(
    ("relative", "fmt", "pages"),
    [
        ("docx/sources/word_tables.docx", formats.DOCX, 1),
        ("pptx/sources/powerpoint_sample.pptx", formats.PPTX, 3),
        ("xlsx/sources/xlsx_01.xlsx", formats.XLSX, 4),
        ("xlsx/sources/xlsx_02_sample_sales_data.xlsm", formats.XLSM, 1),
        ("odf/sources/text_document_01.odt", formats.ODT, 1),
        ("odf/sources/odf_table_with_title_01.ods", formats.ODS, 1),
        ("odf/sources/odf_presentation_01.odp", formats.ODP, 1),
        ("html/sources/wiki_duck.html", formats.HTML, 7),
    ],
)
def test_each_format_is_known_by_its_bytes_and_counted_without_converting(relative, fmt, pages):
    info = inspect_document(office.corpus(relative))

    assert (info.mime_type, info.kind, info.page_count) == (fmt.mime_type, "structured", pages)


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (b"# Notes\n\n- one\n- two\n", formats.MARKDOWN),
        (b"Dear team,\nthe meeting moved to Tuesday.\n", formats.TEXT),
        ("\ufeffname;city\nAda;London\nGrace;Arlington\n".encode(), formats.CSV),
        (office.ARTICLE_HTML, formats.HTML),
        (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>', formats.SVG),
        (office.epub(), formats.EPUB),
    ],
)
def test_text_and_container_formats_are_told_apart_by_content(data, fmt):
    assert inspect_document(data).mime_type == fmt.mime_type


HOSTILE = {
    "a zip bomb (64 MiB of zeros in one part)": (
        office.zip_bomb_docx,
        DocumentTooLarge,
        "zip bomb",
    ),
    "10,001 parts": (office.many_parts_docx, DocumentTooLarge, "parts"),
    "entity expansion (billion laughs)": (office.entity_expansion_docx, UnsafeDocument, "DTD"),
    "a remote template": (office.remote_template_docx, UnsafeDocument, "outside template"),
    "an external workbook link": (office.ole_link_xlsx, UnsafeDocument, "outside workbook"),
    "a cell at XFD1048576": (office.absurd_sheet_xlsx, DocumentTooLarge, "17,179,869,184 cells"),
}


@needs_corpus
@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_office_files_are_refused_before_any_parsing(case, monkeypatch):
    make, error, words = HOSTILE[case]
    data = make()
    inflated = []
    real_read = zipfile.ZipExtFile.read
    monkeypatch.setattr(
        zipfile.ZipExtFile,
        "read",
        lambda entry, n=-1: (lambda chunk: inflated.append(len(chunk)) or chunk)(
            real_read(entry, n)
        ),
    )

    with pytest.raises(error) as refused:
        inspect_document(data)

    assert words in str(refused.value)
    assert sum(inflated) < REFUSAL_INFLATED_BYTES


@needs_corpus
def test_a_local_template_path_is_not_refused():
    # word_sample.docx names the template it was made from on its author's disk: never read.
    assert inspect_document(office.corpus("docx/sources/word_sample.docx")).page_count == 1


@needs_corpus
def test_a_formatted_cell_far_below_the_data_does_not_make_a_sheet_absurd():
    # docling's "inflated used range" file: a styled empty cell at row 1,048,496.
    info = inspect_document(office.corpus("xlsx/sources/xlsx_04_inflated.xlsx"))

    assert info.page_count == 4


def test_a_web_page_of_more_than_80000_elements_is_refused_as_too_large():
    with pytest.raises(DocumentTooLarge, match="80,000"):
        inspect_document(b"<html><body>" + b"<p>x</p>" * 80_001 + b"</body></html>")


def test_a_plain_zip_and_binary_junk_are_still_refused():
    with pytest.raises(UnsupportedDocument):
        inspect_document(documents.zip_archive())
    with pytest.raises(UnsupportedDocument):
        inspect_document(bytes(range(256)) * 4)


@needs_corpus
def test_a_damaged_office_file_is_corrupt_not_an_internal_error():
    data = office.corpus("docx/sources/word_tables.docx")
    with pytest.raises(CorruptDocument):
        inspect_document(data[: len(data) // 2])


# --- conversion ---------------------------------------------------------------------------


def page(data: bytes, number: int = 1) -> PageInput:
    return PageInput(data=data, mime_type=inspect_document(data).mime_type, page_number=number)


@needs_corpus
@pytest.mark.parametrize(
    "relative",
    [
        "docx/sources/word_tables.docx",
        "docx/sources/equations.docx",
        "docx/sources/unit_test_headers_numbered.docx",
        "xlsx/sources/xlsx_05_table_with_title.xlsx",
        "odf/sources/text_document_03.odt",
        "html/sources/table_with_heading_01.html",
    ],
)
def test_a_document_reads_close_to_doclings_reference(relative):
    data = office.corpus(relative)
    count = inspect_document(data).page_count
    # docling's references write every table as a pipe table, merged cells repeated.
    options = EngineOptions(table_format="markdown")
    markdown = "\n\n".join(
        transcribe_page(None, page(data, n), options).markdown for n in range(1, count + 1)
    )

    assert similarity(markdown, office.reference(relative)) >= 0.9


@needs_corpus
def test_equations_come_out_as_latex_and_merged_cells_are_kept():
    equations = transcribe_page(
        None, page(office.corpus("docx/sources/equations.docx")), EngineOptions()
    )
    assert "$" in equations.markdown and "\\frac" in equations.markdown
    assert equations.method == STRUCTURE_METHOD and equations.output_tokens > 0

    tables = transcribe_page(
        None,
        page(office.corpus("docx/sources/word_tables.docx")),
        EngineOptions(table_format="markdown"),
    ).markdown
    # docling repeats a merged cell's text in every cell it spans, as its reference does.
    assert similarity(tables, office.reference("docx/sources/word_tables.docx")) >= 0.95


@needs_corpus
def test_the_table_format_is_honoured_html_everywhere_or_where_cells_merge():
    data = office.corpus("docx/sources/word_tables.docx")

    def read(table_format: str) -> str:
        options = EngineOptions(table_format=table_format)
        return transcribe_page(None, page(data), options).markdown

    markdown, html, auto = read("markdown"), read("html"), read("auto")

    assert "<table" not in markdown and markdown.count("| - |") >= 7
    assert html.count("<table>") == 7 and "| - |" not in html
    assert '<td colspan="2">Merged Cell 1.1 1.2</td>' in html and 'rowspan="2"' in html
    # auto: the two tables without merged cells stay pipe tables, the five with are HTML.
    assert auto.count("<table>") == 5 and "| Cell 1.0 | Cell 1.1 | Cell 1.2 |" in auto
    assert "Merged Cell 1.1 1.2 | Merged Cell 1.1 1.2" not in auto


@needs_corpus
def test_speaker_notes_and_comments_are_left_out_unless_asked_for():
    deck = office.corpus("pptx/sources/powerpoint_sample.pptx")
    commented = office.corpus("docx/sources/docx_comments.docx")

    def read(data: bytes, number: int = 1, **options) -> str:
        return transcribe_page(None, page(data, number), EngineOptions(**options)).markdown

    assert "notes on the second slide" not in read(deck, 2)
    assert read(deck, 2, speaker_notes=True).endswith(
        "*Speaker notes:* Some notes on the second slide."
    )
    assert "notes" not in read(deck, 2, comments=True)

    assert "reviewer comment" not in read(commented)
    assert "reviewer comment" not in read(commented, speaker_notes=True)
    with_comments = read(commented, comments=True)
    assert "[author: John Reviewer (JR), time: 2026-01-04T05:48:07.000+00:00]: This is a " in (
        with_comments
    )
    assert with_comments.startswith("# Document with Comments")


@needs_corpus
def test_a_slides_comments_stay_on_its_page():
    deck = office.corpus("pptx/sources/powerpoint_comments.pptx")
    slides = [
        transcribe_page(None, page(deck, n), EngineOptions(comments=True)).markdown
        for n in (1, 2, 3)
    ]

    assert "This is a sample reviewer comment" in slides[0]
    assert "This is a cool feature" in slides[2]
    assert "author:" not in slides[1]


def test_a_long_html_table_is_cut_between_rows_each_part_a_whole_table_with_its_header():
    header = "<tr><th>Row</th><th>Vessel</th></tr>"
    rows = "".join(f"<tr><td>{n}</td><td>vessel {n}</td></tr>" for n in range(1, 401))
    table = f"<table><tbody>{header}{rows}</tbody></table>"

    pieces = parts.split_exactly(f"# Ledger\n\n{table}", 4)

    assert len(pieces) == 4
    for piece in pieces:
        body = piece.removeprefix("# Ledger\n\n")
        assert body.startswith(f"<table><tbody>{header}<tr><td>")
        assert body.endswith("</td></tr></tbody></table>")
    joined = "".join(pieces)
    assert all(f"<td>vessel {n}</td>" in joined for n in (1, 200, 400))


@needs_corpus
def test_each_slide_and_each_sheet_is_its_own_page():
    deck = office.corpus("pptx/sources/powerpoint_sample.pptx")
    slides = [transcribe_page(None, page(deck, n), EngineOptions()).markdown for n in (1, 2, 3)]
    assert slides[0].startswith("# Test Table Slide")
    assert slides[1].startswith("# Second slide title")

    book = office.corpus("xlsx/sources/xlsx_01.xlsx")
    sheets = [transcribe_page(None, page(book, n), EngineOptions()).markdown for n in (1, 2)]
    assert "first" in sheets[0] and "col-1" not in sheets[0]
    assert "col-1" in sheets[1]


def test_a_long_sheet_is_cut_into_row_ranges_each_with_the_header():
    rows = "\n".join(f"{n},item {n},{n * 3}" for n in range(1, 601))
    data = f"number,name,price\n{rows}\n".encode()

    count = inspect_document(data).page_count
    pages = [transcribe_page(None, page(data, n), EngineOptions()).markdown for n in (1, 2, 3)]

    assert count == 3 == len(pages)
    for markdown in pages:
        assert markdown.splitlines()[0].replace(" ", "") == "|number|name|price|"
    body = "".join(pages)
    assert all(f"item {n} " in body for n in (1, 250, 251, 600))


def test_markdown_is_passed_through_normalized():
    data = "# Title\r\n\r\n\r\n\r\nCafe\u0301 text   \r\n- item\r\n".encode()

    result = transcribe_page(None, page(data), EngineOptions())

    assert result.markdown == "# Title\n\nCaf\u00e9 text\n- item"
    # Text has no page: one block over a nominal A4 page (docs/OUTPUTS.md), never drawn.
    layout = result.layout
    assert (layout.width, layout.height, layout.source) == (595.0, 842.0, "page")
    assert [block.bbox for block in layout.blocks] == [(0.0, 0.0, 595.0, 842.0)]


def test_a_long_text_is_cut_into_page_sized_parts_in_order():
    paragraphs = [f"Paragraph {n}. " + "word " * 150 for n in range(1, 41)]
    data = "\n\n".join(paragraphs).encode()

    count = inspect_document(data).page_count
    pages = [
        transcribe_page(None, page(data, n), EngineOptions()).markdown for n in range(1, count + 1)
    ]

    assert count == len(pages) > 1
    assert all(len(markdown) <= 2 * units.PART_CHARS for markdown in pages)
    assert "\n\n".join(pages).split("\n\n") == [p.strip() for p in paragraphs]


def test_split_exactly_keeps_blocks_whole_and_gives_the_asked_number_of_parts():
    text = "\n\n".join(f"block {n} " + "x" * 50 for n in range(10))

    got = parts.split_exactly(text, 3)

    assert len(got) == 3 and all(got)
    assert "\n\n".join(got) == text
    assert parts.split_exactly("short", 3) == ["short", "", ""]


def test_a_web_page_keeps_its_article_and_drops_navigation_footer_and_script():
    markdown = transcribe_page(None, page(office.ARTICLE_HTML), EngineOptions()).markdown

    assert "The harbour reopens" in markdown and "| Monday" in markdown
    assert "Sports" not in markdown and "newsletter" not in markdown
    assert "alert" not in markdown


def test_an_epub_is_laid_out_as_pdf_pages_the_engine_reads():
    data = office.epub(chapters=2)

    result = transcribe_page(load_engine("local"), page(data, 2), EngineOptions())

    assert "Chapter 2" in result.markdown and "counted 2 ships" in result.markdown
    assert result.method == "text-layer"


@needs_corpus
def test_docling_never_starts_libreoffice_itself(monkeypatch):
    """docling draws DrawingML shapes, charts and EMF pictures through LibreOffice when it is
    on the PATH and pypdfium2 is installed, outside Folio's private profile and time limit
    (model/formats/libreoffice.py); Folio installs no pypdfium2, so it never does."""
    import subprocess

    started = []
    real_popen = subprocess.Popen

    def popen(args, *rest, **kwargs):
        started.append(args)
        return real_popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    for relative in (
        "docx/sources/drawingml.docx",
        "pptx/sources/pptx_chart.pptx",
        "xlsx/sources/xlsx_emf.xlsx",
    ):
        assert transcribe_page(None, page(office.corpus(relative)), EngineOptions()).markdown

    assert not [args for args in started if "office" in str(args).lower()]


def test_docling_fetches_nothing_a_document_points_to():
    from docling.datamodel import backend_options as options

    for name in (
        "DeclarativeBackendOptions",
        "MsWordBackendOptions",
        "MsPowerpointBackendOptions",
        "MsExcelBackendOptions",
        "OdsBackendOptions",
        "HTMLBackendOptions",
        "CsvBackendOptions",
    ):
        defaults = getattr(options, name)()
        assert (defaults.enable_remote_fetch, defaults.enable_local_fetch) == (False, False)
