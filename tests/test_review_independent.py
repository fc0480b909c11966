"""The review signals that do not depend on the page's kind (model.quality.independent_signals)
and what they measure (model.quality.facts, model.engines.reading_agreement): each fires on a
page a person would find wrong and stays quiet on the same page read well. Generated PDFs
(PyMuPDF) and real pages of the shared corpus; the second reading uses the local engine's
own recognizer. Pure Python: run with ``pytest -p no:django``."""

from __future__ import annotations

import io

import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from model.engines.base import PageInput, PageResult
from model.quality import facts, independent_signals, signals
from model.quality.page_lines import math_runs
from model.quality.parsed import parse_page

PROSE = (
    "The river authority measured the spring flood at four metres above the summer level. "
    "Engineers rebuilt the northern weir with stone taken from the old quarry, and farmers "
    "downstream were warned two days before the crest reached the lower valley."
)


def text_pdf(text: str, *, pages: int = 1, render_mode: int = 0, picture: bool = False) -> bytes:
    doc = pymupdf.open()
    for _ in range(pages):
        page = doc.new_page(width=595, height=842)
        if picture:
            page.insert_image(page.rect, stream=_page_picture(text))
        page.insert_textbox(
            pymupdf.Rect(72, 72, 523, 770), text, fontsize=12, render_mode=render_mode
        )
    return doc.tobytes()


def _page_picture(text: str) -> bytes:
    """The page as a scanner would give it: the same words drawn as pixels."""
    image = Image.new("L", (1240, 1754), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=24)
    y = 150
    for line in [text[i : i + 70] for i in range(0, len(text), 70)]:
        draw.text((150, y), line, fill=0, font=font)
        y += 40
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def page_facts(data: bytes) -> facts.PageFacts:
    return facts.page_facts(PageInput(data, "application/pdf", 1))


# --- two readings -------------------------------------------------------------------------------


def test_agreement_fires_when_two_readings_differ_and_says_on_which_line():
    assert independent_signals.agreement_signal(None) is None
    assert independent_signals.agreement_signal({"agreement": 0.97, "lines": 4}).ok
    low = independent_signals.agreement_signal(
        {"agreement": 0.4, "lines": 12, "worst": ["Engineers rebuilt", "Englnccrs rcbullt", 0.3]}
    )
    assert low is not None and not low.ok and 0.5 < low.weight <= 1.0
    assert "Engineers rebuilt" in low.detail and "12 lines" in low.detail


@pytest.mark.slow  # the recognizer reads a few lines: seconds of CPU
def test_a_text_layer_that_is_not_what_the_page_shows_disagrees_with_its_drawing():
    from model.engines import reading_agreement
    from model.engines.local import LocalEngine

    reader = LocalEngine()._recognizer()
    honest = pymupdf.open(stream=text_pdf(PROSE), filetype="pdf")
    # An OCR layer that says other words than the picture under it shows.
    lying = pymupdf.open(
        stream=text_pdf(PROSE.replace("river", "rlvcr").upper(), render_mode=3, picture=True),
        filetype="pdf",
    )
    lying[0].insert_image(lying[0].rect, stream=_page_picture(PROSE), overlay=False)
    found = {}
    for name, doc in (("honest", honest), ("lying", lying)):
        lines = reading_agreement.text_layer_lines(doc[0])
        found[name] = reading_agreement.measured(lines, reader)
    assert found["honest"]["agreement"] >= 0.9, found
    assert found["lying"]["agreement"] < 0.85, found


# --- ink against the reading's length ------------------------------------------------------------


def test_glyph_shaped_marks_come_near_the_characters_of_a_page_of_text():
    data = text_pdf(PROSE * 3)
    counted = page_facts(data).glyphs
    letters = sum(ch.isalnum() for ch in PROSE * 3)
    assert counted is not None and 0.7 * letters <= counted <= 1.4 * letters, (counted, letters)


def test_ink_fires_on_a_reading_much_shorter_than_the_page_and_not_on_a_whole_one():
    glyphs = page_facts(text_pdf(PROSE * 3)).glyphs
    whole = independent_signals.ink_signal(parse_page(PROSE * 3), glyphs)
    part = independent_signals.ink_signal(parse_page(PROSE[:60]), glyphs)
    assert whole is not None and whole.ok
    assert part is not None and not part.ok and "glyph-shaped marks" in part.detail
    # A page with little ink says nothing about the length of its reading.
    assert independent_signals.ink_signal(parse_page(""), 10) is None


# --- steps --------------------------------------------------------------------------------------


def test_a_failed_step_or_a_measurement_not_made_flags_the_page():
    assert independent_signals.steps_signal([], []).ok
    failed = independent_signals.steps_signal([{"step": "formula_stacks", "error": "x"}], [])
    assert not failed.ok and failed.weight == 0.6 and "formula_stacks" in failed.detail
    skipped = independent_signals.steps_signal([], ["agreement", "agreement"])
    assert not skipped.ok and skipped.weight == 0.5 and skipped.detail.count("agreement") == 1


def test_the_quality_report_names_a_measurement_the_engine_could_not_make():
    result = PageResult(markdown=PROSE, method="ocr", extra={"skipped_steps": ["agreement"]})
    report = signals.quality_report(PageInput(text_pdf(PROSE), "application/pdf", 1), result)
    assert report["needs_review"] and report["signals"]["steps"]["ok"] is False


# --- mathematics as prose -----------------------------------------------------------------------


def test_formulas_written_as_prose_fire_and_ordinary_prose_with_numbers_does_not():
    fine = [
        PROSE,
        "Pages 1-3 and 7, dated 2020-01-02, cost 12.50 EUR; see https://example.org/a-b.",
        "The x-ray of the e-mail was sent at 10:30 to the A-team.",
        "The formula $x^2 + y^2 = z^2$ holds, and $$a = b + c$$ too.",
        "| a | = | b + c |\n|---|---|---|\n| 1 | 2 | 3 |",
    ]
    for text in fine:
        assert independent_signals.math_prose_signal(parse_page(text), ()).ok, text
    for text in ("It follows that x2 + y2 = z2 for every side.", "so ∑ i=1 n ≤ √ n holds"):
        signal = independent_signals.math_prose_signal(parse_page(f"{PROSE}\n\n{text}"), ())
        assert not signal.ok, text
    # A run the text layer set in math fonts, in the output's prose and not in LaTeX.
    runs = ("α+β=γ",)
    assert not independent_signals.math_prose_signal(parse_page("Then α + β = γ."), runs).ok
    assert independent_signals.math_prose_signal(parse_page("Then $α+β=γ$."), runs).ok


def test_math_runs_are_the_spans_in_math_fonts_or_of_math_characters():
    page = {
        "blocks": [
            {
                "lines": [
                    {
                        "spans": [
                            {"text": "where ", "font": "CMR10"},
                            {"text": "x", "font": "CMMI10"},
                            {"text": " ", "font": "CMR10"},
                            {"text": "∈ S", "font": "CMSY10"},
                            {"text": " for all sets ∈ of prose", "font": "CMR10"},
                        ]
                    }
                ]
            }
        ]
    }
    assert math_runs(page) == ["x ∈ S"]


# --- an OCR layer ---------------------------------------------------------------------------------


def test_invisible_text_over_a_picture_is_measured_and_judged_on_text_layer_readings():
    layer = page_facts(text_pdf(PROSE, render_mode=3, picture=True)).invisible
    plain = page_facts(text_pdf(PROSE)).invisible
    hidden_alone = page_facts(text_pdf(PROSE, render_mode=3)).invisible  # no picture under it
    assert layer is not None and layer > 0.9
    assert plain == 0.0 and hidden_alone == 0.0
    signal = independent_signals.invisible_text_signal(layer, "text-layer")
    assert signal is not None and not signal.ok
    assert independent_signals.invisible_text_signal(layer, "ocr") is None
