"""Word spaces from the text layer (``model.word_spacing``): words split at span boundaries
joined, words run together split, and what the page itself spaces left as it is; then the
engine on an office document whose letter-spaced words pymupdf4llm splits."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from model import pipeline
from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.word_spacing import respace_words

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
OFFICE = CORPUS / "docling-testdata/odf/sources/text_document_03.odt.pdf"


def test_a_word_split_at_its_spans_is_joined_when_the_page_has_it_whole():
    page = ["Mixed content - list and regular text", "Regular text in second cell"]
    assert respace_words("- Re g ular t ex t in second cell", page) == (
        "- Regular text in second cell"
    )


def test_a_sign_set_against_an_italic_name_keeps_to_it():
    page = ["(b) Der Winkel ∠PQR ist gleich seinem Scheitelwinkel."]
    assert respace_words("(b) Der Winkel ∠ _PQR_ ist gleich", page) == (
        "(b) Der Winkel ∠_PQR_ ist gleich"
    )


def test_words_run_together_get_the_space_the_page_shows():
    page = ["the locking shoulder of the case"]
    assert respace_words("Figure 2: the lockingshoulder.", page) == (
        "Figure 2: the locking shoulder."
    )


def test_what_the_page_spaces_so_stays():
    page = ["a, b and c", "in to the", "into", "1 000 units"]
    for markdown in ("a, b and c", "in to the", "1 000 units", "the ( a b )"):
        assert respace_words(markdown, page) == markdown
    # a word the page does not have is never made, nor one it has split
    assert respace_words("un known", ["unknown things"]) == "unknown"
    assert respace_words("un known", ["un known things", "unknown"]) == "un known"
    # mathematics and markup against a letter stay as they are
    assert respace_words("r ∈ R + and l =0", ["r ∈R+ and l=0"]) == "r ∈ R + and l =0"
    assert respace_words("_x − y⟩_ zum Raum", ["x −y⟩zum Raum"]) == "_x − y⟩_ zum Raum"
    assert respace_words("ist $a b$ gleich", ["ist ab gleich"]) == "ist $a b$ gleich"
    # code is written as the page has it
    assert respace_words("```\nRe g ular\n```", ["Regular"]) == "```\nRe g ular\n```"


@pytest.mark.slow
def test_the_office_documents_letter_spaced_cell_reads_as_words():
    if not OFFICE.exists():
        pytest.skip("the shared test corpus is not checked out next to the repository")
    data = OFFICE.read_bytes()
    with pymupdf.open(stream=data) as doc:
        assert "Regular text in second cell" in doc[1].get_text()
    result = pipeline.transcribe_page(
        LocalEngine(), PageInput(data, "application/pdf", 2), EngineOptions()
    )
    assert "Regular text in second cell" in result.markdown
    assert "Re g ular" not in result.markdown
