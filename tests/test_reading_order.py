"""Reading order of a page's blocks (``model.layout.reading_order``): columns before rows,
full-width blocks closing the columns above them, and the order kept where nothing can be
cut; then the engine on the aviation handbook's two-column page, whose layout model reads it
by rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from model import pipeline
from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.layout.reading_order import reading_order, reorder_chunk

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
HANDBOOK = CORPUS / "docling-testdata/pdf/sources/amt_handbook_sample.pdf"


def names(blocks: list[tuple[str, tuple[float, float, float, float]]]) -> list[str]:
    return [name for name, _ in reading_order(blocks, lambda block: block[1])]


def test_two_columns_are_read_down_the_left_then_down_the_right():
    # Given row by row, as the layout model gave the handbook's page; the paragraphs of the
    # two columns end at the same heights, so every row is a band of its own.
    blocks = [
        ("left 1", (72, 40, 300, 90)),
        ("right 1", (320, 40, 550, 90)),
        ("left 2", (72, 100, 300, 150)),
        ("right 2", (320, 100, 550, 150)),
    ]
    assert names(blocks) == ["left 1", "left 2", "right 1", "right 2"]


def test_a_full_width_block_closes_the_columns_above_it_and_opens_those_below():
    blocks = [
        ("title", (72, 10, 550, 30)),
        ("right a", (320, 40, 550, 90)),
        ("left a", (72, 40, 300, 90)),
        ("figure across", (72, 100, 550, 200)),
        ("left b", (72, 210, 300, 260)),
        ("right b", (320, 210, 550, 260)),
        ("left c", (72, 270, 300, 300)),
    ]
    assert names(blocks) == [
        "title", "left a", "right a", "figure across", "left b", "left c", "right b",
    ]  # fmt: skip


def test_a_sidebar_beside_a_paragraph_follows_the_paragraph_whole():
    blocks = [
        ("heading", (72, 10, 550, 30)),
        ("sidebar", (420, 40, 550, 120)),
        ("paragraph", (72, 40, 400, 200)),
        ("next paragraph", (72, 210, 550, 260)),
    ]
    assert names(blocks) == ["heading", "paragraph", "sidebar", "next paragraph"]


def test_a_two_by_two_grid_is_read_column_by_column_only_when_a_gutter_runs_through_it():
    grid = [
        ("top left", (72, 40, 300, 90)),
        ("top right", (320, 40, 550, 90)),
        ("bottom left", (72, 100, 300, 150)),
        ("bottom right", (320, 100, 550, 150)),
    ]
    assert names(grid) == ["top left", "bottom left", "top right", "bottom right"]
    # Lines of one paragraph, overlapping boxes: nothing to cut, the given order stays.
    overlapping = [("b", (72, 40, 550, 95)), ("a", (72, 90, 550, 150))]
    assert names(overlapping) == ["b", "a"]


def test_a_chunk_keeps_its_markdown_whole_and_each_box_its_own_span():
    chunk = {
        "text": "R1\n\nL1\n\nL2\n\n",
        "page_boxes": [
            {"class": "text", "bbox": (320, 40, 550, 90), "pos": (0, 4)},
            {"class": "text", "bbox": (72, 40, 300, 90), "pos": (4, 8)},
            {"class": "text", "bbox": (72, 100, 300, 150), "pos": (8, 12)},
        ],
    }
    ordered = reorder_chunk(chunk)
    assert ordered["text"] == "L1\n\nL2\n\nR1\n\n"
    spans = [ordered["text"][slice(*box["pos"])] for box in ordered["page_boxes"]]
    assert spans == ["L1\n\n", "L2\n\n", "R1\n\n"]
    # Text no box wrote (spans that do not tile it) is never moved or lost.
    gappy = {**chunk, "text": "X" + chunk["text"]}
    assert reorder_chunk(gappy) is gappy


@pytest.mark.slow
def test_the_handbook_reads_each_paragraph_under_its_own_heading():
    if not HANDBOOK.exists():
        pytest.skip("the shared test corpus is not checked out next to the repository")
    result = pipeline.transcribe_page(
        LocalEngine(), PageInput(HANDBOOK.read_bytes(), "application/pdf", 1), EngineOptions()
    )
    text = result.markdown
    at = {
        phrase: text.index(phrase)
        for phrase in (
            "The spring keeps the locking",  # left column, under "Boots Self-Locking Nut"
            "The spring, through the medium",  # left column, below it
            "Boots self-locking nuts are made",  # left column, its last paragraph
            "the most common ranges in size",  # top of the right column, its sentence's end
            "Stainless Steel Self-Locking Nut",  # heading in the right column
            "Elastic Stop Nut",  # heading lower in the right column
            "The elastic stop nut is a standard nut",  # its paragraph
        )
    }
    assert list(at.values()) == sorted(at.values()), at


def test_one_column_bands_on_either_side_of_the_page_are_not_columns():
    # A centred subtitle above a heading set flush left (docling's text_document_01), and a
    # display formula above a theorem's heading: each band holds one block, read top down.
    blocks = [
        ("title", (269, 73, 327, 95)),
        ("subtitle", (267, 136, 328, 150)),
        ("heading", (56, 197, 201, 215)),
        ("paragraph", (56, 224, 539, 291)),
        ("formula", (248, 617, 400, 664)),
        ("next heading", (90, 675, 170, 686)),
        ("its paragraph", (109, 688, 540, 734)),
    ]
    assert names(blocks) == [name for name, _ in blocks]


@pytest.mark.slow
def test_a_latex_two_column_page_reads_its_left_column_to_the_end_first():
    # The right column's first paragraph ends the left column's last sentence ("... primis in
    # faucibus orci" / "luctus et ultrices posuere cubilia Curae"); the layout model put it
    # after the left column's first paragraph.
    path = CORPUS / "pdf-samples/026-latex-multicolumn/multicolumn.pdf"
    if not path.exists():
        pytest.skip("the shared test corpus is not checked out next to the repository")
    result = pipeline.transcribe_page(
        LocalEngine(), PageInput(path.read_bytes(), "application/pdf", 2), EngineOptions()
    )
    text = " ".join(result.markdown.split())
    assert "in faucibus orci luctus et ultrices posuere cubilia Curae" in text
