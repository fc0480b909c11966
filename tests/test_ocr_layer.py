"""A PDF's own OCR layer is not trusted blindly (``model.engines.ocr_layer``): a scanned page
with an invisible text layer is read by the engine's OCR too, and the reading with more words
of the page's language is kept and named in the page's report."""

from __future__ import annotations

import pymupdf
import pytest

from model.documents import PDF
from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.engines.ocr_layer import choose_reading, invisible_share, is_ocr_layer
from model.engines.pdf_text import image_coverage

LINES = [
    "The committee met on Tuesday to discuss the budget for the coming year.",
    "Several members asked for a clearer account of the travel expenses.",
    "The chair promised a written report before the next meeting in March.",
    "Members agreed to meet again at the town hall on the first of the month.",
]
# What a poor OCR makes of the same lines: most words misread.
POOR = [
    "Tbe cornmittee rnet ou Tuesdav tc discuss tbe budqet fcr tbe corniug vear.",
    "Severa1 rnernbers asbed fcr a c1earer acconnt cf tbe trave1 expeuses.",
    "Tbe cbair prornised a writteu repcrt befcre tbe uext rneetiug iu Marcb.",
    "Mernbers aqreed tc rneet aqaiu at tbe tcwn ba11 cu tbe flrst cf tbe rnoutb.",
]


def _scan_with_layer(layer: list[str]) -> bytes:
    """A page of printed lines as a picture, with ``layer`` laid over it invisibly (more text
    than a caption's worth: a page with less over a picture is read by OCR anyway)."""
    printed = pymupdf.open()
    page = printed.new_page(width=595, height=842)
    for n, line in enumerate(LINES):
        page.insert_text((60, 120 + 30 * n), line, fontsize=13)
    pixmap = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
    scan = pymupdf.open()
    target = scan.new_page(width=595, height=842)
    target.insert_image(target.rect, stream=pixmap.tobytes("png"))
    for n, line in enumerate(layer):
        target.insert_text((60, 120 + 30 * n), line, fontsize=13, render_mode=3)
    return bytes(scan.tobytes())


def test_an_invisible_layer_over_a_picture_is_an_ocr_layer_and_visible_text_is_not():
    with pymupdf.open(stream=_scan_with_layer(POOR)) as doc:
        assert invisible_share(doc[0]) == 1.0
        assert is_ocr_layer(doc[0], image_coverage(doc[0]))
    born_digital = pymupdf.open()
    page = born_digital.new_page()
    page.insert_text((60, 120), LINES[0], fontsize=13)
    assert invisible_share(page) == 0.0
    assert not is_ocr_layer(page, image_coverage(page))


def test_the_reading_with_more_words_of_the_language_is_kept():
    kept, report = choose_reading("\n".join(POOR), "\n".join(LINES))
    assert kept == "own-ocr"
    assert report["own_ocr_words"] > report["ocr_layer_words"]
    assert choose_reading("\n".join(LINES), "\n".join(LINES))[0] == "ocr-layer"


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine()


def _read(engine: LocalEngine, data: bytes):  # noqa: ANN202
    return engine.transcribe(PageInput(data=data, mime_type=PDF, page_number=1), EngineOptions())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("layer", "kept", "method"), [(POOR, "own-ocr", "ocr"), (LINES, "ocr-layer", "text-layer")]
)
def test_a_poor_layer_gives_way_to_the_engines_own_reading_and_a_good_one_is_kept(
    engine, layer, kept, method
):
    result = _read(engine, _scan_with_layer(layer))
    assert (result.method, result.extra["ocr_layer"]["kept"]) == (method, kept)
    assert "The committee met on Tuesday" in result.markdown
    assert "cornmittee" not in result.markdown
