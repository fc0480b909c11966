"""The layout model's running heads and feet (``model.layout.furniture``): dropped from the
text-layer Markdown under ``headers=drop``, all but those holding a formula; kept under
``keep``. Real pages of the shared corpus through the local engine, and the cutting itself on
a chunk made by hand."""

from __future__ import annotations

import pymupdf
import pytest

from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.engines.pdf_text import TEXT_DICT_FLAGS
from model.layout.furniture import drop_furniture, holds_formula
from model.quality.realpages import CORPUS

ODT = CORPUS / "docling-testdata/odf/sources/text_document_01.odt.pdf"
AVIATION = CORPUS / "docling-testdata/pdf/sources/amt_handbook_sample.pdf"
# What the layout model boxes at the foot of each page (pymupdf4llm 2.0's ``page-footer``).
ODT_FOOT = (272, 771, 324, 781)  # "X2 + Y2 = Z", the document's closing equation
AVIATION_FOOT = (537, 730, 561, 738)  # "7-45", the handbook's page number

pytestmark = pytest.mark.skipif(not ODT.is_file(), reason="the shared corpus is not here")


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine()


def _page_dict(path) -> dict:
    with pymupdf.open(path) as doc:
        return doc[0].get_text("dict", flags=TEXT_DICT_FLAGS)


def _read(engine: LocalEngine, path, headers: str) -> str:
    page = PageInput(data=path.read_bytes(), mime_type="application/pdf", page_number=1)
    return engine.transcribe(page, EngineOptions(headers=headers)).markdown


def test_a_formula_the_layout_model_calls_a_page_foot_is_kept_and_written_as_latex(engine):
    markdown = _read(engine, ODT, "drop")
    # A line of its own: a display.
    assert markdown.rstrip().endswith("\n\n$$X^{2} + Y_{2} = Z$$")


def test_a_page_number_the_layout_model_calls_a_page_foot_is_still_dropped(engine):
    dropped, kept = _read(engine, AVIATION, "drop"), _read(engine, AVIATION, "keep")
    assert "7-45" not in dropped
    assert "7-45" in kept


def test_a_foot_holds_a_formula_by_its_glyphs_not_by_its_place():
    assert holds_formula(_page_dict(ODT), ODT_FOOT)
    assert not holds_formula(_page_dict(AVIATION), AVIATION_FOOT)


def _chunk(*boxes: tuple[str, str, tuple[float, float, float, float]]) -> dict:
    text, page_boxes = "", []
    for index, (kind, markdown, bbox) in enumerate(boxes):
        page_boxes.append({"index": index, "class": kind, "bbox": bbox,
                           "pos": (len(text), len(text) + len(markdown))})  # fmt: skip
        text += markdown
    return {"text": text, "page_boxes": page_boxes}


def test_the_cut_chunk_keeps_every_box_with_its_text_where_it_now_is():
    chunk = _chunk(
        ("page-header", "Running head\n\n", (50, 20, 300, 30)),
        ("text", "Body text.\n\n", (50, 100, 500, 200)),
        ("page-footer", "7-45\n\n", AVIATION_FOOT),
    )
    cut = drop_furniture(chunk, _page_dict(AVIATION))
    assert cut is not None
    assert cut["text"] == "Body text.\n\n"
    assert [box["pos"] for box in cut["page_boxes"]] == [(0, 0), (0, 12), (12, 12)]
    assert [box["class"] for box in cut["page_boxes"]] == ["page-header", "text", "page-footer"]


def test_a_page_whose_only_text_is_a_head_keeps_it_and_untiled_boxes_are_not_cut():
    page_dict = _page_dict(AVIATION)
    only = _chunk(("page-footer", "7-45\n\n", AVIATION_FOOT))
    assert drop_furniture(only, page_dict) == only
    untiled = _chunk(("text", "Body.\n\n", (50, 100, 500, 200)),
                     ("page-footer", "7-45\n\n", AVIATION_FOOT))  # fmt: skip
    untiled["text"] += "text outside every box"
    assert drop_furniture(untiled, page_dict) is None
