"""Drop caps read with their word: on a born-digital page (``model.drop_caps``, through the
engine on a PDF that sets one) and among a scan's OCR boxes (``scan_lines.join_drop_caps``)."""

from __future__ import annotations

import pymupdf
import pytest

from model import pipeline
from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.scan_layout import boxes_to_markdown
from model.scan_lines import TextBox

STORY = (
    "HEN the river rose that spring the whole town went down to the",
    "landing to watch the water come over the old stone wall and into",
    "the lower street, where the boats were tied to the lamp posts and",
    "the children waded out to the ferry house in their boots and the",
    "dogs barked at the logs that came down the stream all the day.",
)


def drop_cap_pdf() -> bytes:
    """A page opening with a three-line "W" beside the first three lines of its paragraph."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 60), "A Chapter Title", fontsize=20, fontname="tibo")
    page.insert_text((72, 142), "W", fontsize=46, fontname="tiro")
    for i, line in enumerate(STORY):
        page.insert_text((112 if i < 3 else 72, 110 + 16 * i), line, fontsize=12, fontname="tiro")
    for i in range(6):
        page.insert_text(
            (72, 220 + 16 * i), "More of the story follows, line after line of prose.", fontsize=12
        )
    return doc.tobytes()


@pytest.mark.slow
def test_a_born_digital_drop_cap_begins_its_word():
    data = drop_cap_pdf()
    with pymupdf.open(stream=data) as doc:
        # what MuPDF gives: the letter a line of its own, beside the paragraph's first lines
        lines = [line for b in doc[0].get_text("dict")["blocks"] for line in b.get("lines", [])]
        assert ["".join(s["text"] for s in line["spans"]) for line in lines][1:3] == [
            "W", STORY[0],
        ]  # fmt: skip
    result = pipeline.transcribe_page(
        LocalEngine(), PageInput(data, "application/pdf", 1), EngineOptions()
    )
    assert "WHEN the river rose" in result.markdown
    assert "into the lower street" in result.markdown
    assert "Wthe" not in result.markdown


def test_a_scans_drop_cap_joins_the_first_line_and_the_paragraph_stays_whole():
    boxes = [
        TextBox(100, 100, 150, 190, "T"),
        TextBox(160, 100, 800, 130, "HE first line of the story goes on and"),
        TextBox(160, 130, 800, 160, "the second line goes on and on here"),
        TextBox(160, 160, 800, 190, "the third line goes on and on here"),
        TextBox(100, 190, 800, 220, "the fourth line is at the margin now"),
        TextBox(100, 220, 600, 250, "and the end."),
    ]
    assert boxes_to_markdown(boxes, 1000) == (
        "THE first line of the story goes on and the second line goes on and on here the"
        " third line goes on and on here the fourth line is at the margin now and the end.\n"
    )


def test_a_tall_letter_with_no_line_beside_it_is_left_alone():
    boxes = [
        TextBox(100, 100, 150, 190, "A"),
        TextBox(400, 100, 800, 130, "a label far to the right"),
        TextBox(100, 200, 800, 230, "a line of text under it all"),
        TextBox(100, 230, 800, 260, "and another line of text"),
    ]
    markdown = boxes_to_markdown(boxes, 1000)
    assert "Aa label" not in markdown and "A" in markdown.split()
