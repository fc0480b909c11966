"""Reads the browser interface needs beyond the jobs and webhooks selectors."""

from __future__ import annotations

import logging
from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from model.engines.auto import with_auto
from model.engines.registry import engine_names
from webapp.core.workers import serving_engines
from webapp.jobs import selectors as job_selectors
from webapp.jobs.models import Job

logger = logging.getLogger(__name__)


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def jobs_for_list(
    *,
    owner,
    status: str = "",
    name: str = "",
    created_after: date | None = None,
    created_before: date | None = None,
) -> QuerySet[Job]:
    """The owner's jobs for the list page: dates are whole days, inclusive at both ends."""
    statuses: list[str] = list(Job.ACTIVE) if status == "active" else [status] if status else []
    jobs = job_selectors.jobs_filtered(
        owner=owner,
        statuses=statuses,
        created_after=_day_start(created_after) if created_after else None,
        created_before=_day_start(created_before + timedelta(days=1)) if created_before else None,
    )
    if name:
        jobs = jobs.filter(document__original_name__icontains=name)
    return jobs


def engines_available() -> tuple[list[str], str]:
    """The engines a job can be sent to now and a note for the person when there are none:
    the default engine is then still offered, and its jobs wait for a worker."""
    try:
        serving = serving_engines()
    except Exception:
        # The queue being down must not take the upload page with it.
        logger.warning("could not ask the workers which engines they serve", exc_info=True)
        serving = set()
    names = with_auto(name for name in engine_names() if name in serving)
    if names:
        return names, ""
    note = (
        "No worker is running right now. You can still upload: your jobs wait in the queue "
        "and start as soon as a worker is back."
    )
    return [settings.FOLIO_DEFAULT_ENGINE], note
