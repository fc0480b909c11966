"""A line RapidOCR's per-line classifier turned over on an upright scan is read again the way
the page reads; a line truly set upside down keeps its reading. Real models throughout (the
recognizer reads real crops); the aviation handbook's scan is the real page that lost its
heading this way. Pure (``pytest -p no:django``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pymupdf
import pytest

from model.engines.base import EngineOptions, PageInput
from model.engines.line_reread import REREAD_BELOW, reread_doubtful
from model.engines.local import LocalEngine
from model.engines.ocr_orientation import crop_line
from model.quality.realpages import CORPUS, scan_page

AMT = CORPUS / "docling-testdata/pdf/sources/amt_handbook_sample.pdf"
LINES = ["Stainless Steel Self-Locking Nut", "The spring keeps the locking sections apart."]


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine()


def _page_pixels(upside_down: int | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """A page with two lines of Times at 150 dpi (the one at ``upside_down`` printed turned
    over), as RGB pixels, and each line's four-cornered box."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=200)
    for k, text in enumerate(LINES):
        turn = 180 if k == upside_down else 0
        point = (300, 70 + 40 * k) if turn else (40, 80 + 40 * k)
        page.insert_text(point, text, fontsize=12, fontname="tiit", rotate=turn)
    pix = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
    grey = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width)
    pixels = np.ascontiguousarray(np.stack([grey] * 3, axis=-1))
    quads = []
    for k in range(len(LINES)):
        rows = np.where((grey[:, :] < 128).any(axis=1))[0]
        band = rows[(rows > (50 + 40 * k) * 150 / 72) & (rows < (90 + 40 * k) * 150 / 72)]
        cols = np.where((grey[band.min() : band.max() + 1] < 128).any(axis=0))[0]
        x0, x1, y0, y1 = cols.min() - 6, cols.max() + 6, band.min() - 6, band.max() + 6
        quads.append(np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float32))
    return pixels, quads


def _read(engine: LocalEngine, image: np.ndarray) -> tuple[str, float]:
    result = engine._recognizer()(image)
    return str(result.txts[0]), float(result.scores[0])


def test_a_line_read_turned_over_is_read_again_upright(engine):
    pixels, quads = _page_pixels()
    engine._engines()
    # What RapidOCR returns when its classifier turns an upright line over: the reading of
    # the turned crop, with little confidence.
    turned = [np.ascontiguousarray(np.rot90(crop_line(pixels, q.copy()), 2)) for q in quads]
    garbled, score = _read(engine, turned[0])
    assert score < REREAD_BELOW and garbled != LINES[0], (garbled, score)
    upright = _read(engine, crop_line(pixels, quads[1].copy()))
    output = SimpleNamespace(
        boxes=quads, txts=[garbled, upright[0]], scores=[score, upright[1]], word_results=[]
    )
    again = reread_doubtful(output, pixels, 0, engine._recognizer(), crop_line)
    assert again.txts == LINES and again.reread == 1, again.txts
    assert again.scores[0] > REREAD_BELOW


def test_a_line_printed_upside_down_keeps_its_reading(engine):
    pixels, quads = _page_pixels(upside_down=0)
    engine._engines()
    # The classifier turned the upside-down label the right way; say it read it doubtfully.
    label = np.ascontiguousarray(np.rot90(crop_line(pixels, quads[0].copy()), 2))
    text, _ = _read(engine, label)
    assert text == LINES[0]
    upright = _read(engine, crop_line(pixels, quads[1].copy()))
    output = SimpleNamespace(
        boxes=quads, txts=[text, upright[0]], scores=[0.6, upright[1]], word_results=[]
    )
    again = reread_doubtful(output, pixels, 0, engine._recognizer(), crop_line)
    assert again.txts == [text, LINES[1]] and again.reread == 0


@pytest.mark.slow  # OCR of a whole page
@pytest.mark.skipif(not AMT.is_file(), reason="the shared corpus is not beside the repository")
def test_the_aviation_handbook_scan_keeps_its_italic_heading(engine):
    """The scan of the real-page set: its heading "Stainless Steel Self-Locking Nut" (italic,
    the body's size) was voted upside down by the line classifier and dropped, and the line
    after the next read "ana  s  a a  and"."""
    page = PageInput(scan_page(AMT, 1), "application/pdf", 1)
    result = engine.transcribe(page, EngineOptions())
    markdown = result.markdown
    assert "Stainless Steel Self-Locking Nut\n" in markdown, markdown
    assert markdown.index("Boots Self-Locking Nut") < markdown.index("Stainless Steel Self")
    assert "and key and a thread insert with a locking shoulder and slotted keyway" in markdown
    assert not any(line[4] < REREAD_BELOW for line in result.extra["ocr_lines"])
