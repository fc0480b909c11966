"""The embedded CPU engine on every generated document and on a few real PDFs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from model.documents import EncryptedDocument, inspect_document
from model.engines.base import Engine, EngineError, EngineOptions, PageInput, PageResult
from model.engines.local import LocalEngine
from model.engines.registry import engine_class
from model.tokens import count_tokens
from tests import documents

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "pdf-samples"


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine()


def transcribe(engine: LocalEngine, data: bytes, page: int = 1, **options) -> PageResult:
    info = inspect_document(data)
    return engine.transcribe(PageInput(data, info.mime_type, page), EngineOptions(**options))


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def assert_in_order(text: str, parts) -> None:
    position = -1
    for part in parts:
        found = text.find(part, position + 1)
        assert found > position, f"{part!r} missing or out of order in:\n{text}"
        position = found


def corpus_file(relative: str) -> bytes:
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"the shared test corpus is not checked out next to the repository ({path})")
    return path.read_bytes()


# --- the protocol ----------------------------------------------------------


def test_the_registry_finds_the_local_engine_and_it_fits_the_protocol(engine):
    assert engine_class("local") is LocalEngine
    assert isinstance(engine, Engine)
    assert (engine.name, engine.max_pages_in_flight) == ("local", 1)
    assert engine.version


# --- born-digital pages ----------------------------------------------------------


def test_it_reads_each_born_digital_page_from_its_text_layer(engine):
    data = documents.born_digital_pdf()
    for number, marker in enumerate(documents.BORN_DIGITAL_PAGE_MARKERS, start=1):
        result = transcribe(engine, data, number)
        assert result.method == "text-layer"
        assert marker in result.markdown
        others = set(documents.BORN_DIGITAL_PAGE_MARKERS) - {marker}
        assert not any(other in result.markdown for other in others)


def test_it_keeps_headings_as_markdown_headings(engine):
    data = documents.born_digital_pdf()
    for number, heading in enumerate(documents.BORN_DIGITAL_HEADINGS, start=1):
        markdown = transcribe(engine, data, number).markdown
        assert re.search(rf"^#+ {re.escape(heading)}$", markdown, re.MULTILINE), markdown


def test_it_keeps_the_table_as_a_pipe_table_with_its_cells_in_order(engine):
    markdown = transcribe(engine, documents.born_digital_pdf(), 2).markdown
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + len(documents.BORN_DIGITAL_TABLE_ROWS)  # header, rule, body
    assert_in_order(rows[0], documents.BORN_DIGITAL_TABLE_HEADER)
    for line, cells in zip(rows[2:], documents.BORN_DIGITAL_TABLE_ROWS, strict=True):
        assert [c.strip() for c in line.strip("|").split("|")] == list(cells)


def test_it_writes_an_html_table_when_asked(engine):
    markdown = transcribe(engine, documents.born_digital_pdf(), 2, table_format="html").markdown
    assert "<table>" in markdown and "|---" not in markdown
    cells = re.findall(r"<t[dh]>(.*?)</t[dh]>", markdown)
    expected = [*documents.BORN_DIGITAL_TABLE_HEADER]
    expected += [cell for row in documents.BORN_DIGITAL_TABLE_ROWS for cell in row]
    assert cells == expected


def test_it_keeps_the_footnote_and_drops_the_page_number(engine):
    markdown = transcribe(engine, documents.born_digital_pdf(), 2).markdown
    assert documents.BORN_DIGITAL_FOOTNOTE in markdown
    assert not re.search(r"^\s*2\s*$", markdown, re.MULTILINE)


def test_its_markdown_has_no_page_separators_or_runs_of_blank_lines(engine):
    markdown = transcribe(engine, documents.born_digital_pdf(), 1).markdown
    assert "\n\n\n" not in markdown
    assert "-----" not in markdown
    assert markdown.endswith("\n") and not markdown.endswith("\n\n")


def test_it_fills_counts_and_timings(engine):
    result = transcribe(engine, documents.born_digital_pdf(), 2)
    assert result.output_tokens == count_tokens(result.markdown) > 0
    assert result.input_tokens == 0
    assert result.render_seconds >= 0 and result.engine_seconds > 0


# --- scans and images ----------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        documents.scanned_pdf,
        documents.png_page,
        documents.jpeg_page,
        documents.webp_page,
        documents.exif_rotated_jpeg,
    ],
)
def test_it_reads_scans_and_page_images_with_ocr(engine, make):
    result = transcribe(engine, make())
    assert result.method == "ocr"
    assert_in_order(" ".join(words(result.markdown)), [w.lower() for w in documents.SCAN_WORDS])
    assert result.output_tokens == count_tokens(result.markdown)


@pytest.mark.parametrize("make", [documents.rotated_scan_pdf, documents.rotated_scan_png])
def test_it_reads_a_scan_turned_sideways_in_order(engine, make):
    result = transcribe(engine, make())
    assert result.extra["rotation"] == 90
    assert_in_order(" ".join(words(result.markdown)), [w.lower() for w in documents.SCAN_WORDS])


def test_it_reads_the_second_page_of_a_multipage_tiff(engine):
    markdown = transcribe(engine, documents.multipage_tiff(2), 2).markdown
    assert_in_order(" ".join(words(markdown)), [w.lower() for w in documents.TIFF_PAGE_2_WORDS])
    assert "invoice" not in markdown.lower()


def test_it_raises_an_engine_error_for_a_page_past_the_end(engine):
    page = PageInput(documents.png_page(), "image/png", 3)
    with pytest.raises(EngineError, match="page 3"):
        engine.transcribe(page, EngineOptions())


def test_it_raises_an_engine_error_for_a_damaged_document(engine):
    page = PageInput(documents.corrupt_pdf(), "application/pdf", 1)
    with pytest.raises(EngineError, match="damaged"):
        engine.transcribe(page, EngineOptions())


# --- real PDFs from the shared corpus ----------------------------------------------------------


def test_it_reads_a_two_column_page_column_by_column(engine):
    markdown = transcribe(engine, corpus_file("026-latex-multicolumn/multicolumn.pdf")).markdown
    assert markdown.startswith("# Two-Column Document with Lorem Ipsum")
    # The left column ends with "...luctus mauris." and the right one begins
    # "Nulla malesuada porttitor diam."; read row by row they would interleave.
    assert_in_order(
        markdown,
        ["Lorem ipsum dolor sit amet", "Pellentesque cursus luctus mauris.", "Nulla malesuada"],
    )


@pytest.mark.slow
def test_it_reads_all_four_pages_of_a_latex_document(engine):
    data = corpus_file("004-pdflatex-4-pages/pdflatex-4-pages.pdf")
    assert inspect_document(data).page_count == 4
    for number in range(1, 5):
        result = transcribe(engine, data, number)
        assert result.method == "text-layer"
        assert "information" in result.markdown


def test_it_refuses_the_corpus_password_protected_pdf():
    with pytest.raises(EncryptedDocument):
        inspect_document(
            corpus_file("005-libreoffice-writer-password/libreoffice-writer-password.pdf")
        )


@pytest.mark.slow
def test_it_reads_arabic_text_on_rotated_pages_without_crashing(engine):
    data = corpus_file("015-arabic/habibi-rotated.pdf")
    for number in range(1, inspect_document(data).page_count + 1):
        markdown = transcribe(engine, data, number).markdown
        assert "habibi" in markdown
        assert "\u062d" in markdown  # the Arabic letter ha of حَبيبي


# --- laying out OCR boxes ------------------------------------------------------------------


def _column_boxes(x0: float, x1: float, label: str, lines: int, top: float = 200) -> list:
    from model.scan_lines import TextBox

    return [TextBox(x0, top + i * 30, x1, top + i * 30 + 24, f"{label}{i}") for i in range(lines)]


def test_ocr_layout_reads_two_columns_left_then_right_under_a_full_width_title():
    from model.scan_layout import boxes_to_markdown
    from model.scan_lines import TextBox

    title = TextBox(300, 100, 800, 140, "Title")
    left = _column_boxes(100, 545, "left", 6)
    right = _column_boxes(555, 1000, "right", 6)
    markdown = boxes_to_markdown([*right, title, *left], page_width=1100)
    assert_in_order(markdown, ["Title", "left0", "left5", "right0", "right5"])


def test_ocr_layout_reads_a_form_row_by_row_not_as_columns():
    from model.scan_layout import boxes_to_markdown
    from model.scan_lines import TextBox

    labels = [TextBox(100, 200 + i * 40, 180 + i * 25, 224 + i * 40, f"label{i}") for i in range(5)]
    values = [TextBox(700, 200 + i * 40, 760, 224 + i * 40, f"value{i}") for i in range(5)]
    markdown = boxes_to_markdown([*values, *labels], page_width=1100)
    assert_in_order(markdown, ["label0 value0", "label1 value1", "label4 value4"])


# --- two pages side by side ------------------------------------------------------------------

SPREAD = CORPUS.parent / "docling-testdata" / "pdf" / "sources" / "table_mislabeled_as_picture.pdf"


@pytest.mark.skipif(not SPREAD.is_file(), reason="the shared corpus is not beside the repo")
def test_a_spread_of_two_pages_reads_the_left_page_before_the_right(engine):
    # docling's questionnaire: two printed pages on one landscape page. Read as one page,
    # the layout model took question 26 (right page) before question 23 (left page).
    result = transcribe(engine, SPREAD.read_bytes())
    markdown = result.markdown
    assert markdown.index("23. If your country") < markdown.index("26. If your country")
    assert markdown.index("25. If your country") < markdown.index("26. If your country")
    half = result.layout.width / 2
    (q26,) = [b for b in result.layout.blocks if "26. If your country" in b.markdown]
    assert q26.bbox[0] >= half  # its box is where it is printed


def test_a_landscape_page_is_a_spread_only_when_nothing_crosses_its_middle():
    import pymupdf

    from model.engines.pdf_text import is_spread

    doc = pymupdf.open()
    page = doc.new_page(width=842, height=595)
    for i in range(6):
        page.insert_text((60, 100 + 20 * i), f"Left page, line {i}.")
        page.insert_text((480, 100 + 20 * i), f"Right page, line {i}.")
    assert is_spread(page)
    page.insert_text((300, 60), "A title set across the whole landscape page, over both halves")
    assert not is_spread(page)
    portrait = doc.new_page()
    for i in range(6):
        portrait.insert_text((60, 100 + 20 * i), f"Left column, line {i}.")
        portrait.insert_text((320, 100 + 20 * i), f"Right column, line {i}.")
    assert not is_spread(portrait)


def _read_in_child(engine: LocalEngine, data: bytes, answers) -> None:  # type: ignore[no-untyped-def]
    result = transcribe(engine, data)
    answers.put((result.method, (result.extra.get("agreement") or {}).get("lines")))


def test_a_forked_child_reads_text_layer_pages_after_its_parent_did() -> None:
    # The agreement signal's lines are read on the engine's side thread. A prefork pool's child
    # inherits the engine but not that thread: it must start its own, not wait for ever.
    import multiprocessing

    engine = LocalEngine()
    data = documents.born_digital_pdf()
    parent = transcribe(engine, data)
    assert parent.extra["agreement"]["lines"] >= 1
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_read_in_child, args=(engine, data, answers))
    child.start()
    child.join(timeout=120)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child never finished its page")
    assert child.exitcode == 0
    assert answers.get(timeout=5) == ("text-layer", parent.extra["agreement"]["lines"])
