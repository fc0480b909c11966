"""Running an engine over a corpus of PDFs and scoring its pages with JSONL tests."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.documents import PDF
from model.engines.base import Engine, EngineError, EngineOptions, PageInput
from model.pipeline import transcribe_page
from model.quality.checks import Outcome, PageTest, score
from model.quality.stats import Rate, wilson

logger = logging.getLogger(__name__)


@dataclass
class PageRun:
    pdf: str
    page: int
    markdown: str
    seconds: float
    method: str = ""
    error: str = ""
    quality: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    outcomes: list[Outcome]
    pages: dict[tuple[str, int], PageRun]

    def by(self, key: Callable[[PageTest], str]) -> dict[str, Rate]:
        groups: dict[str, list[bool]] = defaultdict(list)
        for outcome in self.outcomes:
            groups[key(outcome.test)].append(outcome.passed)
        return {name: wilson(sum(v), len(v)) for name, v in sorted(groups.items())}

    def per_type(self) -> dict[str, Rate]:
        return self.by(lambda test: test.type)

    def per_category(self) -> dict[str, Rate]:
        return self.by(lambda test: test.category or "-")

    def overall(self) -> Rate:
        return wilson(sum(o.passed for o in self.outcomes), len(self.outcomes))

    def macro(self) -> float:
        """The mean of the per-type rates, as olmOCR-Bench reports its overall score: a type
        with many tests does not drown the others."""
        rates = self.per_type()
        return sum(r.value for r in rates.values()) / len(rates) if rates else 0.0

    def seconds_per_page(self) -> float:
        runs = list(self.pages.values())
        return sum(r.seconds for r in runs) / len(runs) if runs else 0.0

    def pages_flagged(self) -> int:
        return sum(1 for r in self.pages.values() if r.quality.get("needs_review"))


def transcribe_pages(
    engine: Engine,
    options: EngineOptions,
    pdf_root: Path,
    pages: Iterable[tuple[str, int]],
) -> dict[tuple[str, int], PageRun]:
    runs: dict[tuple[str, int], PageRun] = {}
    for pdf, number in sorted(set(pages)):
        data = (pdf_root / pdf).read_bytes()
        started = time.perf_counter()
        try:
            result = transcribe_page(
                engine, PageInput(data=data, mime_type=PDF, page_number=number), options
            )
        except EngineError as exc:
            logger.warning("%s page %d: %s", pdf, number, exc)
            runs[(pdf, number)] = PageRun(
                pdf, number, "", time.perf_counter() - started, "", str(exc)
            )
            continue
        runs[(pdf, number)] = PageRun(
            pdf,
            number,
            result.markdown,
            time.perf_counter() - started,
            result.method,
            quality=result.extra.get("quality", {}),
        )
    return runs


def evaluate(
    engine: Engine, options: EngineOptions, pdf_root: Path, tests: list[PageTest]
) -> Report:
    runs = transcribe_pages(engine, options, pdf_root, ((t.pdf, t.page) for t in tests))
    return score_runs(runs, tests)


def score_runs(runs: dict[tuple[str, int], PageRun], tests: list[PageTest]) -> Report:
    outcomes = []
    for test in tests:
        run = runs.get((test.pdf, test.page))
        if run is None or run.error:
            outcomes.append(Outcome(test, False, run.error if run else "page not transcribed"))
            continue
        outcomes.append(score(test, run.markdown))
    return Report(outcomes=outcomes, pages=runs)
