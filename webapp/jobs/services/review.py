"""A page's review verdict at its job's threshold.

The engine side scores every page (``model.quality.review``) and judges it at the default
threshold; the service decides ``needs_review`` at the threshold the job asked for, or the
server's, so that a request can be stricter or laxer without a new reading.
"""

from __future__ import annotations

from model.quality.review import needs_review
from webapp.jobs.services.options import JobOptions


def review_judged(quality: dict, options: JobOptions) -> dict:
    """The page's quality report with ``needs_review`` decided at the job's threshold (the
    engine side judged it at the default one). Reports without a score (stored before scores
    existed) keep their verdict. A page on which a step failed (``failed_steps``: it kept its
    reading from before that step) needs review at any threshold."""
    if "score" not in quality:
        return {**quality, "needs_review": bool(quality.get("needs_review"))}
    threshold = options.review_threshold_or_default()
    failed_step = bool(quality.get("failed_steps"))
    return {
        **quality,
        "threshold": threshold,
        "needs_review": failed_step or needs_review(float(quality["score"]), threshold),
    }
