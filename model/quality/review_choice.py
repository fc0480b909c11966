"""The review flag's thresholds and signals chosen with whole documents held out, and judged
only on documents no choice was made on.

A *choice* is a threshold for each signal whose threshold is a number (``TUNABLE``) and the
set of signals left out of the flag altogether (a weight of 0: a signal that, on the pages it
is chosen on, costs more false flags than it catches failures). It is made on some documents'
pages by coordinate ascent from the thresholds in the code: each tunable signal in turn takes
the candidate that does best with the others as they are, then each signal is left out if the
flag does better without it; twice over. "Best" is the highest recall minus false-flag rate
(Youden's J); ties keep the code's own setting, then the candidate with fewer false flags.

``leave_one_document_out`` judges each document's pages (a page and its scans are one
document) by the choice made on all the other documents, and pools the verdicts: a figure
measured only where no choice looked. ``judged_by`` applies one choice, made on one part, to
another part (a fixed split: the held-aside pages are judged by what was chosen on the rest).

The flag here is the service's at its default review threshold: any failing signal flags the
page (every failing signal's severity is at least 0.5, ``model.quality.review``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from model.quality import content_signals, form_signals, independent_signals, plausibility
from model.quality.review import needs_review
from model.quality.review_eval import Confusion, PageVerdict


def _over(value: float, threshold: float) -> bool:
    return value > threshold


def _under(value: float, threshold: float) -> bool:
    return value < threshold


@dataclass(frozen=True)
class Tunable:
    """A signal whose threshold can be chosen: the code's value, the candidates tried, and
    when the signal fails at a threshold (its reported value against it)."""

    default: float
    candidates: tuple[float, ...]
    fires: Callable[[float, float], bool]


TUNABLE: dict[str, Tunable] = {
    "line_confidence": Tunable(
        content_signals.MAX_LOW_SHARE,
        (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5),
        _over,
    ),
    "coverage": Tunable(
        content_signals.MAX_UNREAD_STRETCH, (0.3, 0.5, 0.6, 0.75, 1.0, 1.5, 2.0), _over
    ),
    "agreement": Tunable(
        independent_signals.MIN_AGREEMENT, (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95), _under
    ),
    "ink": Tunable(
        independent_signals.MIN_CHARS_PER_GLYPH, (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5), _under
    ),
    "ocr_confidence": Tunable(
        form_signals.MIN_OCR_CONFIDENCE, (0.7, 0.75, 0.8, 0.85, 0.9, 0.95), _under
    ),
    "plausibility": Tunable(plausibility.MIN_KNOWN_SHARE, (0.4, 0.5, 0.6, 0.7, 0.8), _under),
    "text_layer": Tunable(
        form_signals.MIN_TEXT_LAYER_RECALL, (0.4, 0.5, 0.6, 0.7, 0.8, 0.9), _under
    ),
}


@dataclass(frozen=True)
class FlagChoice:
    """Thresholds for the tunable signals (the code's where not named) and signals left out."""

    thresholds: dict[str, float] = field(default_factory=dict)
    off: frozenset[str] = frozenset()

    def threshold(self, signal: str) -> float:
        return self.thresholds.get(signal, TUNABLE[signal].default)

    def describe(self) -> str:
        changed = {
            name: value
            for name, value in sorted(self.thresholds.items())
            if value != TUNABLE[name].default
        }
        parts = [f"{name} {value}" for name, value in changed.items()]
        if self.off:
            parts.append("off: " + ", ".join(sorted(self.off)))
        return "; ".join(parts) or "the code's settings"


def signal_fires(page: PageVerdict, signal: str, choice: FlagChoice) -> bool:
    values = page.signals.get(signal)
    if values is None or signal in choice.off:
        return False
    if signal in TUNABLE:
        value = values.get("value")
        if value is None:
            return not values.get("ok", True)
        return TUNABLE[signal].fires(float(value), choice.threshold(signal))
    return not values.get("ok", True)


def flagged(page: PageVerdict, choice: FlagChoice) -> bool:
    return any(signal_fires(page, signal, choice) for signal in page.signals)


def confusion(pages: list[PageVerdict], choice: FlagChoice) -> Confusion:
    found = Confusion()
    for page in pages:
        found.add(page.should_flag, flagged(page, choice), page.page)
    return found


def _merit(c: Confusion) -> tuple[float, int]:
    return ((c.recall or 0.0) - (c.false_flag_rate or 0.0), -c.false_flags)


def choose(pages: list[PageVerdict], rounds: int = 2, *, leave_out: bool = True) -> FlagChoice:
    """The choice that does best on ``pages`` (see the module's docstring); with ``leave_out``
    false, thresholds only (every signal counts)."""
    choice = FlagChoice()
    signals = sorted({name for page in pages for name in page.signals})
    for _ in range(rounds):
        for name in TUNABLE:
            best, best_merit = choice, _merit(confusion(pages, choice))
            for candidate in TUNABLE[name].candidates:
                trial = FlagChoice({**choice.thresholds, name: candidate}, choice.off)
                merit = _merit(confusion(pages, trial))
                if merit > best_merit:
                    best, best_merit = trial, merit
            choice = best
        for name in signals if leave_out else ():
            toggled = choice.off ^ {name}
            trial = FlagChoice(choice.thresholds, frozenset(toggled))
            if _merit(confusion(pages, trial)) > _merit(confusion(pages, choice)):
                choice = trial
    return choice


def leave_one_document_out(
    pages: list[PageVerdict],
    judged: Callable[[PageVerdict], bool] | None = None,
    *,
    leave_out: bool = True,
) -> tuple[Confusion, dict[str, Confusion], dict[str, FlagChoice]]:
    """Each document judged by the choice made on every other document. ``judged`` picks the
    pages whose verdicts are reported (all by default); every page helps choose for the
    others. Returns the pooled flag, each signal alone (its threshold as chosen without the
    document), and the choice each document was judged by."""
    pooled = Confusion()
    alone: dict[str, Confusion] = {}
    chosen: dict[str, FlagChoice] = {}
    for document in sorted({p.document for p in pages}):
        held = [p for p in pages if p.document == document and (judged is None or judged(p))]
        if not held:
            continue
        choice = choose([p for p in pages if p.document != document], leave_out=leave_out)
        chosen[document] = choice
        _judge(held, choice, pooled, alone)
    return pooled, alone, chosen


def judged_by(
    pages: list[PageVerdict], choice: FlagChoice
) -> tuple[Confusion, dict[str, Confusion]]:
    """``pages`` judged by a choice made elsewhere: the flag, and each signal alone."""
    pooled = Confusion()
    alone: dict[str, Confusion] = {}
    _judge(pages, choice, pooled, alone)
    return pooled, alone


# --- the review score's threshold -------------------------------------------------------------

# The score thresholds tried (``FOLIO_REVIEW_THRESHOLD``, ``FOLIO_AUTO_THRESHOLD``): 0.5 flags a
# page on any one failing signal; above it, only the more severe ones or several together.
SCORE_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9, 1.0)


def score_confusion(pages: list[PageVerdict], threshold: float) -> Confusion:
    found = Confusion()
    for page in pages:
        found.add(page.should_flag, needs_review(page.score, threshold), page.page)
    return found


def choose_score_threshold(pages: list[PageVerdict]) -> float:
    """The score threshold that does best on ``pages`` (Youden's J, then fewer false flags,
    then the lowest: the one that sends more pages to a person or a VLM)."""
    return max(
        SCORE_THRESHOLDS,
        key=lambda t: (*_merit(score_confusion(pages, t)), -t),
    )


def score_threshold_held_out(
    pages: list[PageVerdict], judged: Callable[[PageVerdict], bool] | None = None
) -> tuple[Confusion, dict[str, float]]:
    """Each document judged at the score threshold chosen on every other document."""
    pooled = Confusion()
    chosen: dict[str, float] = {}
    for document in sorted({p.document for p in pages}):
        held = [p for p in pages if p.document == document and (judged is None or judged(p))]
        if not held:
            continue
        threshold = choose_score_threshold([p for p in pages if p.document != document])
        chosen[document] = threshold
        for page in held:
            pooled.add(page.should_flag, needs_review(page.score, threshold), page.page)
    return pooled, chosen


def _judge(
    pages: list[PageVerdict],
    choice: FlagChoice,
    pooled: Confusion,
    alone: dict[str, Confusion],
) -> None:
    for page in pages:
        pooled.add(page.should_flag, flagged(page, choice), page.page)
        for signal in page.signals:
            fires = signal_fires(page, signal, FlagChoice(choice.thresholds))
            alone.setdefault(signal, Confusion()).add(page.should_flag, fires, page.page)
