"""From a page's signals to its review score and verdict.

Each failing signal carries a severity in (0, 1]: how sure it is that a person would find the
page wrong (0.5 just past its threshold, up to 1.0 for an empty page or a runaway loop). The
page's review score is the chance that at least one of them is right, taking them as
independent: ``1 - prod(1 - severity)``. ``needs_review`` is a threshold on the score, set per
server (``FOLIO_REVIEW_THRESHOLD``) and per request; the default flags a page on any one
failing signal (every failing signal has a severity of at least 0.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Chosen with whole documents held out (``bench/review.py --held-out``): each document of the
# real pages, their scans and the new pages' development part judged at the score threshold that
# did best (recall minus false-flag rate) on all the others, from 0.5 to 1.0; 0.5 was chosen for
# every one. docs/QUALITY.md gives the held-out figures.
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class Signal:
    name: str
    ok: bool
    detail: str = ""
    value: float | None = None
    # How sure a failing signal is that the page is wrong; 0 for a passing one.
    severity: float = 0.0

    @property
    def weight(self) -> float:
        if self.ok:
            return 0.0
        return self.severity or 1.0


def review_score(signals: list[Signal]) -> float:
    passing = 1.0
    for signal in signals:
        passing *= 1.0 - min(max(signal.weight, 0.0), 1.0)
    return round(1.0 - passing, 3)


def verdict(signals: list[Signal], threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """The quality report stored with a page: its score, the verdict at ``threshold``, the
    reasons (failing signals, most severe first) and every signal's value."""
    failing = sorted((s for s in signals if not s.ok), key=lambda s: -s.weight)
    score = review_score(signals)
    return {
        "score": score,
        "needs_review": needs_review(score, threshold),
        "reasons": [f"{s.name}: {s.detail}" if s.detail else s.name for s in failing],
        "signals": {
            s.name: {"ok": s.ok, "detail": s.detail, "value": s.value, "severity": s.weight}
            for s in signals
        },
    }


def severity_below(value: float, threshold: float) -> float:
    """The severity of a share under its threshold: 0.5 at the threshold, 1.0 at zero."""
    if value >= threshold:
        return 0.0
    return round(0.5 + 0.5 * (threshold - value) / threshold, 3)


def needs_review(score: float, threshold: float = DEFAULT_THRESHOLD) -> bool:
    return score > 0 and score >= threshold
