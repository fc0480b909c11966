"""Sending pages' messages to the workers, and noting that they went out: for a new job
(submission), a page handed over to its engine's no-speculation queue (page lifecycle) and
the pages the reaper sends again (maintenance). Its own module so that none of those
imports another to reach it."""

from __future__ import annotations

import uuid

from django.utils import timezone

from webapp.jobs.models import Page
from webapp.jobs.queueing import pages_enqueue


def pages_send(*, engine: str, pages: list[tuple[int, uuid.UUID]], plain: bool = False) -> None:
    """Send the pages' messages and note that they went out; pages whose send failed keep
    ``sent_at`` empty, and the reaper sends them once the broker is back. ``plain``: to the
    engine's no-speculation queue."""
    if pages_enqueue(engine=engine, pages=pages, plain=plain):
        Page.objects.filter(pk__in=[page_id for page_id, _ in pages], sent_at__isnull=True).update(
            sent_at=timezone.now()
        )
