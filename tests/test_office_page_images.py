"""Page images of Office and OpenDocument documents: LibreOffice lays the document out as PDF in
the worker, and each page of the job is drawn from its view of that PDF (a slide, a sheet or
a band of it, the printed page where a part of the text begins)."""

from __future__ import annotations

import io
import re
import shutil

import pymupdf
import pytest
from PIL import Image

from model.engines.base import EngineOptions, PageInput
from model.formats import renditions, structure, types
from model.page_images import IMAGE_LONG_SIDE
from model.pipeline import office_page_image, transcribe_page
from tests import office

NO_LIBREOFFICE = "LibreOffice is not installed (.ci/run installs it)"
# LibreOffice takes seconds per document: these are in the slow tier.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("soffice") is None, reason=NO_LIBREOFFICE),
    pytest.mark.skipif(not office.CORPUS.is_dir(), reason=office.CORPUS_MISSING),
]


def made(data: bytes, fmt: types.Format) -> renditions.Rendition:
    return renditions.rendition(data, fmt, structure.document_units(data, fmt))


def size(stored: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(stored)) as image:
        assert image.format == "WEBP"  # the one stored page image (model/page_images.py)
        return image.size


def test_each_slide_is_drawn_as_its_own_page_at_the_slides_shape():
    deck = office.corpus("pptx/sources/powerpoint_sample.pptx")

    rendition = made(deck, types.PPTX)

    assert [view.page for view in rendition.views] == [0, 1, 2]
    with pymupdf.open(stream=rendition.pdf, filetype="pdf") as pdf:
        assert "Second slide title" in pdf[1].get_text()
    image = renditions.page_image(rendition, 2, timeout=60)
    width, height = size(image.webp)
    assert width == IMAGE_LONG_SIDE and abs(width / height - 16 / 9) < 0.02


def test_a_part_of_a_word_file_is_shown_on_the_printed_page_where_its_text_begins():
    data = office.long_docx()
    page_units = structure.document_units(data, types.DOCX)
    assert len(page_units) >= 5

    rendition = made(data, types.DOCX)

    with pymupdf.open(stream=rendition.pdf, filetype="pdf") as pdf:
        printed = [page.get_text() for page in pdf]
    assert len(printed) > len(page_units)  # parts are not printed pages: they must be found
    for unit, view in zip(page_units, rendition.views, strict=True):
        first_item = re.search(r"Item \d+\.", unit)[0]
        assert first_item in printed[view.page], (first_item, view)


def test_a_long_sheet_cut_into_row_ranges_shows_each_range_as_a_band_of_its_sheet():
    data = office.long_sheet_xlsx(rows=600)

    rendition = made(data, types.XLSX)

    assert rendition.views == (
        renditions.View(0, 0.0, 1 / 3, sheet=True),
        renditions.View(0, 1 / 3, 2 / 3, sheet=True),
        renditions.View(0, 2 / 3, 1.0, sheet=True),
        renditions.View(1, sheet=True),
    )
    whole_sheet = renditions.page_image(rendition, 4, timeout=60)
    assert whole_sheet.size[0] > whole_sheet.size[1]  # one short row: drawn as it is


def test_a_narrow_sheets_row_ranges_are_drawn_in_strips_at_a_readable_size():
    data = office.lengthened_sales_xlsx(rows=600)  # 601 rows of four columns: three ranges
    rendition = made(data, types.XLSX)
    with pymupdf.open(stream=rendition.pdf, filetype="pdf") as pdf:
        sheet = pdf[0].rect
    assert sheet.height > 25 * sheet.width  # as LibreOffice lays the sheet out: a sliver

    rows_seen = []
    for number in (1, 2, 3):
        one_page, points = renditions.view_pdf(rendition, number)
        with pymupdf.open(stream=one_page, filetype="pdf") as pdf:
            text = pdf[0].get_text()
        rows_seen += re.findall(r"\d{4}-\d\d-\d\d", text)
        assert text.count("Product") == 3  # three strips, each headed by the sheet's first row
        image = renditions.page_image(rendition, number, timeout=60)
        width, height = size(image.webp)
        # About square (it was 141 x 1400), and as the view's points are.
        assert height == IMAGE_LONG_SIDE and 1 <= height / width <= renditions.MAX_SHEET_ASPECT
        assert abs(width / height - points[0] / points[1]) < 0.01
        # A point is at least 1.33 px in the fitted view (96 dpi; it was 0.47), where the
        # image is shown at most 1400 px high: the sheet's 15-point rows are 20 px high.
        assert 1400 / points[1] > 1.33
    # Each row of the sheet in exactly one range: the ranges' edges fall between rows.
    assert len(rows_seen) == len(set(rows_seen)) == 600


def test_the_pipeline_draws_an_office_page_at_its_own_shape():
    deck = office.corpus("pptx/sources/powerpoint_sample.pptx")
    page = PageInput(data=deck, mime_type=types.PPTX.mime_type, page_number=3)

    image = office_page_image(page, EngineOptions())

    assert image.size == pytest.approx((960, 540), abs=0.1)  # the slide, not A4
    width, height = size(image.webp)
    assert abs(width / height - 16 / 9) < 0.02


def test_without_libreoffice_the_page_keeps_its_text_and_has_no_image(monkeypatch):
    monkeypatch.setenv("FOLIO_LIBREOFFICE", "/nonexistent/soffice")
    renditions._cache.clear()
    deck = office.corpus("pptx/sources/powerpoint_comments.pptx")
    page = PageInput(data=deck, mime_type=types.PPTX.mime_type, page_number=1)

    assert transcribe_page(None, page, EngineOptions()).markdown
    assert office_page_image(page, EngineOptions()) is None
