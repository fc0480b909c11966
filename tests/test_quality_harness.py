"""The quality harness (model.quality): the scorer tells a good transcription from a bad one
for every test type, the signals fire on crafted bad pages only, and the text options work.
Pure Python: run with ``pytest -p no:django``."""

from __future__ import annotations

import pymupdf
import pytest

from model.engines.base import PageInput, PageResult
from model.quality import signals
from model.quality.checks import load_test
from model.quality.stats import wilson
from model.textnorm import parse_steps

TABLE_GOOD = (
    "<table><tr><th rowspan='2'>Station</th><th colspan='2'>Mean flow</th></tr>"
    "<tr><th>Spring</th><th>Autumn</th></tr>"
    "<tr><td>Old Mill</td><td>41.5</td><td>18.2</td></tr></table>"
)
TABLE_BAD = "| Station | Mean flow |\n|---|---|\n| Old Mill 41.5 | 18.2 |\n"
PAGE = {"pdf": "page.pdf", "page": 1}

# (test, a good transcription, a bad transcription), one or more per test type.
CASES = [
    (
        {"type": "present", "text": "The river rose four metres."},
        "# Report\n\nThe river rose four metres.\n",
        "# Report\n\nThe rover rise for meters.\n",
    ),
    (
        {"type": "present", "text": "The river rose four metres.", "max_diffs": 2},
        "The rivr rose four metres.",
        "Nothing of the kind.",
    ),
    (
        {"type": "absent", "text": "Annual Review 2024 page 3"},
        "The river rose four metres.",
        "Annual Review 2024 page 3\n\nThe river rose four metres.",
    ),
    (
        {"type": "order", "before": "left column ends here", "after": "right column starts"},
        "left column ends here. right column starts here.",
        "right column starts here. left column ends here.",
    ),
    (
        {"type": "table", "cell": "41.5", "left": "Old Mill", "right": "18.2", "up": "Spring"},
        TABLE_GOOD,
        TABLE_BAD,
    ),
    (
        {"type": "table", "cell": "18.2", "top_heading": "Mean flow", "left_heading": "Old Mill"},
        TABLE_GOOD,
        TABLE_BAD,
    ),
    (
        {"type": "math", "math": r"\sigma^{2} = \frac{1}{n} \sum_{i} (x_i - \mu)^2"},
        r"Variance: $$\sigma^2=\dfrac{1}{n}\sum_i\left(x_{i}-\mu\right)^{2}$$",
        r"Variance: $$\sigma^3=\frac{1}{n}\sum_i(x_i-\mu)^2$$",
    ),
    (
        {"type": "baseline"},
        "A page of ordinary text that ends properly.",
        "A page that loops " + "and loops " * 40,
    ),
    ({"type": "baseline"}, "Plain words.", "   \n\n  "),
    ({"type": "baseline", "max_length": 0}, "", "Hallucinated text on a blank page"),
]


@pytest.mark.parametrize(("fields", "good", "bad"), CASES, ids=[c[0]["type"] for c in CASES])
def test_the_scorer_passes_a_good_transcription_and_fails_a_bad_one(fields, good, bad):
    test = load_test({**PAGE, "id": "t", **fields})
    assert test.run(good) == (True, "")
    passed, why = test.run(bad)
    assert not passed
    assert why


def test_a_wilson_interval_stays_inside_zero_and_one_and_narrows_with_more_tests():
    small, large = wilson(9, 10), wilson(90, 100)
    assert 0.0 <= small.low < 0.9 < small.high <= 1.0
    assert large.high - large.low < small.high - small.low
    assert wilson(0, 5).low == 0.0
    assert wilson(5, 5).high == 1.0


# --- signals -------------------------------------------------------------------------------


def _pdf(text: str = "", *, ink: bool = True) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    if text:
        page.insert_textbox(pymupdf.Rect(60, 60, 535, 780), text, fontsize=11)
    if ink and not text:
        page.draw_rect(pymupdf.Rect(100, 100, 400, 400), color=(0, 0, 0), fill=(0, 0, 0))
    return doc.tobytes()


CLEAN_TEXT = " ".join(
    f"Sentence number {i} describes the flood defences of the lower valley." for i in range(12)
)
CLEAN = (
    f"# Flood report\n\n{CLEAN_TEXT}\n\n{TABLE_GOOD}\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n$$E = mc^{2}$$ and $\\frac{a}{b}$\n"
)


def _signals(markdown: str, pdf: bytes, confidence: float | None = None) -> dict:
    result = PageResult(markdown=markdown, extra={"ocr_confidence": confidence})
    return signals.quality_report(PageInput(pdf, "application/pdf", 1), result)


def test_a_clean_page_needs_no_review():
    report = _signals(CLEAN, _pdf(CLEAN_TEXT), confidence=0.97)
    assert report["needs_review"] is False, report["reasons"]
    assert report["score"] == 0.0
    # Clean because it was judged and passed, not because nothing looked: the checks every
    # page gets were made, and none of the signals judged found anything.
    judged = report["signals"]
    assert {"table", "latex", "repetition", "empty", "text_layer", "plausibility"} <= set(judged)
    assert all(values["ok"] for values in judged.values()), judged
    # Signals that read an OCR's lines have nothing to judge on a text-layer reading.
    assert not {"formula_text", "mirrored", "line_confidence", "coverage"} & set(judged)


def test_each_named_signal_is_the_signal_it_names():
    """bench/signal_each.py times the signals by these names: a name must be its signal's."""
    from model.quality.parsed import parse_page

    pdf = PageInput(_pdf(CLEAN_TEXT), "application/pdf", 1)
    report = signals.EngineReport(ocr_confidence=0.6, agreement={"agreement": 0.5, "lines": 4})
    named = signals.named_signals(parse_page(CLEAN), signals.page_facts(pdf), report)
    judged = {name: judge() for name, judge in named}
    assert len(judged) == len(named)
    assert all(s is None or s.name == name for name, s in judged.items())
    assert not judged["ocr_confidence"].ok and not judged["agreement"].ok


@pytest.mark.parametrize(
    ("signal", "markdown"),
    [
        ("table", "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>"),
        ("table", "<table><tr><td>a</td><td>b</td></tr>"),
        ("table", "| a | b |\n|---|---|\n| 1 | 2 | 3 |\n"),
        ("latex", "$$\\frac{a}{b$$"),
        ("latex", "$$\\begin{matrix} a \\end{array}$$"),
        ("latex", "$$\\left( x$$"),
        ("latex", "text $$ x + y and never closed"),
        ("repetition", CLEAN_TEXT + " the end" + " of the loop" * 30),
    ],
)
def test_each_signal_fires_on_a_crafted_bad_page(signal, markdown):
    report = _signals(markdown, _pdf(ink=True))
    assert report["needs_review"]
    assert not report["signals"][signal]["ok"]
    assert any(reason.startswith(signal) for reason in report["reasons"])


def test_empty_output_for_a_page_with_ink_needs_review_but_a_blank_page_does_not():
    assert not _signals("", _pdf(ink=True))["signals"]["empty"]["ok"]
    assert _signals("", _pdf(ink=False))["signals"]["empty"]["ok"]


def test_low_ocr_confidence_needs_review():
    report = _signals(CLEAN_TEXT, _pdf(ink=True), confidence=0.5)
    assert report["reasons"] == ["ocr_confidence: mean OCR confidence 0.50 < 0.85"]


def test_output_that_disagrees_with_the_text_layer_needs_review():
    report = _signals("Some other words entirely, nothing like the page.", _pdf(CLEAN_TEXT))
    assert not report["signals"]["text_layer"]["ok"]
    assert _signals(CLEAN_TEXT, _pdf(CLEAN_TEXT))["signals"]["text_layer"]["ok"]


# --- normalisation -------------------------------------------------------------------------


def test_normalisation_joins_broken_words_and_unfolds_ligatures_only_when_asked():
    from model.textnorm import normalize_markdown

    text = "The ﬁrst exam-\nple has a soft\u00adhyphen  and   spaces.\n| keep-  |\n"
    assert normalize_markdown(text, "") == text
    assert normalize_markdown(text, parse_steps("all")) == (
        "The first example has a softhyphen and spaces.\n| keep-  |\n"
    )
    assert normalize_markdown(text, "ligatures").startswith("The first exam-\n")


def test_normalisation_values_are_canonical_and_unknown_steps_are_refused():
    assert parse_steps("whitespace, ligatures") == "ligatures,whitespace"
    assert parse_steps("all") == parse_steps(True) == "hyphenation,ligatures,whitespace"
    assert parse_steps("none") == parse_steps(None) == ""
    with pytest.raises(ValueError, match="unknown normalisation"):
        parse_steps("spelling")
