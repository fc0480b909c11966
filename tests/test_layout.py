"""Layout blocks, chunks and the searchable PDF, built from real engine output.

The claims the issue makes, each proved against something independent of the code under
test: text-layer words (PyMuPDF's own extraction) for born-digital boxes, the words' true
positions on the page a scan was made from, and pdfminer.six (a second PDF parser) reading
the searchable PDF back.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pymupdf
import pytest

from model import pipeline
from model.documents import inspect_document
from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.layout import BLOCK_TYPES, PageLayout, page_size_points
from model.layout.chunks import chunk_document
from model.layout.grounding import grounded_layout
from model.layout.searchable_pdf import PageText, searchable_pdf
from model.tokens import count_tokens
from tests import documents

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
BORN_DIGITAL_CORPUS = (
    "docling-testdata/pdf/sources/2305.03393v1-pg9.pdf",
    "docling-testdata/pdf/sources/multi_page.pdf",
    "docling-testdata/pdf/sources/amt_handbook_sample.pdf",
    "pdf-samples/026-latex-multicolumn/multicolumn.pdf",
)
# Block types whose Markdown is running text that the text layer holds word for word.
TEXT_TYPES = ("title", "heading", "paragraph", "list_item", "caption", "footnote")


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine()


def read(engine, data: bytes, page: int = 1, **options):
    info = inspect_document(data)
    return pipeline.transcribe_page(
        engine, PageInput(data, info.mime_type, page), EngineOptions(**options)
    )


def corpus_file(relative: str) -> bytes:
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"the shared test corpus is not checked out next to the repository ({path})")
    return path.read_bytes()


def words_of(markdown: str) -> list[str]:
    # Words of three letters or more: markup, numbers in tables and hyphenation joins aside.
    text = re.sub(r"<[^>]+>", " ", markdown)  # HTML markup (<sup>, table tags) is not text
    return re.findall(r"[^\W\d_]{3,}", text.lower())


def inside(box, outer, tolerance: float = 1.5) -> bool:
    x0, y0, x1, y1 = box
    return (
        x0 >= outer[0] - tolerance
        and y0 >= outer[1] - tolerance
        and x1 <= outer[2] + tolerance
        and y1 <= outer[3] + tolerance
    )


def centre_inside(box, outer, tolerance: float = 1.5) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return outer[0] - tolerance <= cx <= outer[2] + tolerance and (
        outer[1] - tolerance <= cy <= outer[3] + tolerance
    )


def text_layer_words(data: bytes, page: int) -> list[tuple[tuple[float, ...], str]]:
    doc = pymupdf.open(stream=data)
    try:
        return [(tuple(w[:4]), w[4]) for w in doc[page - 1].get_text("words")]
    finally:
        doc.close()


def words_in(box, layer) -> set[str]:
    found: set[str] = set()
    for word_box, text in layer:
        if centre_inside(word_box, box):
            found.update(words_of(text))
    return found


# --- born-digital pages: boxes land on the words --------------------------------------------


@pytest.mark.parametrize("relative", BORN_DIGITAL_CORPUS)
def test_born_digital_block_boxes_contain_their_text_layer_words(engine, relative):
    data = corpus_file(relative)
    result = read(engine, data)
    layout = result.layout
    assert result.method == "text-layer" and layout.source == "text-layer"
    doc = pymupdf.open(stream=data)
    assert (layout.width, layout.height) == pytest.approx((doc[0].rect.width, doc[0].rect.height))
    layer = text_layer_words(data, 1)
    checked = 0
    for block in layout.blocks:
        assert block.type in BLOCK_TYPES
        x0, y0, x1, y1 = block.bbox
        assert 0 <= x0 < x1 <= layout.width + 1 and 0 <= y0 < y1 <= layout.height + 1
        if block.type not in TEXT_TYPES:
            continue
        expected = words_of(block.markdown)
        if not expected:
            continue
        present = words_in(block.bbox, layer)
        missing = [w for w in expected if w not in present]
        # Nearly every word of the block is under its box (a word the Markdown writer joined
        # across a line-end hyphen is the usual exception).
        assert len(missing) <= max(1, len(expected) // 20), (block, missing)
        checked += 1
    assert checked >= 3
    # Reading order: the blocks' Markdown, joined, is the page's Markdown.
    joined = "\n\n".join(b.markdown for b in layout.blocks if b.markdown)
    assert words_of(joined) == words_of(result.markdown)


def test_born_digital_headings_tables_and_levels(engine):
    layout = read(engine, documents.born_digital_pdf(), 2).layout
    kinds = [b.type for b in layout.blocks]
    assert "table" in kinds and "heading" in kinds
    heading = next(b for b in layout.blocks if b.type == "heading")
    assert "Cargo volumes by terminal" in heading.markdown
    assert heading.level == len(heading.markdown) - len(heading.markdown.lstrip("#"))
    table = next(b for b in layout.blocks if b.type == "table")
    layer = text_layer_words(documents.born_digital_pdf(), 2)
    for row in documents.BORN_DIGITAL_TABLE_ROWS:
        assert row[0] in table.markdown
        assert set(words_of(row[0])) <= words_in(table.bbox, layer)


# --- scans: OCR boxes, and the searchable PDF ----------------------------------------------


def true_word_boxes(lines) -> dict[str, tuple[float, ...]]:
    """Where each word of a generated scan really is: the page it was rasterized from."""
    doc = documents._text_page(lines)
    return {w[4]: tuple(w[:4]) for w in doc[0].get_text("words")}


def centre_distance(a, b) -> float:
    return max(
        abs((a[0] + a[2]) / 2 - (b[0] + b[2]) / 2), abs((a[1] + a[3]) / 2 - (b[1] + b[3]) / 2)
    )


@pytest.mark.slow
def test_ocr_blocks_and_words_land_where_the_scan_shows_them(engine):
    result = read(engine, documents.scanned_pdf())
    layout = result.layout
    assert result.method == "ocr" and layout.source == "ocr"
    assert (layout.width, layout.height) == pytest.approx(
        page_size_points(documents.scanned_pdf(), "application/pdf", 1)
    )
    truth = true_word_boxes(documents.SCAN_LINES)
    ocr_words = {w.text: w.bbox for w in layout.words}
    for word in documents.SCAN_WORDS:
        assert word in ocr_words, (word, sorted(ocr_words))
        # Within a few points of where it was printed (26 pt type).
        assert centre_distance(ocr_words[word], truth[word]) < 6, word
    for block in layout.blocks:
        assert 0 < (block.confidence or 0) <= 1
        block_words = [w for w in layout.words if w.text.lower() in words_of(block.markdown)]
        assert block_words and all(inside(w.bbox, block.bbox) for w in block_words)


@pytest.mark.parametrize("maker", [documents.scanned_pdf, documents.png_page])
def test_searchable_pdf_text_is_found_on_the_right_page_at_the_right_place(engine, maker):
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTChar, LTTextContainer

    data = maker()
    result = read(engine, data)
    out = searchable_pdf(data, inspect_document(data).mime_type, [PageText(1, result.layout)])
    # pdfminer.six, a parser that shares nothing with PyMuPDF, reads it back.
    pages = list(extract_pages(io.BytesIO(out)))
    assert len(pages) == 1
    page = pages[0]
    assert (page.width, page.height) == pytest.approx((result.layout.width, result.layout.height))
    found: dict[str, tuple[float, ...]] = {}
    for element in page:
        if not isinstance(element, LTTextContainer):
            continue
        for line in element:
            chars = [c for c in line if isinstance(c, LTChar)]
            text = "".join(c.get_text() for c in chars)
            for match in re.finditer(r"\S+", text):
                span = chars[match.start() : match.end()]
                # pdfminer's y grows upwards; the layout's downwards from the top.
                found[match.group()] = (
                    span[0].x0,
                    page.height - max(c.y1 for c in span),
                    span[-1].x1,
                    page.height - min(c.y0 for c in span),
                )
    ocr_words = {w.text: w.bbox for w in result.layout.words}
    for word in documents.SCAN_WORDS:
        assert word in found, (word, sorted(found))
        x0, y0, x1, y1 = found[word]
        ox0, oy0, ox1, oy1 = ocr_words[word]
        # Horizontally the invisible word spans its OCR box; vertically it sits in it.
        assert abs(x0 - ox0) < 1.5 and abs(x1 - ox1) < 1.5, (word, found[word], ocr_words[word])
        assert oy0 - 2 <= (y0 + y1) / 2 <= oy1 + 2, (word, found[word], ocr_words[word])
    # And PyMuPDF's search, as a PDF viewer would run it, lands on the same place.
    doc = pymupdf.open(stream=out)
    hits = doc[0].search_for("Marlow")
    assert hits and centre_distance(tuple(hits[0]), ocr_words["Marlow"]) < 3


def test_searchable_pdf_passes_born_digital_pages_through_and_keeps_the_job_pages(engine):
    data = documents.born_digital_pdf()
    layouts = [read(engine, data, n).layout for n in (3, 1)]
    out = searchable_pdf(
        data, "application/pdf", [PageText(3, layouts[0]), PageText(1, layouts[1])]
    )
    source, result = pymupdf.open(stream=data), pymupdf.open(stream=out)
    assert result.page_count == 2
    # Unchanged: the same text at the same places, and no second (invisible) copy.
    for index, number in enumerate((3, 1)):
        assert result[index].get_text("words") == source[number - 1].get_text("words")


def test_an_image_becomes_a_page_of_its_size_at_its_resolution(engine):
    image = documents.scan_image()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", dpi=(300, 300))
    data = buffer.getvalue()
    width, height = page_size_points(data, "image/png", 1)
    # PNG stores pixels per metre: 300 dpi comes back as 299.9994.
    assert (width, height) == pytest.approx(
        (image.width * 72 / 300, image.height * 72 / 300), abs=0.01
    )
    result = read(engine, data)
    out = pymupdf.open(stream=searchable_pdf(data, "image/png", [PageText(1, result.layout)]))
    assert (out[0].rect.width, out[0].rect.height) == pytest.approx((width, height), abs=0.01)
    assert "Marlow" in out[0].get_text()
    assert out[0].get_images()


# --- vision models: grounding tags ------------------------------------------------------------


def test_grounding_tags_become_blocks_in_points():
    text = (
        "<|ref|>title<|/ref|><|det|>[[100, 50, 899, 90]]<|/det|>\n# Annual Report\n\n"
        "<|ref|>text<|/ref|><|det|>[[100, 120, 899, 300]]<|/det|>\nThe year in review.\n\n"
        "<|ref|>image<|/ref|><|det|>[[100, 320, 500, 600]]<|/det|>\n\n"
        "<|ref|>image_caption<|/ref|><|det|>[[100, 610, 500, 640]]<|/det|>\nFigure 1: a map\n"
        "<|ref|>table<|/ref|><|det|>[[0, 700, 999, 999]]<|/det|>\n"
        "<table><tr><td>1</td></tr></table>"
    )
    layout = grounded_layout(text, (595.0, 842.0))
    assert [b.type for b in layout.blocks] == ["title", "paragraph", "figure", "caption", "table"]
    title = layout.blocks[0]
    assert title.markdown == "# Annual Report" and title.level == 1
    assert title.bbox == pytest.approx(
        (100 / 999 * 595, 50 / 999 * 842, 899 / 999 * 595, 90 / 999 * 842)
    )
    assert layout.blocks[4].bbox == pytest.approx((0, 700 / 999 * 842, 595, 842))
    assert "<|" not in "".join(b.markdown for b in layout.blocks)


def test_a_page_without_grounding_is_one_block_over_the_page():
    assert grounded_layout("Just text, no tags.", (595.0, 842.0)) is None

    class Ungrounded:
        name, version, max_pages_in_flight = "plain", "1", 1

        def load(self):
            pass

        def transcribe(self, page, options):
            from model.engines.base import PageResult

            return PageResult(markdown="Only text.\n", method="vlm")

    data = documents.png_page()
    result = pipeline.transcribe_page(
        Ungrounded(), PageInput(data, "image/png", 1), EngineOptions()
    )
    (block,) = result.layout.blocks
    assert block.markdown == "Only text." and block.bbox == (
        0,
        0,
        *page_size_points(data, "image/png", 1),
    )
    assert result.layout.source == "page"


def test_layout_round_trips_through_its_dict(engine):
    layout = read(engine, documents.scanned_pdf()).layout
    again = PageLayout.from_dict(layout.to_dict())
    assert again.to_dict() == layout.to_dict()
    assert [w.text for w in again.words] == [w.text for w in layout.words]


# --- chunks ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_chunk_provenance_round_trips_on_a_real_document(engine):
    data = corpus_file("docling-testdata/pdf/sources/multi_page.pdf")
    count = pymupdf.open(stream=data).page_count
    pages = [(n, read(engine, data, n).layout) for n in range(1, count + 1)]
    chunks = chunk_document(pages, max_tokens=120)
    assert len(chunks) > count
    layers = {n: text_layer_words(data, n) for n in range(1, count + 1)}
    for chunk in chunks:
        assert (
            chunk["tokens"] == sum(count_tokens(part) for part in chunk["text"].split("\n\n"))
            and chunk["tokens"] <= 120
        )
        assert chunk["pages"] == sorted({box["page"] for box in chunk["boxes"]})
        # Every word of the chunk lies under one of the boxes it names.
        covered: set[str] = set()
        for box in chunk["boxes"]:
            covered |= words_in(box["bbox"], layers[box["page"]])
        missing = [w for w in words_of(chunk["text"]) if w not in covered]
        assert len(missing) <= max(1, len(words_of(chunk["text"])) // 20), (chunk, missing)
    # Heading-aware: a chunk that starts with a heading carries it last in its path.
    for chunk in chunks:
        first = chunk["text"].split("\n\n")[0]
        if first.startswith("#"):
            assert chunk["headings"][-1] == first.lstrip("# ").strip()


def test_tables_are_never_split_and_long_paragraphs_are_split_between_sentences():
    from model.layout.schema import Block

    sentence = "The harbour handled more ships this quarter than ever before. "
    table = "| a | b |\n|---|---|\n" + "".join(f"| row {i} | {i} |\n" for i in range(60))
    layout = PageLayout(
        595,
        842,
        [
            Block("title", "# Report", (10, 10, 500, 40), level=1),
            Block("heading", "## Volumes", (10, 50, 500, 70), level=2),
            Block("paragraph", sentence * 30, (10, 80, 500, 400)),
            Block("table", table.strip(), (10, 410, 500, 800)),
            Block("page_footer", "3", (290, 810, 300, 820)),
        ],
        "text-layer",
    )
    chunks = chunk_document([(1, layout)], max_tokens=64)
    tables = [c for c in chunks if "| row 0 |" in c["text"]]
    assert len(tables) == 1 and "| row 59 |" in tables[0]["text"]
    assert tables[0]["tokens"] > 64  # the one kind allowed past the bound
    prose = [c for c in chunks if "harbour" in c["text"]]
    assert len(prose) > 1
    for chunk in prose:
        assert chunk["tokens"] <= 64
        assert chunk["text"].rstrip().endswith(".")
        assert chunk["headings"] == ["Report", "Volumes"]
    assert not any(c["text"] == "3" for c in chunks)
