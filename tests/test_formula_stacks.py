"""Fractions set with a rule and radicals on born-digital pages, through the local engine's
text-layer path (PDFs drawn with PyMuPDF: text, a drawn rule, the √ of a font that has it)."""

from __future__ import annotations

import pymupdf
import pytest

from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.formula_stacks import stacked_formulas
from model.quality.realpages import CORPUS

PROSE = "A paragraph of ordinary prose sits on this page so that it reads as a page of text."


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine()


def _page(draw) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    # Base-14 Helvetica has no √ in its encoding; MuPDF's built-in fallback font has one.
    page.insert_font(fontname="math", fontbuffer=pymupdf.Font("cjk").buffer)
    page.insert_text((72, 200), PROSE, fontsize=11)
    draw(page)
    page.insert_text((72, 400), "And a closing paragraph of prose after the formulas.", fontsize=11)
    try:
        return bytes(doc.tobytes())
    finally:
        doc.close()


def _read(engine: LocalEngine, data: bytes) -> tuple[str, list[str]]:
    result = engine.transcribe(PageInput(data, "application/pdf", 1), EngineOptions())
    return result.markdown, result.extra["extraction_notes"]


def _fraction(page, x: float, y: float, num: str, den: str, den_dx: float = 0.0) -> None:
    """``num`` over ``den`` on a rule at axis ``y``, both centred unless ``den_dx``."""
    wn, wd = pymupdf.get_text_length(num, fontsize=11), pymupdf.get_text_length(den, fontsize=11)
    width = max(wn, wd) + 4
    page.insert_text((x + (width - wn) / 2, y - 4), num, fontsize=11)
    page.draw_line((x, y), (x + width, y), width=0.6)
    page.insert_text((x + (width - wd) / 2 + den_dx, y + 12), den, fontsize=11)


def test_a_fraction_with_a_rule_becomes_frac_in_reading_order(engine):
    def draw(page):
        page.insert_text((72, 260), "x =", fontsize=11)
        _fraction(page, 94, 256, "a + b", "2")
        page.insert_text((132, 260), "+ 1", fontsize=11)

    markdown, notes = _read(engine, _page(draw))
    assert r"$$x = \frac{a + b}{2} + 1$$" in markdown.split("\n"), markdown
    assert "a + b x" not in markdown and notes == []
    assert PROSE in markdown


def test_two_fractions_on_a_row_and_a_script_in_a_numerator(engine):
    def draw(page):
        page.insert_text((72, 260), "y =", fontsize=11)
        _fraction(page, 94, 256, "1", "n")
        page.insert_text((112, 260), "+", fontsize=11)
        page.insert_text((126, 252), "x", fontsize=11)
        page.insert_text((132.5, 248), "2", fontsize=7)
        page.draw_line((124, 256), (142, 256), width=0.6)
        page.insert_text((129, 268), "m", fontsize=11)

    markdown, notes = _read(engine, _page(draw))
    assert r"$$y = \frac{1}{n} + \frac{x^{2}}{m}$$" in markdown.split("\n"), markdown
    assert notes == []


def test_a_radical_with_its_rule_becomes_sqrt(engine):
    def draw(page):
        page.insert_text((72, 260), "y =", fontsize=11)
        page.insert_text((90, 260), "√", fontsize=11, fontname="math")
        page.draw_line((100, 249), (127, 249), width=0.6)
        page.insert_text((101, 260), "x + 1", fontsize=11)

    markdown, notes = _read(engine, _page(draw))
    assert r"$$y = \sqrt{x + 1}$$" in markdown.split("\n"), markdown
    assert notes == []


def test_a_fraction_not_centred_on_its_rule_is_left_as_text_and_reported(engine):
    def draw(page):
        page.insert_text((72, 260), "x =", fontsize=11)
        _fraction(page, 94, 256, "a + b + c", "2", den_dx=14)

    markdown, notes = _read(engine, _page(draw))
    assert r"\frac" not in markdown and "a + b + c" in markdown
    assert any(note.startswith("fraction left as text") for note in notes), notes


def test_a_radical_with_nothing_under_its_rule_is_reported(engine):
    def draw(page):
        page.insert_text((72, 260), "y =", fontsize=11)
        page.insert_text((90, 260), "√", fontsize=11, fontname="math")
        page.draw_line((100, 249), (127, 249), width=0.6)

    markdown, notes = _read(engine, _page(draw))
    assert r"\sqrt" not in markdown and "√" in markdown
    assert any(note.startswith("radical left as text") for note in notes), notes


def test_an_underline_and_a_plain_root_are_no_formula(engine):
    def draw(page):
        page.insert_text((72, 260), "Underlined heading", fontsize=11)
        page.draw_line((72, 262), (170, 262), width=0.6)
        page.insert_text((72, 300), "The ratio √2 is irrational.", fontsize=11, fontname="math")

    markdown, notes = _read(engine, _page(draw))
    assert "$" not in markdown and "Underlined heading" in markdown and "√2" in markdown
    assert notes == []


def test_a_fraction_in_an_exponent_is_reported_not_rebuilt(engine):
    def draw(page):
        page.insert_text((72, 260), "y = e", fontsize=11)
        page.insert_text((101, 250), "1", fontsize=6)
        page.draw_line((99, 252), (108, 252), width=0.4)
        page.insert_text((99.5, 258), "10", fontsize=6)
        page.insert_text((112, 260), "+ 1", fontsize=11)

    markdown, notes = _read(engine, _page(draw))
    assert r"\frac" not in markdown
    assert any(note.startswith("formula left as text") for note in notes), (markdown, notes)


def test_a_rule_set_as_a_line_of_dashes_makes_a_fraction(engine):
    def draw(page):
        page.insert_text((72, 260), "z =", fontsize=11)
        page.insert_text((97, 250), "a", fontsize=11)
        page.insert_text((93, 256), "-----", fontsize=6)
        page.insert_text((97, 266), "b", fontsize=11)

    markdown, notes = _read(engine, _page(draw))
    assert r"$$z = \frac{a}{b}$$" in markdown.split("\n"), (markdown, notes)
    assert "--" not in markdown and notes == []


def test_a_fraction_inside_a_fraction_is_reported_not_rebuilt(engine):
    def draw(page):
        page.insert_text((72, 260), "x =", fontsize=11)
        page.insert_text((100, 240), "1", fontsize=11)
        page.draw_line((99, 244), (107, 244), width=0.6)
        page.insert_text((100, 255), "n", fontsize=11)
        page.draw_line((97, 258), (109, 258), width=0.6)
        page.insert_text((100, 270), "2", fontsize=11)

    markdown, notes = _read(engine, _page(draw))
    assert r"\frac" not in markdown
    assert any(note.startswith("fraction left as text") for note in notes), (markdown, notes)


def test_labels_of_a_figure_line_are_no_fraction_but_a_grid_line_through_one_is(engine):
    """A triangle's base with a label centred above and below it: the sides end on the rule
    (vertices), so it is a line of a drawing. The same labels round a bare rule are a
    fraction, and so is a tick label with a plot's grid line passing right through it."""

    def triangle(page):
        page.insert_text((96, 260), "x =", fontsize=11)
        _fraction(page, 120, 256, "a", "b")
        page.draw_line((120, 256), (126, 226), width=0.6)
        page.draw_line((126, 226), (132, 256), width=0.6)

    markdown, notes = _read(engine, _page(triangle))
    assert r"\frac" not in markdown and notes == [], (markdown, notes)

    def bare(page):
        page.insert_text((96, 260), "x =", fontsize=11)
        _fraction(page, 120, 256, "a", "b")

    markdown, notes = _read(engine, _page(bare))
    assert r"\frac{a}{b}" in markdown, (markdown, notes)

    def gridded(page):
        page.insert_text((96, 260), "x =", fontsize=11)
        _fraction(page, 120, 256, "a", "b")
        page.draw_line((126, 220), (126, 290), width=0.3, dashes="[2] 0")

    markdown, notes = _read(engine, _page(gridded))
    assert r"\frac{a}{b}" in markdown, (markdown, notes)


def test_vertex_labels_spread_along_a_bare_segment_are_no_fraction(engine):
    """``B`` over the middle of a segment, ``P`` and ``Q`` under its two ends: the labels of
    the segment PQ, several type sizes apart, not a denominator ``P Q``."""

    def draw(page):
        page.insert_text((150, 252), "B", fontsize=11)
        page.draw_line((120, 256), (190, 256), width=0.6)
        page.insert_text((120, 268), "P", fontsize=11)
        page.insert_text((182, 268), "Q", fontsize=11)

    markdown, notes = _read(engine, _page(draw))
    assert r"\frac" not in markdown and notes == [], (markdown, notes)
    assert "B" in markdown and "P" in markdown and "Q" in markdown


GEOTOPO = "pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf"


@pytest.mark.skipif(not (CORPUS / GEOTOPO).is_file(), reason="the shared corpus is not beside")
def test_geotopo_figure_labels_are_no_fraction_and_its_tick_fractions_still_are():
    """GeoTopo p. 72 (fig. "1. Fall"): the line PQ of a drawing, B above it, P and Q below,
    once read ``\\frac{B}{P Q}``. P. 35's sine plot labels its ticks π/2 and 3π/2 with a
    dashed grid line through each: those are fractions."""
    with pymupdf.open(CORPUS / GEOTOPO) as doc:
        page = doc[71]
        formulas, notes = stacked_formulas(page, page.get_text("rawdict"))
        assert not any(r"\frac" in f.latex for f in formulas), [f.latex for f in formulas]
        assert notes == []
        page = doc[34]
        formulas, _ = stacked_formulas(page, page.get_text("rawdict"))
        latex = " ".join(f.latex for f in formulas)
        assert r"\frac{\pi}{2}" in latex and r"\frac{3\pi}{2}" in latex, latex
