"""Sending pages' messages to the workers, and noting that they went out: for a new job
(submission), a page handed over to its engine's no-speculation queue (page lifecycle) and
the pages the reaper sends again (maintenance). Its own module so that none of those
imports another to reach it."""

from __future__ import annotations

import logging
import threading
import uuid

from django.utils import timezone

from webapp.jobs.models import Page
from webapp.jobs.queueing import pages_enqueue

logger = logging.getLogger(__name__)


def pages_send(*, engine: str, pages: list[tuple[int, uuid.UUID]], plain: bool = False) -> None:
    """Send the pages' messages and note that they went out; pages whose send failed keep
    ``sent_at`` empty, and the reaper sends them once the broker is back. ``plain``: to the
    engine's no-speculation queue."""
    if pages_enqueue(engine=engine, pages=pages, plain=plain):
        Page.objects.filter(pk__in=[page_id for page_id, _ in pages], sent_at__isnull=True).update(
            sent_at=timezone.now()
        )


# Messages a submission sends before it answers; a bigger job's others go out from a thread
# beside the request, in batches (one message is a broker round trip: 2,000 of them held a
# 2,000-page submission's answer for most of a minute).
SEND_IN_REQUEST = 100
SEND_BATCH = 500


def pages_send_soon(*, engine: str, pages: list[tuple[int, uuid.UUID]]) -> None:
    """Send a new job's first pages now and the rest from a background thread. Should this
    process stop before they are out, the reaper sends them: a page with no ``sent_at`` is
    sent again after a minute (``pages_reap``), so nothing accepted is lost."""
    now, later = pages[:SEND_IN_REQUEST], pages[SEND_IN_REQUEST:]
    pages_send(engine=engine, pages=now)
    if later:
        threading.Thread(
            target=_pages_send_in_batches,
            kwargs={"engine": engine, "pages": later},
            name="folio-pages-send",
            daemon=True,
        ).start()


def _pages_send_in_batches(*, engine: str, pages: list[tuple[int, uuid.UUID]]) -> None:
    from django.db import connection

    try:
        for start in range(0, len(pages), SEND_BATCH):
            batch = pages[start : start + SEND_BATCH]
            # A job cancelled meanwhile sends nothing more.
            queued = set(
                Page.objects.filter(
                    pk__in=[page_id for page_id, _ in batch], status=Page.Status.QUEUED
                ).values_list("pk", flat=True)
            )
            pages_send(engine=engine, pages=[page for page in batch if page[0] in queued])
    except Exception:  # the reaper sends what is left
        logger.exception("sending %d pages failed; the reaper will send them", len(pages))
    finally:
        connection.close()  # this thread's own connection
