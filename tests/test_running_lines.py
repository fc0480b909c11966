"""Running heads and feet found across a document's pages (``model.running_lines``), on the
py-pdf LaTeX book of the shared corpus and on generated pages."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from model.running_lines import drop_lines, margin_lines, running_lines

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


def test_a_page_made_only_of_what_its_neighbours_carry_keeps_it():
    assert drop_lines("habibi\n", ["habibi"]) == "habibi\n"


@pytest.mark.skipif(not GEOTOPO.is_file(), reason="the shared corpus is not beside the repository")
def test_the_books_running_head_and_page_number_are_found():
    with pymupdf.open(GEOTOPO) as doc:
        found = running_lines(doc, 49, margin_lines(doc[49]))
    assert set(found) == {"47", "3.1. HOMOTOPIE VON WEGEN"}
