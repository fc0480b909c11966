"""Korean word spaces a text layer sets as gaps (``model.hangul_spacing``): a page whose
words are set by moving the pen, as XeTeX's Korean typesetting does, comes out of MuPDF as one
word a line; the engine's Markdown has the words back, and the review's text-layer signal does
not count them as lost. Chinese set the same way stays as it is (it has no word spaces)."""

from __future__ import annotations

import pymupdf
import pytest

from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.hangul_spacing import respace_hangul, spaced_words
from model.quality.form_signals import text_layer_signal
from model.quality.parsed import parse_page

KOREAN = [
    "큰", "문서를", "작업할", "때에", "여러", "부분으로", "입력", "파일을", "나누어놓는", "것이",
]  # fmt: skip
CHINESE = [
    "我们", "今天", "讨论", "文档", "识别", "的", "问题", "以及", "解决", "方法",
]  # fmt: skip


def _set_by_gaps(words: list[str], font: str, lines: int = 12) -> bytes:
    """A page of ``lines`` lines of ``words``, each glyph placed on its own, 0.03 pt between
    a word's glyphs and 3.2 pt (a third of the 10 pt type) between words: no space character
    anywhere."""
    doc = pymupdf.open()
    page = doc.new_page()
    metrics = pymupdf.Font(font)
    for row in range(lines):
        x, y = 72.0, 100.0 + 14 * row
        for word in words:
            for glyph in word:
                page.insert_text((x, y), glyph, fontname=font, fontsize=10)
                x += metrics.text_length(glyph, 10) + 0.03
            x += 3.2
    return doc.tobytes()


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine()


def _markdown(engine: LocalEngine, data: bytes) -> str:
    page = PageInput(data=data, mime_type="application/pdf", page_number=1)
    result = engine.transcribe(page, EngineOptions())
    assert result.method == "text-layer"
    return result.markdown


def test_korean_set_by_gaps_gets_its_word_spaces(engine):
    data = _set_by_gaps(KOREAN, "korea")
    with pymupdf.open(stream=data) as doc:
        assert " " not in doc[0].get_text().split("\n")[0]  # MuPDF's text: one word a line
    markdown = _markdown(engine, data)
    assert "큰 문서를 작업할 때에 여러 부분으로 입력 파일을 나누어놓는 것이" in markdown
    assert "큰문서를" not in markdown


def test_chinese_set_by_the_same_gaps_stays_unspaced(engine):
    markdown = _markdown(engine, _set_by_gaps(CHINESE, "china-s"))
    assert "我们今天讨论文档识别的问题以及解决方法" in markdown


def _rawdict(*runs: tuple[str, float]) -> dict:
    """One line of glyphs 10 pt wide at 10 pt, each run's glyphs 0.03 pt apart and ``gap``
    after the run."""
    chars, x = [], 0.0
    for text, gap in runs:
        for index, glyph in enumerate(text):
            chars.append({"c": glyph, "bbox": (x, 0.0, x + 10.0, 10.0)})
            x += 10.0 + (gap if index == len(text) - 1 else 0.03)
    return {"blocks": [{"lines": [{"spans": [{"size": 10.0, "chars": chars}]}]}]}


def test_a_run_is_respaced_only_where_no_hangul_adjoins_it():
    raw = _rawdict(("이명령을", 3.2), ("본문에", 0.0))  # "이명령을 본문에" set by a gap
    assert spaced_words(raw) == {"이명령을본문에": "이명령을 본문에"}
    markdown = "**이명령을본문에** 쓰면; 그이명령을본문에도"
    assert respace_hangul(markdown, raw) == "**이명령을 본문에** 쓰면; 그이명령을본문에도"


def test_a_gap_under_a_fifth_of_the_type_is_no_word_space():
    assert spaced_words(_rawdict(("문서", 1.5), ("를", 0.0))) == {}


def test_the_text_layer_signal_counts_korean_by_syllables_so_spacing_it_loses_nothing():
    run_together = "\n".join(["".join(KOREAN)] * 25)  # the layer: one word a line
    spaced = "\n\n".join([" ".join(KOREAN)] * 25)  # the engine's reading
    signal = text_layer_signal(parse_page(spaced), run_together)
    assert signal is not None and signal.ok and signal.value == 1.0
    other = "\n\n".join(["다른 페이지의 전혀 다른 글자들이 여기에 있습니다"] * 25)
    signal = text_layer_signal(parse_page(other), run_together)
    assert signal is not None and not signal.ok
