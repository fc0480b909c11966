"""Binomials and matrices between tall delimiters on born-digital pages, through the local
engine's text-layer path. The pages are drawn with PyMuPDF: letters in Helvetica, the
delimiters built of Unicode pieces (⎛ ⎜ ⎝), which MuPDF sets in its own math font, as
typesetters other than TeX write them; TeX's extension font, whose delimiters have no
Unicode, is read by its character codes (checked on glyph records here)."""

from __future__ import annotations

import pymupdf
import pytest

from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.engines.pdf_text import TEXT_RAWDICT_FLAGS
from model.formula_delimiters import delimited_stacks, delimiter_kind
from model.formula_glyphs import Glyph, page_glyphs
from model.formula_stacks import stacked_formulas

HELVETICA = pymupdf.Font("helv")
SYMBOLS = pymupdf.Font("symb")  # MuPDF sets the pieces in its fallback math font
PROSE = "A paragraph of ordinary prose sits on this page so that it reads as a page of text."


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine()


class _Page:
    def __init__(self) -> None:
        self.doc = pymupdf.open()
        self.page = self.doc.new_page(width=595, height=842)
        self.writer = pymupdf.TextWriter(self.page.rect)
        self.text(72, 80, PROSE)

    def text(self, x: float, y: float, text: str) -> None:
        self.writer.append((x, y), text, font=HELVETICA, fontsize=10)

    def delimiter(self, x: float, top: float, pieces: str) -> None:
        """A tall delimiter of pieces, one under another from the baseline ``top``."""
        for n, piece in enumerate(pieces):
            self.writer.append((x, top + 9 * n), piece, font=SYMBOLS, fontsize=10)

    def pdf(self) -> bytes:
        self.text(72, 400, "And a closing paragraph of prose after the formulas.")
        self.writer.write_text(self.page)
        try:
            return bytes(self.doc.tobytes())
        finally:
            self.doc.close()


def _binomial(page: _Page, x: float, top: float, upper: str, lower: str) -> None:
    page.delimiter(x, top, "⎛⎜⎝")
    page.text(x + 6, top + 5, upper)
    page.text(x + 6, top + 18, lower)
    page.delimiter(x + 14, top, "⎞⎟⎠")


def _read(engine: LocalEngine, data: bytes) -> tuple[str, list[str]]:
    result = engine.transcribe(PageInput(data, "application/pdf", 1), EngineOptions())
    return result.markdown, result.extra["extraction_notes"]


def test_a_binomial_in_a_display_becomes_binom(engine: LocalEngine) -> None:
    page = _Page()
    page.text(100, 132, "N =")
    _binomial(page, 122, 120, "k", "1")
    page.text(146, 132, "+ 1")
    markdown, notes = _read(engine, page.pdf())
    assert "$$N = \\binom{k}{1} + 1$$" in markdown
    assert "⎛" not in markdown and "⎝" not in markdown
    assert not notes


def test_a_matrix_keeps_its_rows_columns_and_brackets(engine: LocalEngine) -> None:
    page = _Page()
    page.text(72, 150, "and the matrix")
    page.delimiter(122, 160, "⎡⎢⎣")
    for row, (left, right) in enumerate((("a", "b"), ("c", "d"))):
        page.text(129, 166 + 13 * row, left)
        page.text(145, 166 + 13 * row, right)
    page.delimiter(153, 160, "⎤⎥⎦")
    markdown, notes = _read(engine, page.pdf())
    assert "$$\\begin{bmatrix} a & b \\\\ c & d \\end{bmatrix}$$" in markdown
    assert "and the matrix" in markdown
    assert not notes


def test_two_stacks_on_two_lines_stay_apart() -> None:
    """Delimiters one above another are two pairs, each with its own rows."""
    page = _Page()
    _binomial(page, 122, 120, "n", "k")
    _binomial(page, 122, 170, "m", "j")
    doc = pymupdf.open("pdf", page.pdf())
    formulas, notes = stacked_formulas(doc[0], doc[0].get_text("rawdict", flags=TEXT_RAWDICT_FLAGS))
    assert sorted(f.latex for f in formulas) == ["\\binom{m}{j}", "\\binom{n}{k}"]
    assert not notes


def _fraction_in_parentheses() -> pymupdf.Document:
    """y = 2 (a/b)², the fraction's rule drawn, its parentheses tall, the square on them."""
    page = _Page()
    page.text(90, 132, "y = 2")
    page.delimiter(122, 120, "⎛⎜⎝")
    page.text(130, 125, "a")
    page.text(130, 140, "b")
    page.delimiter(140, 120, "⎞⎟⎠")
    page.writer.append((143.5, 122), "2", font=HELVETICA, fontsize=7)
    doc = pymupdf.open("pdf", page.pdf())
    doc[0].draw_line((128, 129), (138, 129), width=0.5)
    return pymupdf.open("pdf", doc.tobytes())


def test_a_fraction_in_tall_parentheses_keeps_them_and_its_exponent(engine: LocalEngine) -> None:
    doc = _fraction_in_parentheses()
    markdown, notes = _read(engine, doc.tobytes())
    assert "$$y = 2 \\left( \\frac{a}{b} \\right)^{2}$$" in markdown
    assert not notes


def test_a_fraction_in_large_parentheses_is_no_binomial() -> None:
    page = _fraction_in_parentheses()[0]
    glyphs, rules = page_glyphs(page.get_text("rawdict", flags=TEXT_RAWDICT_FLAGS))
    formulas, _ = stacked_formulas(page, page.get_text("rawdict", flags=TEXT_RAWDICT_FLAGS))
    assert not any("binom" in f.latex for f in formulas)  # the rule makes it a fraction
    stacks, wrappers, _ = delimited_stacks(page, glyphs, [])
    assert [s.latex for s in stacks] == ["\\binom{a}{b}"]  # what the rule alone prevents
    assert not wrappers


def test_a_stack_of_prose_is_left_as_text_and_reported() -> None:
    page = _Page()
    page.delimiter(122, 120, "⎛⎜⎝")
    page.text(128, 125, "the first")
    page.text(128, 138, "the second")
    page.delimiter(190, 120, "⎞⎟⎠")
    doc = pymupdf.open("pdf", page.pdf())
    glyphs, _ = page_glyphs(doc[0].get_text("rawdict", flags=TEXT_RAWDICT_FLAGS))
    stacks, wrappers, notes = delimited_stacks(doc[0], glyphs, [])
    assert stacks == [] and wrappers == []
    assert notes and notes[0].startswith("matrix left as text")


def test_short_brackets_in_prose_are_no_delimiters() -> None:
    """Parentheses of a text font, one line above another, are punctuation."""
    page = _Page()
    page.text(72, 120, "(see the note) and")
    page.text(72, 132, "(the other note)")
    doc = pymupdf.open("pdf", page.pdf())
    glyphs, _ = page_glyphs(doc[0].get_text("rawdict", flags=TEXT_RAWDICT_FLAGS))
    assert delimited_stacks(doc[0], glyphs, []) == ([], [], [])


def test_a_small_matrix_parts_its_columns_and_reads_its_cells_scripts() -> None:
    """Script-size cells (``\\smqty``), whose columns stand less than half an em apart, and
    subscripts judged against the cell's largest type: a_{11}, not a with a larger 11."""
    page = _Page()
    page.delimiter(122, 120, "⎛⎜⎝")
    for row in range(2):
        x = 129.0
        for column in range(2):
            page.writer.append((x, 126 + 12 * row), "a", font=HELVETICA, fontsize=7)
            page.writer.append((x + 3.9, 127.5 + 12 * row), f"{row + 1}{column + 1}",
                               font=HELVETICA, fontsize=5)  # fmt: skip
            x += 3.9 + 5.6 + 3
    page.delimiter(156, 120, "⎞⎟⎠")
    doc = pymupdf.open("pdf", page.pdf())
    formulas, _ = stacked_formulas(doc[0], doc[0].get_text("rawdict", flags=TEXT_RAWDICT_FLAGS))
    assert [f.latex for f in formulas] == [
        "\\begin{pmatrix} a_{11} & a_{12} \\\\ a_{21} & a_{22} \\end{pmatrix}"
    ]


def test_a_column_vector_with_vertical_dots() -> None:
    """TeX's \\vdots is three periods one above another: a cell of its own, no row of dots
    across the columns."""
    page = _Page()
    page.delimiter(122, 120, "⎛⎜⎜⎜⎝")
    page.text(129, 125, "x")
    for n in range(3):
        page.text(130, 139 + 4 * n, ".")
    page.text(129, 162, "y")
    page.delimiter(138, 120, "⎞⎟⎟⎟⎠")
    doc = pymupdf.open("pdf", page.pdf())
    formulas, notes = stacked_formulas(doc[0], doc[0].get_text("rawdict", flags=TEXT_RAWDICT_FLAGS))
    assert [f.latex for f in formulas] == ["\\begin{pmatrix} x \\\\ \\vdots \\\\ y \\end{pmatrix}"]


def _glyph(code: int, font: str = "KZFRJM+CMEX10") -> Glyph:
    return Glyph(chr(code), 0, 0, 5, 10, 9.96, 8, 1, font)


def test_tex_extension_font_codes_name_their_delimiters() -> None:
    """MuPDF gives a CMEX glyph with no Unicode as its character code: 0x12 and 0x13 are
    \\bigg( and \\bigg) (the binomials of amsmath's guide, p. 20), 0x30 a parenthesis's top
    piece, 0x0C a bar's extension; a mapped piece keeps its own character."""
    assert delimiter_kind(_glyph(0x12)) == "("
    assert delimiter_kind(_glyph(0x13)) == ")"
    assert delimiter_kind(_glyph(0x14)) == "["
    assert delimiter_kind(_glyph(0x30)) == "("
    assert delimiter_kind(_glyph(0x0C)) == "|"
    assert delimiter_kind(_glyph(0xF8F6)) == ")"  # the Symbol font's parenrighttp
    assert delimiter_kind(_glyph(0x12, font="CMR10")) == ""  # a control code, not a delimiter
