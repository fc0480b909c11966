"""Running heads and feet found across a document's pages (``model.running_lines``), on the
py-pdf LaTeX book of the shared corpus and on generated pages."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from model.running_lines import (
    drop_lines,
    margin_lines,
    nearest_first,
    running_lines,
    same_line,
    scanned_to_read,
)

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
GEOTOPO = CORPUS / "pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf"


def _book(heads: list[str], first_lines: list[str]) -> pymupdf.Document:
    doc = pymupdf.open()
    for number, (head, first) in enumerate(zip(heads, first_lines, strict=True), start=1):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 60), head, fontsize=9)
        page.insert_text((72, 110), first, fontsize=11)
        page.insert_text((72, 400), "Body text of the page, different on every page.", fontsize=11)
        page.insert_text((290, 800), str(number), fontsize=9)
    return doc


def test_a_head_the_next_pages_carry_is_running_and_the_first_body_line_is_not():
    doc = _book(["A Short Book"] * 3, ["Chapter one begins", "It went on", "And ended"])
    own = margin_lines(doc[1])
    assert set(running_lines(doc, 1, own)) == {"A Short Book", "2"}


def test_chapter_headings_atop_consecutive_pages_are_not_running_heads():
    doc = _book(["Chapter 1", "Chapter 2", "Chapter 3"], ["One", "Two", "Three"])
    assert running_lines(doc, 1, margin_lines(doc[1])) == ["2"]


def test_a_lone_page_has_no_running_lines_to_find():
    doc = _book(["A Short Book"], ["Chapter one begins"])
    assert running_lines(doc, 0, margin_lines(doc[0])) == []


def test_only_lines_made_of_running_text_go_and_only_at_the_page_edges():
    markdown = (
        "*Sample paper for the* `amsmath` *package* 5\n\nBody.\n\n"
        "Sample paper for the amsmath package is cited here.\n\nMore.\n\nEnd.\n\nLast."
    )
    out = drop_lines(markdown, ["Sample paper for the amsmath package", "5"])
    assert out.split("\n")[0] == ""
    assert "is cited here" in out


def test_a_code_fence_at_the_page_edge_stays_with_its_code():
    # R's manual: a running head, then a code block among the page's first three lines.
    markdown = "Chapter 7: Reading data\n\nRead it as\n\n```\n> x <- scan()\n```\n\nBody."
    out = drop_lines(markdown, ["Chapter 7: Reading data"])
    assert "Chapter 7" not in out
    assert out.count("```") == 2
    assert "```\n> x <- scan()\n```" in out


def test_a_page_made_only_of_what_its_neighbours_carry_keeps_it():
    assert drop_lines("habibi\n", ["habibi"]) == "habibi\n"


@pytest.mark.skipif(not GEOTOPO.is_file(), reason="the shared corpus is not beside the repository")
def test_the_books_running_head_and_page_number_are_found():
    with pymupdf.open(GEOTOPO) as doc:
        found = running_lines(doc, 49, margin_lines(doc[49]))
    assert set(found) == {"47", "3.1. HOMOTOPIE VON WEGEN"}


def test_ocr_misreadings_of_one_line_match_but_other_numbers_never_do():
    assert same_line("row and column access", "row and colurnn access", fuzzy=True)
    assert not same_line("row and column access", "row and colurnn access")
    assert not same_line("chapter 2 introduction", "chapter 3 introduction", fuzzy=True)
    assert not same_line("a short", "a shart", fuzzy=True)  # too short to tell a misreading


def test_the_nearest_pages_are_asked_first():
    assert nearest_first(5, 10) == [4, 6, 3, 7]
    assert nearest_first(0, 3) == [1, 2]


def _scanned(doc: pymupdf.Document, dpi: int = 100) -> pymupdf.Document:
    """The document with every page replaced by a picture of it: no text layer left."""
    out = pymupdf.open()
    for page in doc:
        pix = page.get_pixmap(dpi=dpi)
        new = out.new_page(width=page.rect.width, height=page.rect.height)
        new.insert_image(new.rect, stream=pix.tobytes("png"))
    return out


def test_a_scanned_neighbours_margins_are_read_only_until_every_line_is_matched():
    doc = _scanned(_book(["A Short Book"] * 5, ["One", "Two", "Three", "Four", "Five"]))
    asked: list[tuple[int, dict]] = []

    def read(page: pymupdf.Page, wanted: dict) -> list[tuple[str, str]]:
        asked.append((page.number, dict(wanted)))
        return [("top", "A Short Book")] if "top" in wanted else [("bottom", "7")]

    own = [("top", "A Short Book", 0.06, 0.075), ("bottom", "3", 0.94, 0.955)]
    assert set(running_lines(doc, 2, own, read)) == {"A Short Book", "3"}
    # Page 2 (index 1) showed the head. The foot was still unmatched; page 4, beside too,
    # is not read, page 5, two after, is (``scanned_to_read``), for the foot alone and where
    # the page's own foot lies.
    assert asked == [
        (1, {"top": (0.06, 0.075), "bottom": (0.94, 0.955)}),
        (4, {"bottom": (0.94, 0.955)}),
    ]


def test_the_scanned_pages_read_are_the_one_before_and_the_one_two_after():
    assert scanned_to_read(5, 10) == {4, 7}
    assert scanned_to_read(0, 10) == {1, 2}
    assert scanned_to_read(9, 10) == {8, 7}
    assert scanned_to_read(1, 2) == {0}


def test_a_strip_is_read_from_the_edge_to_past_the_lines_and_inside_the_band():
    from model.engines.scan_margins import strip_span

    start, end = strip_span("top", (0.06, 0.08))
    assert start == 0.0 and 0.08 < end < 0.2
    assert strip_span("bottom", None) == (0.8, 1.0)
    start, end = strip_span("bottom", (0.97, 0.99))
    assert 0.8 < start < 0.97 and end == 1.0


def test_without_a_reader_a_scanned_neighbour_shows_nothing():
    doc = _scanned(_book(["A Short Book"] * 3, ["One", "Two", "Three"]))
    assert running_lines(doc, 1, [("top", "A Short Book")]) == []


@pytest.mark.slow  # whole-page OCR of a scanned page and its neighbours' margins
@pytest.mark.parametrize("headers", ["drop", "keep"])
def test_a_scanned_books_running_head_goes_as_its_neighbours_margins_show_it(headers):
    from model.engines.base import EngineOptions, PageInput
    from model.engines.local import LocalEngine

    book = pymupdf.open()
    for number in range(1, 6):
        page = book.new_page(width=595, height=842)
        page.insert_text((72, 60), "Notes on the Harbour Survey", fontsize=10)
        page.insert_text(
            (72, 120), f"Section {number} opens with the tides of the bay.", fontsize=12
        )
        page.insert_text(
            (72, 400), f"The soundings of day {number} were taken at noon.", fontsize=12
        )
    scanned = _scanned(book, dpi=150)
    engine = LocalEngine()
    result = engine.transcribe(
        PageInput(scanned.tobytes(), "application/pdf", 3), EngineOptions(headers=headers)
    )

    assert result.method == "ocr"
    assert "tides of the bay" in result.markdown
    assert ("Harbour Survey" in result.markdown) == (headers == "keep"), result.markdown
