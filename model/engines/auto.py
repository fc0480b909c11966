"""The ``auto`` engine's rules: which pages go to a VLM, which VLM, and which reading is kept.

``auto`` is not an engine of its own. Every page of an ``auto`` job is read by ``local`` (the
CPU engine); a page whose review score (``model.quality.review``) reaches the auto threshold
(``FOLIO_AUTO_THRESHOLD``), or that ``local`` could not read at all, is read again by the best
VLM engine a live worker serves, and one of the two readings is kept (``keep_reading``). With
no VLM served, ``auto`` is ``local``, and each page that would have gone says so. The service
side (claims, queues, counters, the cache) is ``webapp/jobs/services/escalation.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from model.quality import review

AUTO = "auto"
# The engine that reads every page of an ``auto`` job first.
FIRST_READER = "local"
# The VLM engines, best first: jina-ocr-v1 on a GPU worker; the same kind of checkpoint
# through PyTorch; any OpenAI-compatible endpoint, whose model Folio does not know.
VLM_PREFERENCE = ("jina-ocr-v1", "transformers", "openai")
# FOLIO_AUTO_THRESHOLD's default: the review score's threshold chosen with whole documents held
# out (``bench/review.py --held-out``, ``model.quality.review_choice``): on the real pages, their
# scans and the new pages' development part, every document's choice, made on all the others,
# was 0.5 (any one failing signal), and the held-aside part, judged at it, was never chosen on.
# Above it fewer failing pages go (docs/QUALITY.md, "`auto` on the shared corpus").
DEFAULT_THRESHOLD = review.DEFAULT_THRESHOLD
# A reading with fewer letters and digits than this says nothing (as the ``empty`` signal).
EMPTY_READING = 10


def reading_engine(job_engine: str) -> str:
    """The engine whose queue a new page of a job with ``job_engine`` goes to."""
    return FIRST_READER if job_engine == AUTO else job_engine


def with_auto(served: Iterable[str]) -> list[str]:
    """The engines a job can ask for while these are served: each of them, and ``auto``
    wherever ``local`` is (with no VLM engine served, ``auto`` reads as ``local`` does)."""
    names = set(served)
    return sorted(names | {AUTO} if FIRST_READER in names else names)


def best_vlm(served: Iterable[str]) -> str | None:
    """The best VLM engine among those ``served`` now, or None."""
    available = set(served)
    return next((name for name in VLM_PREFERENCE if name in available), None)


def escalates(score: float | None, threshold: float) -> bool:
    """Whether a page whose local reading scored ``score`` goes to a VLM."""
    return score is not None and score > 0 and score >= threshold


@dataclass(frozen=True)
class Choice:
    kept: str  # "vlm" or "local"
    why: str


def keep_reading(
    *,
    local_markdown: str | None,
    local_quality: dict[str, Any],
    vlm_markdown: str,
    vlm_quality: dict[str, Any],
) -> Choice:
    """Which of a page's two readings to keep. The VLM's, unless:

    1. it is empty (fewer than ten letters and digits) where the local reading is not;
    2. it ends in a runaway repetition (its ``repetition`` signal failed);
    3. its review score is higher than the local reading's: its own signals (tables that do
       not parse, words that are no words, LaTeX that does not balance, text the page's text
       layer does not hold) doubt it more than the local reading's doubt that.

    Ties go to the VLM, the stronger reader: the local reading was sent on because its score
    passed the threshold. A page ``local`` could not read keeps the VLM's reading, whatever
    it is (there is nothing else)."""
    if local_markdown is None:
        return Choice("vlm", "the local engine could not read the page")
    if _letters(vlm_markdown) < EMPTY_READING <= _letters(local_markdown):
        return Choice("local", "the VLM's reading is empty")
    repetition = (vlm_quality.get("signals") or {}).get("repetition") or {}
    if repetition.get("ok") is False:
        return Choice("local", "the VLM's reading ends in a runaway repetition")
    local_score = float(local_quality.get("score") or 0.0)
    vlm_score = float(vlm_quality.get("score") or 0.0)
    if vlm_score > local_score:
        return Choice(
            "local",
            f"the VLM's reading scores worse ({vlm_score:.2f} against {local_score:.2f})",
        )
    return Choice("vlm", f"the VLM's reading scores {vlm_score:.2f} (local {local_score:.2f})")


def _letters(markdown: str) -> int:
    return sum(1 for ch in markdown if ch.isalnum())
