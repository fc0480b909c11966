"""Scanned lines in scripts the bundled OCR models cannot read, read by Tesseract where its
language data is installed (``model.engines.tesseract_lines``): the real set's Korean and
Persian scans, a Latin scan left to RapidOCR, and a job's language whose data is missing."""

from __future__ import annotations

import pytest

from model.documents import PDF
from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.engines.tesseract_lines import installed_languages
from model.quality.realpages import CORPUS, scan_page

pytestmark = pytest.mark.slow
needs = pytest.mark.skipif(
    not {"kor", "fas", "ara"} <= installed_languages() or not CORPUS.is_dir(),
    reason="needs tesserocr with Debian's tesseract-ocr-kor, -fas and -ara, and the corpus",
)


@pytest.fixture(scope="module")
def engine():
    return LocalEngine()


def read(engine, pdf: str, page: int, **options):
    data = scan_page(CORPUS / pdf, page)
    return engine.transcribe(
        PageInput(data=data, mime_type=PDF, page_number=1), EngineOptions(**options)
    )


def hangul(text: str) -> int:
    return sum("\uac00" <= ch <= "\ud7a3" for ch in text)


@needs
def test_a_korean_scan_is_read_in_korean(engine):
    result = read(engine, "docling-testdata/pdf/sources/normal_4pages.pdf", 2)

    assert result.extra["tesseract"]["language"] == "kor"
    assert hangul(result.markdown) > 200
    assert "감염병" in result.markdown  # "infectious disease", the page's subject
    assert "unread_script" not in result.extra


@needs
def test_a_persian_scan_is_read_in_persian_the_right_way_up(engine):
    result = read(engine, "docling-testdata/pdf/sources/right_to_left_03.pdf", 1)

    assert result.extra["tesseract"]["language"].startswith(("fas", "ara"))
    assert "پذیرش" in result.markdown or "پذيرش" in result.markdown  # "admission"
    assert "استاندارد" in result.markdown


@needs
def test_an_arabic_scan_the_latin_recognizer_turned_over_reads_upright(engine):
    result = read(engine, "docling-testdata/pdf/sources/right_to_left_02.pdf", 1)

    assert result.extra["rotation"] == 0
    assert "الإنسان" in result.markdown  # from "building the Egyptian person", the first line


@needs
def test_a_latin_scan_is_left_to_the_bundled_models(engine):
    result = read(engine, "pdf-samples/021-pdfa/crazyones-pdfa.pdf", 1)

    assert "tesseract" not in result.extra and "unread_script" not in result.extra
    assert "The Crazy Ones" in result.markdown


@needs
def test_a_jobs_language_whose_data_is_missing_is_said(engine):
    result = read(engine, "pdf-samples/021-pdfa/crazyones-pdfa.pdf", 1, ocr_language="amh")

    assert result.extra["unread_script"]["language"] == "amh"
    assert any("tesseract-ocr-amh" in note for note in result.extra["extraction_notes"])
