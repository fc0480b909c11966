"""Mathematics found by its fonts (``model.math_runs``): every run of math in a line, the
prose between them outside the delimiters, scripts of scripts, TeX's alphabets and negated
relations; placed in the Markdown as whole words only and never inside a formula already
placed; and two real GeoTopo pages through the local engine."""

from __future__ import annotations

import pymupdf
import pytest

from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.formulas import place_formulas
from model.markdown_hygiene import readable_markdown
from model.math_runs import line_math_runs
from model.quality.checks import math_spans
from model.quality.realpages import CORPUS
from model.word_spacing import respace_words

BASE = 100.0


def _span(text: str, font: str = "CMR10", *, size: float = 10.9, rise: float = 0.0) -> dict:
    return {"text": text, "size": size, "origin": (0.0, BASE - rise), "font": font}


def _sub(text: str) -> dict:
    return _span(text, "CMR8", size=8.0, rise=-1.7)


def _sup(text: str, font: str = "CMR7") -> dict:
    return _span(text, font, size=7.0, rise=4.0)


def test_each_run_of_math_in_a_sentence_is_its_own_formula_and_the_prose_stays_out():
    # GeoTopo p. 50: "Seien γ1, γ2 Wege in X mit γ1(1) = γ2(0). Dann ist"
    spans = [
        _span("Seien", "SFRM1095"), _span(" ", "CMMI10"), _span("γ", "CMMI10"), _sub("1"),
        _span(", γ", "CMMI10"), _sub("2"), _span(" Wege in ", "SFRM1095"), _span("X", "CMMI10"),
        _span(" mit ", "SFRM1095"), _span("γ", "CMMI10"), _sub("1"), _span("(1) ="),
        _span(" γ", "CMMI10"), _sub("2"), _span("(0)"), _span(".", "SFRM1095"),
        _span(" Dann ist", "SFRM1095"),
    ]  # fmt: skip
    found = line_math_runs(spans)
    assert found is not None
    # the lone X reads the same as text, and stays so; the full stop is the sentence's
    assert [f.latex for f in found] == [r"\gamma_{1}, \gamma_{2}", r"\gamma_{1}(1) = \gamma_{2}(0)"]
    assert not any(f.whole_line for f in found)


def test_a_line_without_a_math_font_is_left_to_the_relation_rule():
    assert line_math_runs([_span("E = mc"), _span("2", size=7, rise=4)]) is None


def test_a_display_with_a_negated_relation_and_operators_is_one_formula():
    spans = [
        _span("γ", "CMMI10"), _sub("1"), _span(" ∗", "CMSY10"), _span("("), _span("γ", "CMMI10"),
        _sub("2"), _span(")"), _span("̸", "CMSY10"), _span(" = ("), _span("γ", "CMMI10"),
        _sub("1"), _span(")"), _span(" ∼", "CMSY10"), _span("γ", "CMMI10"), _sub("3"),
    ]  # fmt: skip
    (formula,) = line_math_runs(spans) or []
    assert formula.whole_line
    assert formula.latex == r"\gamma_{1} \ast (\gamma_{2})\neq (\gamma_{1}) \sim \gamma_{3}"


def test_three_centred_dots_are_cdots_and_the_formula_is_still_placed_in_its_line():
    # amsmath's guide (3.11): "l1 + · · · + lp = l" under a sum
    spans = [_span("l", "CMMI7"), _sub("1"), _span("+", "CMR7"), _span("⋅ ⋅ ⋅", "CMSY7"),
             _span("+", "CMR7"), _span("l", "CMMI7"), _sub("p"), _span("=", "CMR7"),
             _span("l", "CMMI7")]  # fmt: skip
    (formula,) = line_math_runs(spans) or []
    assert formula.latex == r"l_{1}+\cdots +l_{p}=l"
    placed, notes = place_formulas("l1+ ⋅ ⋅ ⋅ +lp=l\n", [formula])
    assert placed == "$$l_{1}+\\cdots +l_{p}=l$$\n" and not notes


def test_a_script_of_a_script_is_nested_and_a_scripts_pieces_are_one_group():
    # amsmath's guide (4.5): 2^{k-1}, the exponent set as three spans
    spans = [_span("2"), _sup("k", "CMMI7"), _sup("−", "CMSY7"), _sup("1"), _span(" +"),
             _span("x", "CMMI10")]  # fmt: skip
    (formula,) = line_math_runs(spans) or []
    assert formula.latex.startswith("2^{k-1} +")
    # (3.11): an exponent n_i - l_i, its i set smaller and lower than the n
    spans = [
        _span("("),
        _span("a", "CMMI10"),
        _span(")"),
        _sup("n", "CMMI7"),
        _span("i", "CMMI5", size=5.0, rise=2.5),
        _sup("−", "CMSY7"),
        _sup("l", "CMMI7"),
        _span("i", "CMMI5", size=5.0, rise=2.5),
        _span(" ·", "CMSY10"),
        _span(" x", "CMMI10"),
    ]
    (formula,) = line_math_runs(spans) or []
    assert formula.latex == r"(a)^{n_{i}-l_{i}} \cdot x", formula.latex


def test_blackboard_bold_and_fraktur_keep_their_alphabet():
    spans = [
        _span("B", "EUFM10"), _span("r", "CMMI8", size=8.0, rise=-1.7), _span("("),
        _span("x", "CMMI10"), _span(") :="), _span(" {", "CMSY10"), _span(" y", "CMMI10"),
        _span(" ∈", "CMSY10"), _span("R", "MSBM10"), _span("+", "CMR8", size=8.0, rise=4.5),
        _span(" }", "CMSY10"), _span(" für", "SFRM1095"),
    ]  # fmt: skip
    (formula,) = line_math_runs(spans) or []
    assert formula.latex == r"\mathfrak{B}_{r}(x) := \{ y \in \mathbb{R}^{+} \}"


def test_a_formula_is_placed_on_whole_words_and_never_inside_one_already_placed():
    (short,) = line_math_runs([_span("l", "CMMI10"), _sub("i")]) or []
    (long,) = line_math_runs([_span("l", "CMMI10"), _sub("i"), _span(" ="), _span(" 0")]) or []
    markdown = "the last line of the display, where _l_ i = 0 and _l_ i is"
    placed, notes = place_formulas(markdown, [long, short, short])
    assert placed == "the last line of the display, where $l_{i} = 0$ and $l_{i}$ is", placed
    # the third has nowhere left but inside "line" and the formula already placed
    assert notes == [f"formula left as text: {short.latex}"]


def test_the_emphasis_around_a_math_italic_letter_goes_inside_the_formula():
    spans = [_span("γ", "CMMI10"), _sub("1"), _span(", γ", "CMMI10"), _sub("2")]
    formulas = line_math_runs([_span("Seien ", "SFRM1095"), *spans]) or []
    placed, _ = place_formulas("Seien _γ_ 1 _, γ_ 2 Wege", formulas)
    assert placed == r"Seien $\gamma_{1}, \gamma_{2}$ Wege"


def test_the_prose_beside_a_formula_is_still_respaced_and_tightened():
    markdown = r"Sei $a \in X$ , ein Raum, Wegevon a nach b"
    assert readable_markdown(markdown) == r"Sei $a \in X$, ein Raum, Wegevon a nach b"
    respaced = respace_words(markdown, ["Sei a ∈ X, ein Raum, Wege von a nach b"])
    assert r"$a \in X$" in respaced and "Wege von" in respaced, respaced


GEOTOPO = CORPUS / "pdf-samples/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf"


@pytest.mark.skipif(not GEOTOPO.is_file(), reason="the shared corpus is not beside")
def test_three_periods_of_math_italic_are_ldots():
    # The Bulgarian lshort p. 70: x_{1},\ldots,x_{n}, its dots a thin space apart
    (formula,) = line_math_runs(
        [_span("x", "CMMI10"), _sub("1"), _span(", . . . , x", "CMMI10"), _sub("n"),
         _span(" = ", "CMR10"), _span("y", "CMMI10")]
    )  # fmt: skip
    assert formula.latex.replace(" ", "") == "x_{1},\\ldots,x_{n}=y"
    markdown, notes = place_formulas("x 1 , . . . , x n = y", [formula])
    assert markdown.startswith("$$x_{1}") and not notes


def test_tex_extension_font_delimiters_are_sized_latex_and_not_looked_for_in_the_markdown():
    """TeX's \\bigg( and \\bigg) (CMEX codes 0x12, 0x13) come out of MuPDF as those codes;
    pymupdf4llm writes U+FFFD for them and the repairs drop it."""
    (formula,) = line_math_runs(
        [_span("\x12", "CMEX10"), _span("x", "CMMI10"), _span("+ 1", "CMR10"),
         _span("\x13", "CMEX10"), _sup("2")]
    )  # fmt: skip
    assert formula.latex.replace(" ", "") == "\\bigl(x+1\\bigr)^{2}"
    assert formula.formula_plain == "x+12"
    assert "\x12" not in formula.latex
    # one of them alone is no formula: \\bigr) with nothing opened
    assert line_math_runs([_span("\x13", "CMEX10"), _span("x", "CMMI10"), _sub("n")]) == []


def test_a_formula_is_never_placed_inside_inline_code_nor_across_it():
    """A manual's table of commands: the command as code, then what it typesets."""
    (formula,) = line_math_runs([_span("d", "CMMI10"), _span("x", "CMMI10"), _sup("2")])
    markdown, notes = place_formulas("`\\dd x2` gives d x2", [formula])
    assert markdown == "`\\dd x2` gives $dx^{2}$" and not notes
    for kept in ("`\\dd x2`", "d `code` x2"):
        markdown, notes = place_formulas(kept, [formula])
        assert markdown == kept and notes


def test_geotopo_pages_come_out_with_their_inline_and_displayed_math():
    engine = LocalEngine()
    with pymupdf.open(GEOTOPO) as doc:
        pages = {}
        for number in (10, 50):
            one = pymupdf.open()
            one.insert_pdf(doc, from_page=number - 1, to_page=number - 1)
            data = one.tobytes()
            one.close()
            pages[number] = engine.transcribe(
                PageInput(data, "application/pdf", 1), EngineOptions()
            ).markdown
    p50 = pages[50].split("\n")
    display = (
        r"\gamma_{1} \ast (\gamma_{2} \ast \gamma_{3}) \sim (\gamma_{1} \ast \gamma_{2}) "
        r"\ast \gamma_{3}"
    )
    assert f"$${display}$$" in p50
    sentence = r"Seien $\gamma_{1}, \gamma_{2}$ Wege in _X_ mit $\gamma_{1}(1) = \gamma_{2}(0)$."
    assert sentence in pages[50]
    assert r"und $\gamma_{2}(1) = \gamma_{3}(0)$." in pages[50]
    assert r"$\mathfrak{B}_{r}(x) := \{ y \in X | d(x, y) < r \}$ für" in pages[10]
    # prose never inside the delimiters
    for markdown in pages.values():
        for formula in math_spans(markdown):
            assert not any(w in formula.split() for w in ("Wege", "mit", "und", "für")), formula


def test_a_set_a_pair_or_an_interval_set_in_math_is_latex():
    # R's manual: "the integers {1, . . . , k}, where k is"; GeoTopo: "ein Paar (X, d)",
    # "wie z. B. [0, 1)". As text they read as italics scattered between the symbols.
    integers = [
        _span("the integers"), _span(" ", "CMSY10"), _span("{", "CMSY10"), _span("1"),
        _span(", . . . , k", "CMMI10"), _span("}", "CMSY10"), _span(", where"),
        _span(" k", "CMMI10"), _span(" is"),
    ]  # fmt: skip
    assert [f.latex for f in line_math_runs(integers)] == [r"\{1, \ldots , k\}"]
    pair = [_span("ein Paar"), _span(" ("), _span("X, d", "CMMI10"), _span(")"), _span(" heißt")]
    assert [f.latex for f in line_math_runs(pair)] == ["(X, d)"]
    interval = [_span("z. B."), _span(" [0"), _span(",", "CMMI10"), _span(" 1)."), _span(" Auch")]
    assert [f.latex for f in line_math_runs(interval)] == ["[0, 1)"]


def test_a_symbol_in_brackets_or_a_group_cut_at_its_relation_stays_text():
    # a sign named in brackets; GeoTopo: "d(x, y) :=" before a radical the runs do not rebuild
    sign = [_span("the sign"), _span(" ("), _span("∅", "CMSY10"), _span(")"), _span(" is")]
    assert line_math_runs(sign) == []
    cut = [_span("d", "CMMI10"), _span("("), _span("x, y", "CMMI10"), _span(") :=")]
    assert line_math_runs(cut) == []
