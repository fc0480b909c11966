"""The review signals that judge the output against the page (model.quality.content_signals)
and the review score they add up to (model.quality.review): each fires on a page a person
would find wrong and stays quiet on the same page read well. Real pages come from the shared
corpus. Pure Python: run with ``pytest -p no:django``."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from model.engines.base import PageInput, PageResult
from model.quality import content_signals, signals
from model.quality.page_lines import Line, columns, pdf_lines, reading_order
from model.quality.review import Signal, needs_review, review_score, verdict

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
FORMULA_PDF = CORPUS / "docling-testdata" / "pdf" / "sources" / "code_and_formula.pdf"
COLUMNS_PDF = CORPUS / "pdf-samples" / "026-latex-multicolumn" / "multicolumn.pdf"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no shared corpus at {CORPUS}")

PROSE = (
    "The river authority measured the spring flood at four metres above the summer level. "
    "Engineers rebuilt the northern weir with stone taken from the old quarry, and farmers "
    "downstream were warned two days before the crest reached the lower valley."
)
# What OCR makes of a handwritten note: letters, but no words.
GARBLE = (
    "Tbc rivcr authorlty mcasurcd thc sprlng flaad ot faur mctrcs abovc tbc summcr lcvcl. "
    "Englnccrs rcbullt tbc northcrn wclr wltb stanc takcn fram thc ald quarry, ond formcrs "
    "dawnstrcam wcrc wornad twa doys bcfarc thc crcst rcocbcd tbc lawcr vollcy."
)


def quality(pdf: Path, page: int, markdown: str, **extra: object) -> dict:
    data = pdf.read_bytes()
    result = PageResult(markdown=markdown, method="text-layer", extra=dict(extra))
    return signals.quality_report(PageInput(data, "application/pdf", page), result)


def page_text(pdf: Path, page: int) -> str:
    with pymupdf.open(pdf) as doc:
        return doc[page - 1].get_text("text")


# --- plausibility and fragments ----------------------------------------------------------------


def test_prose_is_plausible_and_garbled_ocr_is_not():
    good = content_signals.plausibility_signal(PROSE)
    bad = content_signals.plausibility_signal(GARBLE)
    assert good is not None and good.ok, good
    assert bad is not None and not bad.ok
    assert "english" in bad.detail.lower() or "en words" in bad.detail
    assert 0.5 <= bad.weight <= 1.0


def test_plausibility_judges_arabic_by_its_own_word_list():
    arabic = (
        "تعتبر البرمجة من الأدوات القوية التي يمكن أن تعزز الإنتاجية وتساعد في إيجاد حلول "
        "فعالة للمشكلات يمتلك كل من المحللين والعلماء ميزات فريدة تجعلها مثالية لتحليل البيانات"
    )
    signal = content_signals.plausibility_signal(arabic)
    assert signal is not None and signal.ok, signal


def test_too_few_words_are_not_judged():
    assert content_signals.plausibility_signal("Tbc rivcr") is None


def test_runs_of_letter_fragments_fire_and_short_words_in_prose_do_not():
    assert content_signals.fragment_signal(PROSE + " It is as it was, so go on.").ok
    bad = content_signals.fragment_signal(PROSE + " e e  e se e  s  s  o  e e " + PROSE)
    assert not bad.ok and "e e e se e s" in bad.detail
    # Table cells of one letter are separated by pipes: not a run.
    assert content_signals.fragment_signal("| a | b | c | d | e | f | g |").ok


def test_unreadable_characters_fire():
    assert content_signals.unreadable_signal(PROSE).ok
    bad = content_signals.unreadable_signal("habibi \ufffd\ufffd\ufffd")
    assert not bad.ok and bad.value == 3


# --- formulas and reading order on real pages ------------------------------------------------


@needs_corpus
def test_a_formula_left_as_text_is_flagged_and_latex_for_it_is_not():
    text = page_text(FORMULA_PDF, 2)
    assert "a2 + 8 = 12" in text  # the text layer spells a² as "a2"
    broken = quality(FORMULA_PDF, 2, text)
    assert broken["needs_review"], broken
    assert any(reason.startswith("formula:") for reason in broken["reasons"])
    fixed = quality(FORMULA_PDF, 2, text.replace("a2 + 8 = 12", "$a^{2} + 8 = 12$"))
    assert fixed["signals"]["formula"]["ok"], fixed


@needs_corpus
def test_a_prose_page_has_no_formula_lines():
    text = page_text(FORMULA_PDF, 1)
    assert "formula" not in quality(FORMULA_PDF, 1, text)["signals"]


def _column_lines() -> tuple[list[Line], float]:
    with pymupdf.open(COLUMNS_PDF) as doc:
        page = doc[0]
        return pdf_lines(page.get_text("dict")), float(page.rect.width)


@needs_corpus
def test_two_columns_read_in_order_pass_and_read_across_fail():
    lines, width = _column_lines()
    order = reading_order(lines, width)
    assert order is not None, "the page is in two columns"
    in_order = "\n".join(line.text for line in order)
    good = content_signals.order_signal(in_order, lines, width)
    assert good is not None and good.ok, good
    # Line by line across the gutter, as a scan read without layout analysis comes out.
    left, right = columns([ln for ln in lines if ln.y0 > 240], width)
    across = "\n".join(f"{a.text} {b.text}" for a, b in zip(left, right, strict=False))
    bad = content_signals.order_signal(across, lines, width)
    assert bad is not None and not bad.ok, bad
    assert "out of order" in bad.detail and bad.value < 0.9


def test_single_column_pages_have_no_order_signal():
    lines = [Line(50, 50 + 14 * i, 550, 62 + 14 * i, f"line {i} of the page") for i in range(30)]
    assert content_signals.order_signal("anything", lines, 600) is None


# --- the OCR's lines ----------------------------------------------------------------------------


def test_a_scan_with_misread_lines_is_flagged_though_its_mean_confidence_is_high():
    lines = [[10, 10 + 20 * i, 500, 28 + 20 * i, 0.99, PROSE[:60]] for i in range(10)]
    lines += [[10, 230, 500, 248, 0.41, "ai nan n s r o t et spnayn"]] * 2
    signal = content_signals.line_confidence_signal(signals.ocr_lines(lines))
    assert signal is not None and not signal.ok, signal
    clean = content_signals.line_confidence_signal(signals.ocr_lines(lines[:10]))
    assert clean is not None and clean.ok


# --- the score ---------------------------------------------------------------------------------


def test_the_score_combines_failing_signals_and_the_threshold_decides():
    weak = Signal("a", False, severity=0.3)
    strong = Signal("b", False, severity=0.6)
    passing = Signal("c", True, value=1.0)
    assert review_score([passing]) == 0.0
    assert review_score([weak]) == 0.3
    assert review_score([weak, strong]) == pytest.approx(1 - 0.7 * 0.4)
    assert not needs_review(0.3) and needs_review(0.6)
    assert needs_review(0.3, threshold=0.25)
    report = verdict([weak, strong, passing], threshold=0.9)
    assert report["score"] == pytest.approx(0.72) and report["needs_review"] is False
    assert report["reasons"] == ["b", "a"]  # most severe first
    # A failing signal without a severity counts fully; a passing one never counts.
    assert Signal("d", False).weight == 1.0 and Signal("e", True, severity=0.9).weight == 0.0


# --- markup, contents tables, right to left ----------------------------------------------------


def test_markup_shown_as_text_fires_and_breaks_inside_tables_do_not():
    assert content_signals.markup_signal(PROSE + "\n\n| a<br>b | c |\n|---|---|\n").ok
    assert content_signals.markup_signal("<table><tr><td>a<br>b</td></tr></table>").ok
    for bad in ("<!-- Start of picture text -->", "<mark>" + PROSE + "</mark>", "a<br>b"):
        assert not content_signals.markup_signal(PROSE + "\n\n" + bad).ok, bad


def test_a_table_of_contents_set_as_a_table_fires_and_a_data_table_does_not():
    leaders = "# Contents\n\n|Notices . . . . . . . vii|\n|---|\n|Trademarks . . . . . viii|\n"
    leaders += "|Preface . . . . . . . xi|\n"
    numbered = "# Contents\n\n|1|Foo|2|\n|---|---|---|\n|2|Bar|2|\n|3|Baz|3|\n"
    data = "# Results\n\n|Station|Flow|\n|---|---|\n|Old Mill|41|\n|Weir|18|\n|Quarry|7|\n"
    assert not content_signals.contents_table_signal(leaders).ok
    assert not content_signals.contents_table_signal(numbered).ok
    assert content_signals.contents_table_signal(data).ok


def test_arabic_read_in_visual_order_fires():
    good = "تحسين الإنتاجية وحل المشكلات من خلال البرمجة"
    bad = "تحسين اإلنتاجية وحل المشكالت من خالل البرمجة واألدوات اإلحصائية"
    assert content_signals.right_to_left_signal(good).ok
    assert not content_signals.right_to_left_signal(bad).ok
    assert content_signals.right_to_left_signal(PROSE) is None


def test_bullets_set_in_a_symbol_font_are_no_formula():
    bullet = {"text": "• ", "font": "Symbol", "size": 10.0}
    prose = {"text": "An item of a list", "font": "Times", "size": 10.0}
    line = {"bbox": (72, 72, 300, 84), "spans": [bullet, prose]}
    lone = {"bbox": (72, 90, 80, 102), "spans": [bullet]}
    lines = pdf_lines({"blocks": [{"lines": [line, lone]}]})
    assert not any(ln.formula for ln in lines)


def test_lines_inside_a_table_of_the_output_are_left_to_the_table_tests():
    left = [
        Line(50, 100 + 14 * i, 280, 112 + 14 * i, f"left cell number {i:02d}") for i in range(8)
    ]
    right = [
        Line(320, 100 + 14 * i, 550, 112 + 14 * i, f"right cell value {i:02d}") for i in range(8)
    ]
    rows = "\n".join(f"| {a.text} | {b.text} |" for a, b in zip(left, right, strict=True))
    table = "| a | b |\n|---|---|\n" + rows + "\n"
    assert content_signals.order_signal(table, left + right, 600) is None
