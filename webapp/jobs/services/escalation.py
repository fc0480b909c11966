"""An ``auto`` job's pages (model.engines.auto): read by ``local``, sent on to a VLM engine
when their review score reaches FOLIO_AUTO_THRESHOLD, and saved with the reading kept.

The worker calls ``local_reading_done`` (or ``local_reading_failed``) after ``local`` read an
``auto`` job's page, and ``vlm_reading_done`` (or ``vlm_reading_failed``) after the VLM engine
read it again. An escalated page goes back to ``queued`` on the VLM engine's queue with a new
task id (``Page.engine``), holding its local reading (``Page.escalation["local"]``): it is
claimed once like any page, cancelled with its job (keeping its local reading), counted in the
job's tokens once both readings are in, and cached under the engine whose reading it keeps.
"""

from __future__ import annotations

import logging
import uuid
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from model.engines.auto import FIRST_READER, best_vlm, escalates, keep_reading
from model.engines.base import PageResult
from webapp.core.workers import served_engines_or_none
from webapp.jobs.models import Job, Page
from webapp.jobs.services.page_lifecycle import (
    Outcome,
    PageClaim,
    escalated_pages_settle,
    page_complete,
    page_fail,
)
from webapp.jobs.services.readings import reading_back, reading_kept_aside
from webapp.jobs.services.sending import pages_send

logger = logging.getLogger(__name__)


def engines_served_now() -> set[str] | None:
    """The engines live workers serve now (``None``: the broker cannot be asked). The one
    place ``auto`` asks."""
    return served_engines_or_none()


def auto_vlm_engine() -> str | None:
    """The best VLM engine a live worker serves now, or ``None``."""
    return best_vlm(engines_served_now() or ())


def local_reading_done(*, claim: PageClaim, result: PageResult, engine_version: str) -> str:
    """``local``'s reading of an ``auto`` job's page: saved as it is (its score is under the
    threshold, or nothing can read it again), or sent on to the best VLM engine served."""
    quality = result.extra.get("quality") or {}
    score = quality.get("score")
    threshold = settings.FOLIO_AUTO_THRESHOLD
    record: dict[str, Any] = {"escalated": False, "score": score, "threshold": threshold}
    if not escalates(score, threshold):
        outcome = Outcome(engine=claim.engine, engine_version=engine_version, record=record)
        page_complete(claim=claim, result=result, engine_version=engine_version, outcome=outcome)
        return "done"
    reasons = list(quality.get("reasons") or [])
    vlm = auto_vlm_engine()
    why = _not_escalated_why(claim, result, vlm)
    if why:
        outcome = Outcome(
            engine=claim.engine,
            engine_version=engine_version,
            record={**record, "reasons": reasons, "why": why},
            left_local=True,
        )
        page_complete(claim=claim, result=result, engine_version=engine_version, outcome=outcome)
        return "done"
    assert vlm is not None
    escalated = page_escalate(
        claim=claim,
        engine=vlm,
        record={**record, "escalated": True, "engine": vlm, "reasons": reasons},
        local=reading_kept_aside(result, engine_version=engine_version),
    )
    return "escalated" if escalated else "skipped"


def local_reading_failed(*, claim: PageClaim, error: str) -> str:
    """``local`` could not read an ``auto`` job's page: a VLM engine reads it, where one is
    served; else the page fails as it would have."""
    vlm = auto_vlm_engine()
    if vlm is None:
        page_fail(claim=claim, error=f"{error} (no VLM engine is served to read it instead)")
        return "failed"
    record = {
        "escalated": True,
        "engine": vlm,
        "score": None,
        "threshold": settings.FOLIO_AUTO_THRESHOLD,
        "reasons": [f"the local engine could not read the page: {error}"],
    }
    return "escalated" if page_escalate(claim=claim, engine=vlm, record=record) else "skipped"


def _not_escalated_why(claim: PageClaim, result: PageResult, vlm: str | None) -> str:
    if vlm is None:
        return "no VLM engine is served now: the page stays as the local engine read it"
    budget = claim.options.get("token_budget")
    if budget is not None:
        job = Job.objects.only("input_tokens", "output_tokens").get(pk=claim.job_id)
        spent = job.input_tokens + job.output_tokens + result.input_tokens + result.output_tokens
        if spent >= budget:
            return f"the job's token budget of {budget} is spent"
    return ""


def page_escalate(
    *, claim: PageClaim, engine: str, record: dict[str, Any], local: dict[str, Any] | None = None
) -> bool:
    """Send the claimed page to ``engine``'s queue with a new task id, holding ``local`` (its
    local reading, or ``None`` where the local engine failed); ``False`` if this claim was
    superseded. Like a hand-over, the move is not a failed attempt."""
    new_task_id = uuid.uuid4()
    with transaction.atomic():
        moved = Page.objects.filter(
            pk=claim.page_id, status=Page.Status.RUNNING, attempts=claim.attempts
        ).update(
            status=Page.Status.QUEUED,
            task_id=new_task_id,
            engine=engine,
            escalation={**record, "local": local},
            attempts=F("attempts") - 1,
            enqueued_at=timezone.now(),
            sent_at=None,
            decode_plain=False,
        )
        if moved:
            transaction.on_commit(
                partial(pages_send, engine=engine, pages=[(claim.page_id, new_task_id)])
            )
    if moved:
        logger.info("page %s of job %s escalated to %s", claim.number, claim.job_id, engine)
    return bool(moved)


def vlm_reading_done(*, claim: PageClaim, result: PageResult, engine_version: str) -> bool:
    """The VLM engine's reading of an escalated page: the page is saved with the reading
    ``keep_reading`` keeps, and both readings' usage."""
    record = dict(claim.escalation)
    kept_aside = record.pop("local", None)
    local = reading_back(kept_aside) if kept_aside else None
    local_quality = (local.extra.get("quality") if local else None) or {}
    vlm_quality = result.extra.get("quality") or {}
    choice = keep_reading(
        local_markdown=local.markdown if local else None,
        local_quality=local_quality,
        vlm_markdown=result.markdown,
        vlm_quality=vlm_quality,
    )
    record.update(
        kept=choice.kept,
        why=choice.why,
        vlm_score=vlm_quality.get("score"),
        vlm_seconds=round(result.engine_seconds, 3),
    )
    if choice.kept == "vlm" or local is None or kept_aside is None:
        kept, other = result, local
        engine, version = claim.engine, engine_version
    else:
        kept, other = local, result
        engine, version = FIRST_READER, str(kept_aside.get("engine_version") or "")
    outcome = Outcome(
        engine=engine,
        engine_version=version,
        record=record,
        other_input_tokens=other.input_tokens if other else 0,
        other_output_tokens=other.output_tokens if other else 0,
        other_engine_seconds=other.engine_seconds if other else 0.0,
        vlm_seconds=result.engine_seconds,
        escalated=True,
    )
    return page_complete(claim=claim, result=kept, engine_version=version, outcome=outcome)


def vlm_reading_failed(*, claim: PageClaim, error: str) -> bool:
    """The VLM engine could not read an escalated page: it keeps its local reading, saying
    so; a page the local engine could not read either fails with both reasons."""
    record = dict(claim.escalation)
    kept_aside = record.pop("local", None)
    if not kept_aside:
        reasons = "; ".join(record.get("reasons") or [])
        return page_fail(claim=claim, error=f"{error} (and before it: {reasons})")
    outcome = Outcome(
        engine=FIRST_READER,
        engine_version=str(kept_aside.get("engine_version") or ""),
        record={**record, "kept": "local", "why": f"the VLM engine failed: {error}"},
        escalated=True,
    )
    result = reading_back(kept_aside)
    return page_complete(
        claim=claim, result=result, engine_version=outcome.engine_version, outcome=outcome
    )


def escalated_pages_settle_unserved(*, served: set[str] | None) -> int:
    """Escalated pages waiting for a VLM engine that no live worker serves any more keep their
    local reading (the reaper calls this); ``served`` ``None``: nobody can tell, nothing moves."""
    if served is None:
        return 0
    waiting = Page.objects.filter(job__status__in=Job.ACTIVE, escalation__has_key="local")
    return escalated_pages_settle(
        pages=waiting.exclude(engine__in=served),
        why="no worker serves the VLM engine any more: the page stays as the local engine read it",
    )
