"""Jobs whose engine no live worker serves: they say so while they wait, and fail after a
limit instead of staying queued forever.

Submission already refuses an engine that no worker serves; this covers the workers that
leave after a job was queued (a GPU host stopped, a worker crashed for good). The reaper
calls ``jobs_waiting_for_engines`` with the engines served now, every minute:

- a job with queued pages whose engine is not served gets ``waiting_for`` (the engine) and
  ``waiting_since``, which the jobs API and the UI show;
- a job whose engine is served again loses them;
- a job that has waited ``limit`` fails its queued pages with the reason, and ends.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, OuterRef, Subquery
from django.utils import timezone

from webapp.jobs.models import Job, Page
from webapp.jobs.services.page_lifecycle import job_finalize_if_complete

logger = logging.getLogger(__name__)


def jobs_waiting_for_engines(
    *, served: set[str] | None, limit: timedelta, now: datetime | None = None
) -> int:
    """Mark, clear and end the waits as described above; the number of jobs given up on.
    ``served`` is ``None`` when the workers could not be asked: then nothing changes."""
    if served is None:
        return 0
    now = now or timezone.now()
    active = Job.objects.filter(status__in=Job.ACTIVE)
    # Queued pages whose engine (the job's; for an ``auto`` job, ``local`` or the VLM engine
    # a page was escalated to) no live worker serves.
    stranded = Page.objects.filter(status=Page.Status.QUEUED, job__status__in=Job.ACTIVE).exclude(
        engine__in=served
    )
    active.exclude(waiting_for="").exclude(pk__in=stranded.values("job_id")).update(
        waiting_for="", waiting_since=None
    )
    marked = active.filter(pk__in=stranded.values("job_id"), waiting_for="").update(
        waiting_for=Subquery(stranded.filter(job_id=OuterRef("pk")).values("engine")[:1]),
        waiting_since=now,
    )
    if marked:
        logger.warning("%d jobs wait for an engine that no live worker serves", marked)
    overdue = active.exclude(waiting_for="").filter(waiting_since__lte=now - limit)
    return sum(
        _job_stop_waiting(job_id=job_id, engine=engine, limit=limit, now=now)
        for job_id, engine in overdue.values_list("pk", "waiting_for")
    )


def waiting_reason(*, engine: str, limit: timedelta) -> str:
    return (
        f"no worker served the engine {engine!r} for {int(limit.total_seconds())} s "
        f"(FOLIO_ENGINE_WAIT_LIMIT); start a worker for its queue (ocr.{engine}) and submit "
        "the document again"
    )


def _job_stop_waiting(*, job_id, engine: str, limit: timedelta, now: datetime) -> bool:
    reason = waiting_reason(engine=engine, limit=limit)
    with transaction.atomic():
        stopped = Page.objects.filter(job_id=job_id, status=Page.Status.QUEUED).update(
            status=Page.Status.FAILED, error=reason, finished_at=now
        )
        Job.objects.filter(pk=job_id).update(pages_failed=F("pages_failed") + stopped, error=reason)
        # Pages running now (if any) still land; the job ends when the last one is in.
        job_finalize_if_complete(job_id=job_id)
    logger.warning("job %s: %s", job_id, reason)
    return bool(stopped)
