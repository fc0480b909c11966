"""Two panels side by side in one of the layout model's text boxes, read one after the other
(``model.layout.side_panels``): through the engine on generated pages, and the rule's cases
on the layout model's raw groups."""

from __future__ import annotations

from typing import Any

import pymupdf
import pytest

from model import layout_model
from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.layout.reading_order import reorder_chunk
from model.layout.side_panels import _panels, split_panels

PDF = "application/pdf"
SOURCE = ["\\alpha + \\beta \\qquad", "\\gamma \\neq \\delta", "\\quad \\text{end}"]
TYPESET = "alpha plus beta, gamma unlike delta"


def example_pdf(examples: int = 1) -> bytes:
    """A manual's examples: each the source on a grey ground at the left, what it typesets in
    a frame at the right, between two paragraphs (the layout model boxes both panels of an
    example as one). The n-th example's lines end in its number, from the second on."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    intro = "The example shows a formula's source on the left and what it typesets on the right. "
    page.insert_textbox(pymupdf.Rect(72, 72, 523, 140), intro * 2, fontsize=11)
    for n in range(examples):
        top, mark = 150 + 70 * n, f" {n + 1}" if n else ""
        page.draw_rect(pymupdf.Rect(66, top, 280, top + 50), color=None, fill=(0.95, 0.95, 0.95))
        for i, line in enumerate(SOURCE):
            page.insert_text((72, top + 14 + 13 * i), line + mark, fontname="cour", fontsize=9)
        page.draw_rect(pymupdf.Rect(290, top + 10, 523, top + 38), color=(0, 0, 0), width=0.5)
        page.insert_text((300, top + 28), TYPESET + mark, fontname="helv", fontsize=10)
    after = "After the example the text goes on in a paragraph of its own, as a manual's would. "
    page.insert_textbox(pymupdf.Rect(72, 145 + 70 * examples, 523, 842), after * 2, fontsize=11)
    return doc.tobytes()


def shaded_list_pdf() -> bytes:
    """A two-column list whose first column is shaded: its rows stand on shared baselines."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.draw_rect(pymupdf.Rect(66, 88, 170, 160), color=None, fill=(0.9, 0.9, 0.9))
    rows = [("Name", "Folio service"), ("Version", "a recent one"), ("Licence", "an open one")]
    for i, (key, value) in enumerate(rows):
        page.insert_text((72, 100 + 16 * i), key, fontsize=10)
        page.insert_text((260, 100 + 16 * i), value, fontsize=10)
    return doc.tobytes()


def transcribe(data: bytes) -> str:
    return LocalEngine().transcribe(PageInput(data, PDF, 1), EngineOptions()).markdown


@pytest.mark.slow
def test_an_examples_source_and_its_result_are_read_one_after_the_other():
    layout_model.activate()
    with pymupdf.open(stream=example_pdf()) as doc:
        # what the layout model gives: one text box holding both panels' lines
        page = doc[0]
        page.get_layout(return_raw=True)
        boxes = [group["group_bbox"] for group in page.layout_information]
        assert any(box[0] < 100 and box[2] > 300 and 150 < box[1] < 170 for box in boxes)
    markdown = transcribe(example_pdf())
    fence = "```\n" + "\n".join(SOURCE) + "\n```"
    assert fence in markdown, markdown
    assert markdown.index(fence) < markdown.index(TYPESET)
    assert f"`{TYPESET}" not in markdown and f"{TYPESET}`" not in markdown


@pytest.mark.slow
def test_examples_down_a_page_are_read_each_source_then_its_result():
    markdown = transcribe(example_pdf(examples=3))
    marks = [f"\\quad \\text{{end}}{mark}\n```" for mark in ("", " 2", " 3")]
    results = [f"{TYPESET}{mark}" for mark in ("", " 2", " 3")]
    places = [markdown.index(text) for pair in zip(marks, results, strict=True) for text in pair]
    assert places == sorted(places), markdown


@pytest.mark.slow
def test_a_list_with_a_shaded_first_column_is_still_read_row_by_row():
    markdown = transcribe(shaded_list_pdf())
    assert "Name Folio service Version a recent one Licence an open one" in markdown, markdown


# --- the rule, on raw groups --------------------------------------------------------------------

LEFT = [[72, 150, 180, 158], [76, 161, 176, 168], [76, 172, 168, 179]]
RIGHT_LINES = [[298, 160, 326, 169], [346, 161, 400, 168]]
GREY = {"rect": (66, 141, 284, 187), "fill": (0.95, 0.95, 0.95), "color": None}
RULES = ((290, 151, 511, 151), (290, 151, 290, 177), (510, 151, 510, 177), (290, 177, 511, 177))
FRAME = [{"rect": rect, "fill": None, "color": (0, 0, 0)} for rect in RULES]  # meeting at corners


def group(boxes: list[list[float]]) -> dict[str, Any]:
    return {
        "class_name": "text",
        "group_bbox": [min(b[0] for b in boxes), min(b[1] for b in boxes),
                       max(b[2] for b in boxes), max(b[3] for b in boxes)],
        "bboxes": boxes,
        "indicies": list(range(10, 10 + len(boxes))),
    }  # fmt: skip


def test_two_panelled_sides_become_two_groups_with_their_own_members():
    both = group([LEFT[0], RIGHT_LINES[0], LEFT[1], RIGHT_LINES[1], LEFT[2]])
    left, right = split_panels([both], lambda: [GREY, *FRAME])
    assert left["bboxes"] == LEFT and left["indicies"] == [10, 12, 14]
    assert right["bboxes"] == RIGHT_LINES and right["indicies"] == [11, 13]
    assert right["group_bbox"] == [298, 160, 400, 169]


def test_one_panelled_side_on_shared_baselines_is_a_list_and_stays_whole():
    rows = [[72, 100, 120, 110], [260, 100, 330, 110], [72, 116, 120, 126], [260, 116, 330, 126]]
    shaded = {"rect": (66, 95, 170, 130), "fill": (0.9, 0.9, 0.9), "color": None}
    assert split_panels([group(rows)], lambda: [shaded]) == [group(rows)]


def test_a_framed_sidebar_off_its_columns_baselines_is_cut_away():
    prose = [[72, 93 + 15 * i, 323, 103 + 15 * i] for i in range(4)]
    sidebar = [[388, 97 + 19 * i, 479, 106 + 19 * i] for i in range(3)]
    frame = {"rect": (380, 88, 523, 150), "fill": None, "color": (0, 0, 0)}
    parts = split_panels([group(prose + sidebar)], lambda: [frame])
    assert [part["bboxes"] for part in parts] == [prose, sidebar]


def test_sides_inside_one_ruled_grid_are_cells_of_a_table_and_stay_whole():
    grid = [
        {"rect": rect, "fill": None, "color": (0, 0, 0)}
        for rect in ((66, 141, 511, 141), (66, 187, 511, 187), (66, 141, 66, 187),
                     (287, 141, 287, 187), (511, 141, 511, 187))
    ]  # fmt: skip
    both = group([*LEFT, *RIGHT_LINES])
    assert split_panels([both], lambda: grid) == [both]


def test_a_cut_pair_is_read_as_one_block_among_the_pages_others():
    boxes = [(72, 80, 520, 130), (72, 150, 280, 200), (300, 160, 520, 190),
             (72, 220, 280, 270), (300, 230, 520, 260), (72, 290, 520, 330)]  # fmt: skip
    chunk = {
        "text": "".join(f"{i}\n" for i in range(len(boxes))),
        "page_boxes": [{"bbox": box, "pos": (2 * i, 2 * i + 2)} for i, box in enumerate(boxes)],
    }
    # Read as a page of two columns, the two lefts come before the two rights...
    assert reorder_chunk(chunk)["text"] == "0\n1\n3\n2\n4\n5\n"
    # ...unless each pair is the two halves of a box cut apart.
    pairs = [(boxes[1], boxes[2]), (boxes[3], boxes[4])]
    assert reorder_chunk(chunk, together=pairs)["text"] == "0\n1\n2\n3\n4\n5\n"


def test_no_gutter_no_drawings_asked_for():
    def drawings() -> list[dict[str, Any]]:
        raise AssertionError("the page's drawings were read for a box without a gutter")

    lines = [[72, 100, 500, 110], [72, 114, 480, 124], [90, 128, 300, 138]]
    assert split_panels([group(lines), {"class_name": "table"}], drawings)[0] == group(lines)


def test_strokes_that_touch_only_through_a_third_make_one_panel():
    # The box at the right touches neither the left rule nor the top one (which ends above
    # it), but it touches the two together: drawn in this order they still make one frame.
    rules = [(500, 151, 511, 177), (290, 140, 290, 177), (290, 145, 511, 145)]
    strokes = [{"rect": rect, "fill": None, "color": (0, 0, 0)} for rect in rules]
    assert _panels(strokes) == [(290, 140, 511, 177)]
