"""Scans laid out as a reader reads them: lines turned level before rows and columns are
found, paragraphs by their spacing, ragged columns side by side read one after the other,
and pages the orientation classifier calls upside down checked by reading them.
The layout tests are pure (``pytest -p no:django``); the last test OCRs a real page."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from model.scan_layout import boxes_to_markdown
from model.scan_lines import TextBox, skew_of
from model.tables import all_tables

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def _turned(box: TextBox, degrees: float, cx: float = 600, cy: float = 800) -> TextBox:
    """The axis-aligned box the detector reports for ``box`` on a page turned ``degrees``
    about (cx, cy) (positive: lines fall to the right)."""
    a = math.radians(degrees)
    corners = [(box.x0, box.y0), (box.x1, box.y0), (box.x1, box.y1), (box.x0, box.y1)]
    turned = [
        (cx + (x - cx) * math.cos(a) - (y - cy) * math.sin(a),
         cy + (x - cx) * math.sin(a) + (y - cy) * math.cos(a))
        for x, y in corners
    ]  # fmt: skip
    xs, ys = [p[0] for p in turned], [p[1] for p in turned]
    return TextBox(min(xs), min(ys), max(xs), max(ys), box.text)


def _quad(box: TextBox, degrees: float) -> list[tuple[float, float]]:
    a = math.radians(degrees)
    w = box.x1 - box.x0
    x0, y0 = box.x0, box.y0
    return [
        (x0, y0),
        (x0 + w * math.cos(a), y0 + w * math.sin(a)),
        (x0 + w * math.cos(a) - 30 * math.sin(a), y0 + w * math.sin(a) + 30 * math.cos(a)),
        (x0 - 30 * math.sin(a), y0 + 30 * math.cos(a)),
    ]


def test_the_skew_is_the_slope_of_the_long_lines():
    lines = [TextBox(100, 100 + 40 * i, 900, 130 + 40 * i, "a line of text") for i in range(6)]
    word = TextBox(100, 500, 140, 530, "7")
    quads = [_quad(b, 1.0) for b in lines] + [_quad(word, 20.0)]
    assert skew_of(quads) == pytest.approx(1.0, abs=0.01)
    assert skew_of([_quad(b, 1.0) for b in lines[:2]]) == 0.0  # two lines say nothing


def _table_page() -> list[TextBox]:
    """A caption, then a five-column table of figures read cell by cell (how RapidOCR boxes
    a table), 24 px a row: the 2305.03393 page's Table 1."""
    boxes = [TextBox(270, 560, 960, 594, "Table 1. HPO performed in OTSL and HTML.")]
    header = ["Language", "simple", "complex", "all", "time"]
    rows = [header] + [
        [lang, f"0.9{n}{k}", f"0.8{n}{k}", f"0.7{n}{k}", f"{n}.{k}"]
        for n in range(1, 5)
        for k, lang in enumerate(("OTSL", "HTML"))
    ]
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            x = 480 + 100 * c
            boxes.append(TextBox(x, 670 + 26 * r, x + 12 * len(text) + 20, 700 + 26 * r, text))
    return boxes


def test_a_table_scanned_one_degree_askew_keeps_its_rows():
    page = [_turned(b, 1.0) for b in _table_page()]
    markdown = boxes_to_markdown(page, 1200, page_height=1600, skew_degrees=1.0)
    (table,) = all_tables(markdown)
    assert table.rows[0] == ["Language", "simple", "complex", "all", "time"]
    assert ["HTML", "0.941", "0.841", "0.741", "4.1"] in table.rows
    assert len(table.rows) == 9
    assert markdown.startswith("Table 1. HPO performed")


def test_paragraphs_split_at_a_blank_line_the_padded_boxes_hide():
    # 25 px a line, boxes 39 px tall (the detector pads them), 47 px across a blank line:
    # the boxes of the two paragraphs are 9 px apart, less than the old 0.8-line gap.
    ys = [83, 107, 133, 157, 204, 228, 254, 278]
    boxes = [TextBox(156, y, 636, y + 39, f"line {n} of running text") for n, y in enumerate(ys)]
    markdown = boxes_to_markdown(boxes, 1188)
    first, second = markdown.strip().split("\n\n")
    assert first.endswith("line 3 of running text")
    assert second.startswith("line 4 of running text")


def test_two_ragged_pages_side_by_side_read_one_after_the_other():
    # A questionnaire's spread: lists whose lines end wherever their words do, 300 px of
    # gutter, each side spaced its own way.
    left = [
        TextBox(200, 80 + 31 * i, 420 + 37 * (i % 5), 110 + 31 * i, f"left item {i}")
        for i in range(14)
    ]
    right = [
        TextBox(1010, 100 + 23 * i, 1250 + 29 * (i % 4), 128 + 23 * i, f"right item {i}")
        for i in range(18)
    ]
    markdown = boxes_to_markdown([*left, *right], 1600)
    assert markdown.index("left item 13") < markdown.index("right item 0")


def test_a_form_still_reads_across_when_scanned_askew():
    labels = [TextBox(100, 200 + 40 * i, 180 + 25 * i, 224 + 40 * i, f"label{i}") for i in range(5)]
    values = [TextBox(700, 200 + 40 * i, 760, 224 + 40 * i, f"value{i}") for i in range(5)]
    page = [_turned(b, 1.0) for b in [*values, *labels]]
    markdown = boxes_to_markdown(page, 1100, page_height=1600, skew_degrees=1.0)
    for i in range(5):
        assert f"label{i} value{i}" in markdown


GOOGLE_DOC = CORPUS / "pdf-samples" / "011-google-doc-document" / "google-doc-document.pdf"


@pytest.mark.slow  # OCR of a whole page
@pytest.mark.skipif(not GOOGLE_DOC.is_file(), reason="the shared corpus is not beside the repo")
def test_an_upright_scan_the_classifier_calls_upside_down_is_read_upright():
    # The real-page set's scan of the Google Docs page: the orientation classifier voted
    # "180" for six of its eight longest lines, and the page came out last line first.
    from model.engines.base import EngineOptions, PageInput
    from model.engines.local import LocalEngine
    from model.quality.realpages import scan_page

    scan = scan_page(GOOGLE_DOC, 1)
    result = LocalEngine().transcribe(PageInput(scan, "application/pdf", 1), EngineOptions())
    assert result.extra["rotation"] == 0
    markdown = result.markdown
    assert markdown.index("Beautiful is better than ugly") < markdown.index("Namespaces are one")
    assert result.extra["extraction_notes"] == []  # every line it found, it read


PERSIAN = CORPUS / "docling-testdata" / "pdf" / "sources" / "right_to_left_03.pdf"


@pytest.mark.slow  # OCR of a whole page
@pytest.mark.skipif(not PERSIAN.is_file(), reason="the shared corpus is not beside the repo")
def test_a_scan_in_a_script_the_ocr_models_do_not_read_is_flagged_not_passed_off(monkeypatch):
    # RapidOCR's wheel ships one recognition model, for Latin, Chinese and Japanese: a Persian
    # page's lines are found but read as nothing, or as a few Latin letters. Where Tesseract's
    # Persian data is installed it reads them (tests/test_tesseract_lines.py); here none is.
    from model.engines import tesseract_lines
    from model.engines.base import EngineOptions, PageInput
    from model.engines.local import LocalEngine
    from model.pipeline import finish_page
    from model.quality.realpages import scan_page

    monkeypatch.setattr(tesseract_lines, "installed_languages", frozenset)
    page = PageInput(scan_page(PERSIAN, 1), "application/pdf", 1)
    result = LocalEngine().transcribe(page, EngineOptions())
    assert result.extra["unread_share"] > 0.2
    (note,) = result.extra["extraction_notes"]
    assert "could not be read" in note and "no installed OCR model reads" in note
    quality = finish_page(page, result, EngineOptions()).extra["quality"]
    assert quality["needs_review"]


@pytest.mark.slow  # OCR of a whole page
def test_the_engine_warms_up_and_reads_an_image_without_word_boxes():
    # load() reads a page image without asking for word boxes (RapidOCR then returns none),
    # which the unread-share filter must take as it comes: the worker calls it at start.
    from model.engines.local import LocalEngine

    engine = LocalEngine()
    engine.load()
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (900, 300), "white")
    ImageDraw.Draw(image).text((40, 120), "Folio reads this line.", fill="black", font_size=48)
    markdown, rotation = engine.ocr_image(image)
    assert "Folio reads this line" in markdown and rotation == 0


def test_the_unread_share_is_the_area_of_the_lines_read_under_the_score():
    from types import SimpleNamespace

    from model.engines.ocr_output import unread_notes, unread_share

    def quad(x0: float, y0: float, x1: float, y1: float) -> list[list[float]]:
        return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]

    output = SimpleNamespace(boxes=[quad(0, 0, 300, 30), quad(0, 40, 100, 70)], scores=(0.95, 0.2))
    assert unread_share(output) == 0.25
    assert unread_notes(0.25) and not unread_notes(0.05)
    assert unread_share(SimpleNamespace(boxes=None, scores=None)) == 0.0
