"""The review flag measured as a classifier.

A page *should be flagged* when any of its tests fails: a person reading it would find
something wrong. Recall is the share of those pages the flag caught; the false-flag rate is
the share of clean pages it flagged anyway. The same two figures are given for each signal on
its own (a signal "fires" on a page when it failed there), so one can see which signal finds
which failures and which one costs false flags.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from model.quality.harness import Report
from model.quality.review import DEFAULT_THRESHOLD, needs_review


@dataclass
class Confusion:
    caught: int = 0  # should flag, flagged
    missed: int = 0  # should flag, not flagged
    false_flags: int = 0  # clean, flagged
    clean: int = 0  # clean, not flagged
    missed_pages: list[str] = field(default_factory=list)

    def add(self, should_flag: bool, flagged: bool, page: str) -> None:
        if should_flag and flagged:
            self.caught += 1
        elif should_flag:
            self.missed += 1
            self.missed_pages.append(page)
        elif flagged:
            self.false_flags += 1
        else:
            self.clean += 1

    @property
    def recall(self) -> float | None:
        total = self.caught + self.missed
        return self.caught / total if total else None

    @property
    def false_flag_rate(self) -> float | None:
        total = self.false_flags + self.clean
        return self.false_flags / total if total else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "recall": self.recall,
            "false_flag_rate": self.false_flag_rate,
            "caught": self.caught,
            "missed": self.missed,
            "false_flags": self.false_flags,
            "clean": self.clean,
            "missed_pages": self.missed_pages,
        }


@dataclass
class ReviewReport:
    flag: Confusion
    per_signal: dict[str, Confusion]

    def as_dict(self) -> dict[str, Any]:
        return {
            "flag": self.flag.as_dict(),
            "per_signal": {name: c.as_dict() for name, c in sorted(self.per_signal.items())},
        }


def failing_pages(report: Report) -> set[tuple[str, int]]:
    return {(o.test.pdf, o.test.page) for o in report.outcomes if not o.passed}


def evaluate_flag(report: Report, threshold: float = DEFAULT_THRESHOLD) -> ReviewReport:
    """The flag at ``threshold`` (on each page's stored review score) against the tests."""
    should = failing_pages(report)
    tested = {(o.test.pdf, o.test.page) for o in report.outcomes}
    flag = Confusion()
    per_signal: dict[str, Confusion] = defaultdict(Confusion)
    for key in sorted(tested):
        run = report.pages.get(key)
        if run is None or run.error:
            continue  # a page the engine refused fails visibly; no flag is needed for it
        quality = run.quality
        name = f"{key[0]}#{key[1]}"
        flagged = needs_review(float(quality.get("score", 0.0)), threshold)
        flag.add(key in should, flagged, name)
        for signal, values in quality.get("signals", {}).items():
            per_signal[signal].add(key in should, not values.get("ok", True), name)
    return ReviewReport(flag, dict(per_signal))


def rate(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f} %"


# --- choosing a signal's threshold without judging it on the pages it was chosen on -------------


@dataclass(frozen=True)
class PageVerdict:
    """One page as the flag's evaluation sees it: its document (a scan belongs to the document
    it was made from), whether a test failed on it, and its signals as reported."""

    document: str
    page: str
    should_flag: bool
    signals: dict[str, dict[str, Any]]
    # The page's review score as the service computed it (its signals at the code's settings).
    score: float = 0.0


def page_verdicts(report: Report, document: Any = None) -> list[PageVerdict]:
    """The tested pages of a report (refused pages left out, as in ``evaluate_flag``);
    ``document`` maps a page's PDF to its document (the PDF's own name by default)."""
    should = failing_pages(report)
    found = []
    for key in sorted({(o.test.pdf, o.test.page) for o in report.outcomes}):
        run = report.pages.get(key)
        if run is None or run.error:
            continue
        name = document(key[0]) if document else key[0]
        signals = run.quality.get("signals", {})
        score = float(run.quality.get("score") or 0.0)
        found.append(PageVerdict(name, f"{key[0]}#{key[1]}", key in should, signals, score))
    return found


def flag_with(page: PageVerdict, signal: str, fires: Any) -> bool:
    """The page's flag at the default threshold (any failing signal flags it) with ``signal``
    judged by ``fires(value)`` instead of its own threshold."""
    for name, values in page.signals.items():
        if name == signal:
            value = values.get("value")
            if value is not None and fires(value):
                return True
        elif not values.get("ok", True):
            return True
    return False


def confusion_with(pages: list[PageVerdict], signal: str, fires: Any) -> Confusion:
    confusion = Confusion()
    for page in pages:
        confusion.add(page.should_flag, flag_with(page, signal, fires), page.page)
    return confusion


def _youden(c: Confusion) -> float:
    return (c.recall or 0.0) - (c.false_flag_rate or 0.0)


def best_threshold(
    pages: list[PageVerdict], signal: str, candidates: list[float], fires: Any
) -> float:
    """The candidate whose flag has the highest recall minus false-flag rate on ``pages``;
    ties go to the candidate with fewer false flags, then to the one listed first."""
    scored = []
    for index, threshold in enumerate(candidates):
        c = confusion_with(pages, signal, lambda value, t=threshold: fires(value, t))
        scored.append((-_youden(c), c.false_flags, index, threshold))
    return min(scored)[3]


def leave_one_document_out(
    pages: list[PageVerdict], signal: str, candidates: list[float], fires: Any
) -> tuple[Confusion, dict[str, float]]:
    """Each document's pages judged at the threshold chosen on all the other documents: what
    the threshold would do on documents it was not tuned on. ``fires(value, threshold)`` says
    whether the signal fails. Returns the pooled confusion and each document's threshold."""
    pooled = Confusion()
    chosen: dict[str, float] = {}
    for document in sorted({p.document for p in pages}):
        held_out = [p for p in pages if p.document == document]
        rest = [p for p in pages if p.document != document]
        threshold = best_threshold(rest, signal, candidates, fires)
        chosen[document] = threshold
        for page in held_out:
            flagged = flag_with(page, signal, lambda value, t=threshold: fires(value, t))
            pooled.add(page.should_flag, flagged, page.page)
    return pooled, chosen
