"""Text the OCR skipped inside a line it read (``model.engines.ocr_coverage`` and the
``coverage`` signal): flagged where ink beside the recognised words is left unread, quiet where
the words cover the line's ink. Generated page images with the OCR's line and word boxes, and
the real scan of the py-pdf Arabic sample read by the local engine (marked slow)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from model.engines.base import EngineOptions, PageInput
from model.engines.ocr_coverage import unread_stretches
from model.quality import content_signals, signals

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no shared corpus at {CORPUS}")


def signal(quality: dict, name: str) -> dict | None:
    return quality["signals"].get(name)


def quad(x0: float, y0: float, x1: float, y1: float) -> list[list[float]]:
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def one_line_reading(ink_to: int) -> tuple[np.ndarray, SimpleNamespace]:
    """A 40-pixel line box from x 100 to 700 with its one recognised word at 100-400, and
    ink from 110 to ``ink_to``: ink past the word is ink no recognised word explains."""
    pixels = np.full((300, 800), 255, dtype=np.uint8)
    for x in range(110, ink_to, 12):  # letters: 8 pixels of ink, 4 of space
        pixels[110:130, x : x + 8] = 0
    output = SimpleNamespace(
        boxes=[quad(100, 100, 700, 140)],
        txts=("habibi",),
        scores=(0.999,),
        word_results=((("habibi", 0.999, quad(105, 102, 395, 138)),),),
    )
    return pixels, output


def test_ink_beside_the_read_word_is_a_stretch_left_unread():
    pixels, output = one_line_reading(ink_to=480)
    stretches = unread_stretches(pixels, output, min_score=0.5)
    assert stretches and stretches[0][1] == "habibi"
    assert stretches[0][0] > content_signals.MAX_UNREAD_STRETCH  # ~70 px of ink, 40 px high
    found = content_signals.coverage_signal(stretches)
    assert found is not None and not found.ok and "habibi" in found.detail


def test_ink_only_under_the_read_word_leaves_nothing_unread():
    pixels, output = one_line_reading(ink_to=395)
    assert unread_stretches(pixels, output, min_score=0.5) == []
    found = content_signals.coverage_signal([])
    assert found is not None and found.ok


def test_without_word_boxes_coverage_is_not_judged():
    pixels, output = one_line_reading(ink_to=480)
    output.word_results = ()
    assert unread_stretches(pixels, output, min_score=0.5) is None
    assert content_signals.coverage_signal(None) is None


@needs_corpus
@pytest.mark.slow
def test_the_arabic_word_the_ocr_skips_beside_habibi_is_flagged_and_a_latin_page_is_not():
    from model.engines.local import LocalEngine
    from model.quality.realpages import scan_page

    engine = LocalEngine()
    judged = {}
    for name in (
        "015-arabic/habibi.pdf",
        "002-trivial-libre-office-writer/002-trivial-libre-office-writer.pdf",
    ):
        data = scan_page(CORPUS / "pdf-samples" / name, 1)
        page = PageInput(data, "application/pdf", 1)
        result = engine.transcribe(page, EngineOptions())
        judged[name] = signal(signals.quality_report(page, result), "coverage")
    habibi, latin = judged.values()
    assert habibi is not None and not habibi["ok"], habibi  # "habibi" read, "حبيبي" not
    assert latin is not None and latin["ok"], latin
