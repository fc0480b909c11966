"""Where a formula starts and ends in its line (``model.formulas``): prose words stay out of
the delimiters, a comma inside brackets stays in, a run cut inside a bracket is no formula,
and a line set in a math font is a formula without any script."""

from __future__ import annotations

from model.formulas import is_math_font, line_formula


def _span(text: str, *, size: float = 10.0, rise: float = 0.0, font: str = "CMR10") -> dict:
    return {"text": text, "size": size, "origin": (0.0, 100.0 - rise), "font": font}


def test_the_words_of_the_sentence_around_a_formula_stay_outside_it():
    spans = [
        _span("Seien Wege in X mit γ"),
        _span("1", size=7, rise=-2),
        _span("(1) = γ"),
        _span("2", size=7, rise=-2),
        _span("(0) und so weiter"),
    ]
    formula = line_formula(spans)
    assert formula is not None
    assert formula.latex == r"\gamma_{1}(1) = \gamma_{2}(0)"


def test_a_comma_inside_brackets_belongs_to_the_formula():
    spans = [_span("und "), _span("d(x, z) ≤ d(x, y) + d(y, z)", font="CMMI10"), _span(" für alle")]
    formula = line_formula(spans)
    assert formula is not None
    assert formula.latex == r"d(x, z) \leq d(x, y) + d(y, z)"


def test_a_run_cut_inside_a_bracket_is_left_as_text():
    spans = [
        _span("where x"),
        _span("2", size=7, rise=-2),
        _span(") = d"),
        _span("Y", size=7, rise=-2),
    ]
    assert line_formula(spans) is None


def test_a_relation_in_text_fonts_without_scripts_is_prose():
    assert line_formula([_span("page 1 = cover"), _span("and more")]) is None
    assert is_math_font("ABCDEF+CMMI10") and is_math_font("CambriaMath")
    assert not is_math_font("ABCDEF+CMR10")
