"""The review signals that judge the output against the page (model.quality.content_signals)
and the review score they add up to (model.quality.review): each fires on a page a person
would find wrong and stays quiet on the same page read well. Real pages come from the shared
corpus. Pure Python: run with ``pytest -p no:django``."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from model.engines.base import PageInput, PageResult
from model.quality import content_signals, form_signals, signals
from model.quality.page_lines import Line, columns, pdf_lines, reading_order
from model.quality.parsed import parse_page
from model.quality.review import Signal, needs_review, review_score, verdict
from model.tables import markdown_tables

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
    good = content_signals.plausibility_signal(parse_page(PROSE))
    bad = content_signals.plausibility_signal(parse_page(GARBLE))
    assert good is not None and good.ok, good
    assert bad is not None and not bad.ok
    assert "english" in bad.detail.lower() or "en words" in bad.detail
    assert 0.5 <= bad.weight <= 1.0


def test_plausibility_judges_arabic_by_its_own_word_list():
    arabic = (
        "تعتبر البرمجة من الأدوات القوية التي يمكن أن تعزز الإنتاجية وتساعد في إيجاد حلول "
        "فعالة للمشكلات يمتلك كل من المحللين والعلماء ميزات فريدة تجعلها مثالية لتحليل البيانات"
    )
    signal = content_signals.plausibility_signal(parse_page(arabic))
    assert signal is not None and signal.ok, signal


def test_too_few_words_are_not_judged():
    assert content_signals.plausibility_signal(parse_page("Tbc rivcr")) is None


def test_runs_of_letter_fragments_fire_and_short_words_in_prose_do_not():
    assert content_signals.fragment_signal(parse_page(PROSE + " It is as it was, so go on.")).ok
    bad = content_signals.fragment_signal(parse_page(PROSE + " e e  e se e  s  s  o  e e " + PROSE))
    assert not bad.ok and "e e e se e s" in bad.detail
    # Table cells of one letter are separated by pipes: not a run.
    assert content_signals.fragment_signal(parse_page("| a | b | c | d | e | f | g |")).ok


def test_unreadable_characters_fire():
    assert content_signals.unreadable_signal(parse_page(PROSE)).ok
    bad = content_signals.unreadable_signal(parse_page("habibi \ufffd\ufffd\ufffd"))
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
    good = content_signals.order_signal(parse_page(in_order), lines, width)
    assert good is not None and good.ok, good
    # Line by line across the gutter, as a scan read without layout analysis comes out.
    left, right = columns([ln for ln in lines if ln.y0 > 240], width)
    across = "\n".join(f"{a.text} {b.text}" for a, b in zip(left, right, strict=False))
    bad = content_signals.order_signal(parse_page(across), lines, width)
    assert bad is not None and not bad.ok, bad
    assert "out of order" in bad.detail and bad.value < 0.9


def test_a_sidebar_beside_the_text_is_a_column_though_the_gutter_is_off_the_middle():
    # A product brief as OCR reads it: "Highlights" bullets in a narrow column on the left,
    # the text from 45 % of the width on (the middle of the page falls inside its lines).
    side = [
        Line(100, 300 + 40 * i, 400, 330 + 40 * i, f"sidebar bullet number {i} here")
        for i in range(6)
    ]
    text = [
        Line(450, 300 + 40 * i, 950, 330 + 40 * i, f"main column sentence {i} goes on")
        for i in range(8)
    ]
    lines = side + text
    split = columns(lines, 1000)
    assert split is not None and split[0] == side and split[1] == text
    in_order = "\n".join(line.text for line in side + text)
    assert content_signals.order_signal(parse_page(in_order), lines, 1000).ok
    # Each sidebar line joined to the text line beside it, as the misread page came out.
    across = "\n".join(f"{t.text} {s.text}" for t, s in zip(text, side, strict=False))
    across += "\n" + "\n".join(t.text for t in text[len(side) :])
    bad = content_signals.order_signal(parse_page(across), lines, 1000)
    assert bad is not None and not bad.ok, bad


def _two_column_ocr_lines(joined_rows: tuple[int, ...] = ()) -> list[Line]:
    """Two columns of 12 OCR lines each on a page 1000 wide; in the rows named, the OCR joined
    the left line to the right one beside it, as RapidOCR does on a scan with a narrow gutter."""
    lines = []
    for i in range(12):
        y = 200 + 40 * i
        left = f"left column line {i} of the text"
        right = f"right column line {i} of the text"
        if i in joined_rows:
            lines.append(Line(100, y, 920, y + 30, f"{left} {right}"))
        else:
            lines += [Line(100, y, 480, y + 30, left), Line(540, y, 920, y + 30, right)]
    return lines


def test_ocr_lines_joined_across_the_gutter_fail_order_though_the_output_follows_them():
    # The output follows the OCR's lines, so the order of their pairs cannot tell: the joined
    # lines themselves are the trace of two columns read across.
    joined = _two_column_ocr_lines(joined_rows=(2, 5, 8))
    output = "\n".join(line.text for line in joined)
    bad = content_signals.order_signal(parse_page(output), joined, 1000, ocr=True)
    assert bad is not None and not bad.ok, bad
    assert "3 line(s) read across the gutter" in bad.detail
    # The same page read column by column, its OCR lines each on its side: it passes.
    clean = _two_column_ocr_lines()
    in_order = "\n".join(line.text for line in reading_order(clean, 1000) or [])
    good = content_signals.order_signal(parse_page(in_order), clean, 1000, ocr=True)
    assert good is not None and good.ok, good
    # A text layer's wide lines are the document's own (not an OCR's joining): not judged so.
    layer = content_signals.order_signal(parse_page(output), joined, 1000)
    assert layer is None or "gutter" not in layer.detail


def test_a_key_beside_its_value_and_a_full_width_passage_are_not_read_across():
    lines = _two_column_ocr_lines()
    # A box of keys and values inside the right column: its rows run over the gutter's middle
    # but start nowhere near the left column's lines.
    lines += [Line(450, 700 + 40 * i, 900, 730 + 40 * i, f"key {i} value {i}") for i in range(3)]
    # A full-width passage under the columns: column lines above it, none below.
    lines += [Line(100, 860 + 40 * i, 920, 890 + 40 * i, f"closing line {i}") for i in range(3)]
    output = "\n".join(line.text for line in reading_order(lines, 1000) or lines)
    signal = content_signals.order_signal(parse_page(output), lines, 1000, ocr=True)
    assert signal is None or "gutter" not in signal.detail, signal


def test_single_column_pages_have_no_order_signal():
    lines = [Line(50, 50 + 14 * i, 550, 62 + 14 * i, f"line {i} of the page") for i in range(30)]
    assert content_signals.order_signal(parse_page("anything"), lines, 600) is None


# --- the OCR's lines ----------------------------------------------------------------------------


def test_a_scan_with_misread_lines_is_flagged_though_its_mean_confidence_is_high():
    lines = [[10, 10 + 20 * i, 500, 28 + 20 * i, 0.99, PROSE[:60]] for i in range(10)]
    lines += [[10, 230, 500, 248, 0.41, "ai nan n s r o t et spnayn"]] * 2
    signal = content_signals.line_confidence_signal(signals.ocr_lines(lines))
    assert signal is not None and not signal.ok, signal
    clean = content_signals.line_confidence_signal(signals.ocr_lines(lines[:10]))
    assert clean is not None and clean.ok


def test_one_short_misread_line_among_many_good_ones_is_flagged():
    # The Redbook brief's scan: 35 lines read well, and "Database performance and
    # scalability" read as "dataeee oeagns" at 0.54 (about 1 % of the page's text).
    lines = [[10, 10 + 20 * i, 500, 28 + 20 * i, 0.98, PROSE[:60]] for i in range(35)]
    lines.append([10, 720, 200, 738, 0.54, "dataeee oeagns"])
    signal = content_signals.line_confidence_signal(signals.ocr_lines(lines))
    assert signal is not None and not signal.ok, signal
    assert "dataeee oeagns" in signal.detail and signal.value < 0.02
    assert 0.5 <= signal.weight < 0.6


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
    assert content_signals.markup_signal(parse_page(PROSE + "\n\n| a<br>b | c |\n|---|---|\n")).ok
    assert content_signals.markup_signal(parse_page("<table><tr><td>a<br>b</td></tr></table>")).ok
    for bad in ("<!-- Start of picture text -->", "<mark>" + PROSE + "</mark>", "a<br>b"):
        assert not content_signals.markup_signal(parse_page(PROSE + "\n\n" + bad)).ok, bad


def test_a_table_of_contents_set_as_a_table_fires_and_a_data_table_does_not():
    leaders = "# Contents\n\n|Notices . . . . . . . vii|\n|---|\n|Trademarks . . . . . viii|\n"
    leaders += "|Preface . . . . . . . xi|\n"
    numbered = "# Contents\n\n|1|Foo|2|\n|---|---|---|\n|2|Bar|2|\n|3|Baz|3|\n"
    data = "# Results\n\n|Station|Flow|\n|---|---|\n|Old Mill|41|\n|Weir|18|\n|Quarry|7|\n"
    assert not content_signals.contents_table_signal(parse_page(leaders)).ok
    assert not content_signals.contents_table_signal(parse_page(numbered)).ok
    assert content_signals.contents_table_signal(parse_page(data)).ok


def test_arabic_read_in_visual_order_fires():
    good = "تحسين الإنتاجية وحل المشكلات من خلال البرمجة"
    bad = "تحسين اإلنتاجية وحل المشكالت من خالل البرمجة واألدوات اإلحصائية"
    assert content_signals.right_to_left_signal(parse_page(good)).ok
    assert not content_signals.right_to_left_signal(parse_page(bad)).ok
    assert content_signals.right_to_left_signal(parse_page(PROSE)) is None


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
    assert content_signals.order_signal(parse_page(table), left + right, 600) is None


# --- apostrophes, formulas as OCR text, pages read upside down ----------------------------------

# The PDF/A sample's font draws no apostrophe, so its text layer and any scan of it read so.
NO_APOSTROPHES = (
    "Heres to the crazy ones. The misfits. The rebels. The troublemakers. The round pegs in "
    "the square holes. The ones who see things differently. Theyre not fond of rules. And "
    "they have no respect for the status quo. About the only thing you cant do is ignore "
    "them. Or sit in silence and hear a song thats never been written?"
)


def test_contractions_without_their_apostrophe_fire_and_words_that_look_alike_do_not():
    lost = content_signals.apostrophe_signal(parse_page(NO_APOSTROPHES))
    assert lost is not None and not lost.ok, lost
    assert "Heres" in lost.detail and lost.value == 4
    kept = content_signals.apostrophe_signal(parse_page(NO_APOSTROPHES.replace("es to", "e's to")))
    assert kept is not None and not kept.ok  # three are still lost
    restored = (
        NO_APOSTROPHES.replace("Heres", "Here's")
        .replace("Theyre", "They're")
        .replace("cant", "can't")
        .replace("thats", "that's")
    )
    assert content_signals.apostrophe_signal(parse_page(restored)).ok
    # "well", "were", "its", "lets", "ill", "shell": words in their own right.
    words = PROSE + " It went well and its lets were ill, as the shell showed. " * 2
    assert content_signals.apostrophe_signal(parse_page(words)).ok
    assert (
        content_signals.apostrophe_signal(parse_page("Heres cant")) is None
    )  # too few words to judge


def test_a_formula_read_as_plain_text_on_a_scan_fires():
    page = f"{PROSE}\n\na2+8=12\n\n{PROSE}"
    signal = content_signals.formula_text_signal(parse_page(page), [])
    assert signal is not None and not signal.ok and "a2+8=12" in signal.detail
    # Code, LaTeX, tables and prose with a relation in it are no formula left as text.
    for fine in (
        "x = 5;",
        "$a^{2}+8=12$",
        "$$a^{2}+8=12$$",
        "| a | b = c |",
        "Table 1: the flow = 41 m3/s",
        "```\ni = 0\n```",
    ):
        assert content_signals.formula_text_signal(parse_page(f"{PROSE}\n\n{fine}"), []).ok, fine
    # A page with a text layer is judged by its formula lines (formula_signal) instead.
    line = Line(0, 0, 100, 10, "a2 + 8 = 12", formula=True)
    assert content_signals.formula_text_signal(parse_page(page), [line]) is None


def _paragraphs(width: float = 1000.0) -> list[Line]:
    """Three paragraphs of five lines in one column, each ending in a short line, as OCR
    finds them on an upright page (the short lines flush left)."""
    lines = []
    y = 100.0
    for _paragraph in range(3):
        for row in range(5):
            x1 = 450.0 if row == 4 else 900.0
            lines.append(Line(100.0, y, x1, y + 20, PROSE[:50], confidence=0.99))
            y += 25
        y += 15
    return lines


def _turned_over(lines: list[Line], width: float, height: float) -> list[Line]:
    return [
        Line(width - ln.x1, height - ln.y1, width - ln.x0, height - ln.y0, ln.text, confidence=0.99)
        for ln in lines
    ]


def test_a_page_whose_lines_were_turned_over_fires_and_an_upright_one_does_not():
    upright = _paragraphs()
    assert content_signals.mirrored_signal(upright, 1000.0).ok
    mirrored = content_signals.mirrored_signal(_turned_over(upright, 1000.0, 1400.0), 1000.0)
    assert mirrored is not None and not mirrored.ok and "upside down" in mirrored.detail
    assert mirrored.weight == 1.0  # every short line against the wrong margin
    assert content_signals.mirrored_signal(upright[:4], 1000.0) is None  # too few lines


def test_right_to_left_lines_end_flush_right_and_that_is_upright():
    arabic = "تحسين الإنتاجية وحل المشكلات من خلال البرمجة"
    upright = [
        Line(1000.0 - ln.x1, ln.y0, 1000.0 - ln.x0, ln.y1, arabic, confidence=0.99)
        for ln in _paragraphs()
    ]
    assert content_signals.mirrored_signal(upright, 1000.0).ok
    turned = _turned_over(upright, 1000.0, 1400.0)
    turned = [Line(ln.x0, ln.y0, ln.x1, ln.y1, arabic) for ln in turned]
    assert not content_signals.mirrored_signal(turned, 1000.0).ok


def test_a_pipe_table_whose_rows_end_in_empty_cells_is_rectangular():
    # The Redbook's authority table: an X where a role may act, empty cells where it may not.
    table = (
        "|User action|*JOBCTL|QIBM_DB_SECADM|QIBM_DB_SQLADM|No Authority|\n"
        "|---|---|---|---|---|\n"
        "|SET CURRENT DEGREE (SQL statement)|X||X||\n"
        "|Visual Explain within Run SQL scripts|X||X|X|\n"
        "||X|||X|\n"
    )
    assert form_signals.table_signal(parse_page(table)).ok
    rows = markdown_tables(table)[0].rows
    assert [len(row) for row in rows] == [5, 5, 5, 5]
    assert rows[3][:2] == ["", "X"]  # a leading empty cell keeps the columns in place
    assert not form_signals.table_signal(parse_page(table + "|one|two|\n")).ok


def test_arabic_words_run_together_where_lines_were_joined_out_of_order_fire():
    # right_to_left_01's first paragraph: its second line came first, glued to the first.
    good = (
        "تعتبر البرمجة بلغة R وPython من الأدوات القوية التي يمكن أن تعزز الإنتاجية "
        "وتساعد في إيجاد حلول فعالة للمشكلات، وحلول مبتكرة في النهاية."
    )
    glued = (
        "من الأدوات القوية التي يمكن أن تعزز الإنتاجية وتساعد في إيجاد حلول فعالةتعتبر "
        "البرمجة بلغة R وPython للمشكلات، وحلول مبتكرةفي النهاية."
    )
    assert content_signals.right_to_left_signal(parse_page(good)).ok
    signal = content_signals.right_to_left_signal(parse_page(glued))
    assert signal is not None and not signal.ok and "2 words run together" in signal.detail
