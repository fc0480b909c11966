"""Readings kept on disk and replayed (model.quality.recorded): a replay gives the pipeline
the engine's own result, so the quality report computed from it is the one the service made;
a page that was never recorded is an error, never a silently skipped page. And a signal's
threshold chosen document by document without the document it judges
(model.quality.review_eval). Pure Python: run with ``pytest -p no:django``."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.engines.base import EngineError, EngineOptions, PageInput, PageResult
from model.pipeline import transcribe_page
from model.quality.recorded import NotRecorded, RecordingEngine, ReplayEngine
from model.quality.review_eval import (
    PageVerdict,
    confusion_with,
    flag_with,
    leave_one_document_out,
)

PAGE = PageInput(data=b"%PDF-1.4 not really a page", mime_type="image/png", page_number=1)


class _Scripted:
    """An engine that answers what it is told to and counts its calls."""

    name = "scripted"
    version = "1"
    max_pages_in_flight = 1

    def __init__(self, result: PageResult | None) -> None:
        self.result = result
        self.calls = 0

    def load(self) -> None:
        pass

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        self.calls += 1
        if self.result is None:
            raise EngineError("page 1 cannot be read: scripted refusal")
        return self.result


def _ocr_result() -> PageResult:
    lines = [[0.0, 10.0 * i, 300.0, 10.0 * i + 8, 0.6, f"line {i} read poorly"] for i in range(5)]
    return PageResult(
        markdown="line 0 read poorly",
        method="ocr",
        extra={"ocr_confidence": 0.6, "ocr_lines": lines, "ocr_width": 600.0, "layout": "big"},
    )


def test_a_replay_gives_the_signals_what_the_engine_gave(tmp_path: Path):
    recording = RecordingEngine(_Scripted(_ocr_result()), tmp_path)
    first = recording.transcribe(PAGE, EngineOptions())
    replayed = ReplayEngine(tmp_path).transcribe(PAGE, EngineOptions())
    assert replayed.markdown == first.markdown and replayed.method == "ocr"
    assert replayed.extra["ocr_lines"] == first.extra["ocr_lines"]
    assert "layout" not in replayed.extra  # only what the signals read is kept
    # The pipeline judges the replay as it judged the original reading.
    original = transcribe_page(_Scripted(_ocr_result()), PAGE, EngineOptions())
    again = transcribe_page(ReplayEngine(tmp_path), PAGE, EngineOptions())
    assert again.extra["quality"]["signals"] == original.extra["quality"]["signals"]
    assert again.extra["quality"]["score"] == original.extra["quality"]["score"] > 0


def test_a_page_never_recorded_fails_loudly(tmp_path: Path):
    RecordingEngine(_Scripted(_ocr_result()), tmp_path).transcribe(PAGE, EngineOptions())
    other = PageInput(data=PAGE.data, mime_type=PAGE.mime_type, page_number=2)
    with pytest.raises(NotRecorded):
        ReplayEngine(tmp_path).transcribe(other, EngineOptions())
    with pytest.raises(NotRecorded):  # other options are another reading
        ReplayEngine(tmp_path).transcribe(PAGE, EngineOptions(headers="keep"))


def test_a_refused_page_is_refused_again(tmp_path: Path):
    with pytest.raises(EngineError):
        RecordingEngine(_Scripted(None), tmp_path).transcribe(PAGE, EngineOptions())
    with pytest.raises(EngineError, match="scripted refusal"):
        ReplayEngine(tmp_path).transcribe(PAGE, EngineOptions())


# --- a threshold chosen on the other documents -------------------------------------------------


def _page(document: str, n: int, should: bool, share: float) -> PageVerdict:
    signals = {
        "line_confidence": {"ok": share <= 0.05, "value": share},
        "table": {"ok": True, "value": 0.0},
    }
    return PageVerdict(document, f"{document}#{n}", should, signals)


def _fires(value: float, threshold: float) -> bool:
    return value > threshold


def test_leave_one_document_out_judges_each_document_at_a_threshold_chosen_without_it():
    # Clean pages up to 0.12 of their text in low-confidence lines, failing ones from 0.3.
    pages = [
        _page("a", 1, False, 0.08),
        _page("a", 2, True, 0.40),
        _page("b", 1, False, 0.12),
        _page("b", 2, True, 0.30),
        _page("c", 1, False, 0.02),
        _page("c", 2, True, 0.35),
    ]
    candidates = [0.05, 0.1, 0.2, 0.3]
    assert confusion_with(pages, "line_confidence", lambda v: v > 0.05).false_flags == 2
    pooled, chosen = leave_one_document_out(pages, "line_confidence", candidates, _fires)
    # Without "b", 0.1 separates the rest; b's clean page at 0.12 is then a false flag that
    # an in-sample choice (0.2) would have hidden.
    assert chosen == {"a": 0.2, "b": 0.1, "c": 0.2}
    assert (pooled.caught, pooled.missed, pooled.false_flags, pooled.clean) == (3, 0, 1, 2)
    assert pooled.missed_pages == []


def test_another_failing_signal_still_flags_the_page():
    page = _page("a", 1, True, 0.0)
    page.signals["table"] = {"ok": False, "value": 1.0}
    assert flag_with(page, "line_confidence", lambda v: v > 0.5)
