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
