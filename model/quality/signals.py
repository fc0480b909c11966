"""Deterministic quality signals for one transcribed page, and the ``needs_review`` verdict.

In the spirit of jina-ocr-v1's verifiable rewards: each signal is a check a program can make
without knowing the truth (tables that parse, LaTeX that balances, no runaway repetition, no
empty output for a page with ink, the OCR's own confidence, agreement with the PDF's text
layer, words that are words, formulas, column order). Each failing signal has a severity;
``model.quality.review`` turns them into the page's review score and ``needs_review``.

The output is parsed once (``model.quality.parsed``), the page measured once
(``model.quality.facts``), and what the engine reported beside its text read once
(``EngineReport``); every signal reads those three.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from model.engines.base import PageInput, PageResult
from model.quality import content_signals as content
from model.quality import form_signals as form
from model.quality import independent_signals as independent
from model.quality.facts import PageFacts, page_facts
from model.quality.page_lines import Line
from model.quality.parsed import ParsedPage, parse_page
from model.quality.review import DEFAULT_THRESHOLD, Signal, verdict

__all__ = [
    "EngineReport",
    "PageFacts",
    "Signal",
    "page_facts",
    "named_signals",
    "page_signals",
    "quality_report",
    "verdict",
]


@dataclass(frozen=True)
class EngineReport:
    """What the engine measured beside its text (``PageResult.extra``), for the signals."""

    ocr_confidence: float | None = None
    # The OCR's lines, upright, in image pixels, and the width they are measured against.
    ocr_lines: tuple[Line, ...] = ()
    ocr_width: float | None = None
    extraction_notes: list[str] | None = None
    unread_stretches: list[list[Any]] | None = None
    # How the text was obtained ("text-layer", "ocr", "vlm", ...).
    method: str = ""
    # Two readings of some lines compared (``model.engines.reading_agreement``).
    agreement: dict[str, Any] | None = None
    # Steps after the engine's reading that failed (the page kept its reading from before
    # each), and measurements for the signals that could not be made.
    failed_steps: tuple[Any, ...] = ()
    skipped_steps: tuple[str, ...] = ()

    @classmethod
    def from_result(cls, result: PageResult) -> EngineReport:
        extra = result.extra
        confidence = extra.get("ocr_confidence")
        return cls(
            ocr_confidence=float(confidence) if confidence is not None else None,
            ocr_lines=tuple(ocr_lines(extra.get("ocr_lines"))),
            ocr_width=extra.get("ocr_width"),
            extraction_notes=extra.get("extraction_notes"),
            unread_stretches=extra.get("unread_stretches"),
            method=result.method,
            agreement=extra.get("agreement"),
            failed_steps=tuple(extra.get("failed_steps") or ()),
            skipped_steps=tuple(extra.get("skipped_steps") or ()),
        )


def named_signals(
    parsed: ParsedPage, facts: PageFacts, report: EngineReport | None = None
) -> list[tuple[str, Callable[[], Signal | None]]]:
    """Every signal as a name and the call that judges it (None where it does not apply), so
    that each can be timed on its own (``bench/signal_each.py``). Lines and width come from
    the text layer, or, for pages the engine read by OCR, from the OCR's own lines."""
    report = report or EngineReport()
    ocr = list(report.ocr_lines)
    lines, width = (ocr, report.ocr_width) if ocr else (facts.lines, facts.width)
    skipped = [*report.skipped_steps, *facts.skipped]
    return [
        ("table", lambda: form.table_signal(parsed)),
        ("merged_cells", lambda: form.merged_cells_signal(parsed, facts.grids)),
        ("latex", lambda: form.latex_signal(parsed)),
        ("repetition", lambda: form.repetition_signal(parsed)),
        ("empty", lambda: form.empty_signal(parsed, facts.ink)),
        ("ocr_confidence", lambda: form.confidence_signal(report.ocr_confidence)),
        ("text_layer", lambda: form.text_layer_signal(parsed, facts.text_layer)),
        ("unreadable", lambda: content.unreadable_signal(parsed)),
        ("fragments", lambda: content.fragment_signal(parsed)),
        ("markup", lambda: content.markup_signal(parsed)),
        ("contents_table", lambda: content.contents_table_signal(parsed)),
        ("right_to_left", lambda: content.right_to_left_signal(parsed)),
        ("plausibility", lambda: content.plausibility_signal(parsed)),
        ("formula", lambda: content.formula_signal(parsed, facts.lines)),
        ("formula_text", lambda: content.formula_text_signal(parsed, facts.lines)),
        ("apostrophes", lambda: content.apostrophe_signal(parsed)),
        ("mirrored", lambda: content.mirrored_signal(ocr, report.ocr_width)),
        ("order", lambda: content.order_signal(parsed, lines, width, ocr=bool(ocr))),
        ("line_confidence", lambda: content.line_confidence_signal(ocr)),
        ("coverage", lambda: content.coverage_signal(report.unread_stretches)),
        ("extraction", lambda: form.extraction_signal(report.extraction_notes)),
        ("agreement", lambda: independent.agreement_signal(report.agreement)),
        ("ink", lambda: independent.ink_signal(parsed, facts.glyphs)),
        ("steps", lambda: independent.steps_signal(list(report.failed_steps), skipped)),
        ("math_prose", lambda: independent.math_prose_signal(parsed, facts.math_runs)),
        (
            "invisible_text",
            lambda: independent.invisible_text_signal(facts.invisible, report.method),
        ),
    ]


def page_signals(
    parsed: ParsedPage, facts: PageFacts, report: EngineReport | None = None
) -> list[Signal]:
    """Every signal that applies to the page."""
    judged = (judge() for _, judge in named_signals(parsed, facts, report))
    return [s for s in judged if s is not None]


def quality_report(
    page: PageInput, result: PageResult, threshold: float = DEFAULT_THRESHOLD
) -> dict[str, Any]:
    """The page's signals, review score and verdict, as stored in
    ``PageResult.extra["quality"]``."""
    parsed = parse_page(result.markdown)
    # The ruled grid is looked for only where an output table has cells to judge by it.
    facts = page_facts(page, find_grids=bool(parsed.tables_with_gaps))
    signals = page_signals(parsed, facts, EngineReport.from_result(result))
    return verdict(signals, threshold)


def ocr_lines(raw: list[Any] | None) -> list[Line]:
    """The engine's OCR lines, ``[x0, y0, x1, y1, confidence, text]`` in image pixels."""
    return [Line(x0, y0, x1, y1, text, confidence=conf) for x0, y0, x1, y1, conf, text in raw or []]
