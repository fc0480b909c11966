"""The reaper: pages that no message will ever finish are handed out again (beat runs it)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from datetime import timedelta
from functools import partial

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from webapp.jobs import heartbeat
from webapp.jobs.models import Job, Page
from webapp.jobs.queueing import queue_depth
from webapp.jobs.services.sending import pages_send

logger = logging.getLogger(__name__)


def pages_reap(
    *,
    stuck_after: timedelta,
    unsent_after: timedelta,
    lost_after: timedelta | None = None,
    lost_nodes: AbstractSet[str] = frozenset(),
    serves_plain: Callable[[str], bool | None] | None = None,
) -> int:
    """Hand out again the pages that no message will ever finish: claimed by a worker that
    died (running far past the time limit, or on a node that ``lost_nodes`` names: a host
    that answers no ping, see webapp/jobs/liveness.py), never sent (the broker was down at
    submit), or sent but lost (the broker restarted empty: its queue is empty while pages
    still wait).

    Past the time limit, a page its worker process still lists in its heartbeat
    (``webapp.jobs.heartbeat``) is left alone, however long it runs: a GPU page may run for
    minutes, and sending it again would decode it twice. Only when the heartbeats cannot be
    read does elapsed time alone decide.

    A page its engine handed over to the no-speculation queue goes back there; when
    ``serves_plain(engine)`` says no worker consumes that queue any more, it goes back to its
    engine's queue instead (whose worker, finding nobody to hand it to, keeps the page as it
    decodes it).

    Each goes to the queue of the engine reading it (``Page.engine``: an ``auto`` job's page
    is read by ``local``, then by the VLM engine it was escalated to), with a new task id,
    which turns any old message for it into a no-op."""
    now = timezone.now()
    held_by_lost = Q(pk__in=[])
    for node in lost_nodes:
        held_by_lost |= Q(worker__startswith=f"{node}:")
    stuck = Page.objects.filter(
        Q(started_at__lt=now - stuck_after) | held_by_lost,
        status=Page.Status.RUNNING,
        job__status__in=Job.ACTIVE,
    ).exclude(pk__in=_still_held(now=now, stuck_after=stuck_after))
    unsent = Page.objects.filter(
        status=Page.Status.QUEUED,
        sent_at__isnull=True,
        enqueued_at__lt=now - unsent_after,
        job__status__in=Job.ACTIVE,
    )
    reaped = 0
    lost = _lost_pages(now=now, lost_after=unsent_after if lost_after is None else lost_after)
    stranded = _plain_pages_unserved(now=now, serves_plain=serves_plain, after=unsent_after)
    for candidates in (stuck, unsent, *lost, *stranded):
        for page_id, status, task_id, engine, plain in candidates.values_list(
            "pk", "status", "task_id", "engine", "decode_plain"
        )[:1000]:
            new_task_id = uuid.uuid4()
            if plain and serves_plain is not None and serves_plain(engine) is False:
                plain = False
            with transaction.atomic():
                moved = Page.objects.filter(pk=page_id, status=status, task_id=task_id).update(
                    status=Page.Status.QUEUED,
                    task_id=new_task_id,
                    enqueued_at=now,
                    sent_at=None,
                    decode_plain=plain,
                )
                if moved:
                    reaped += 1
                    transaction.on_commit(
                        partial(
                            pages_send,
                            engine=engine,
                            pages=[(page_id, new_task_id)],
                            plain=plain,
                        )
                    )
    if reaped:
        logger.warning("re-enqueued %d pages that no worker was going to finish", reaped)
    _cancelled_job_pages_close(now=now, stuck_after=stuck_after)
    return reaped


def _still_held(*, now, stuck_after: timedelta) -> list[int]:
    """Pages past the time limit that their live worker process still lists as in hand."""
    overdue = list(
        Page.objects.filter(
            status=Page.Status.RUNNING,
            started_at__lt=now - stuck_after,
            job__status__in=Job.ACTIVE,
        ).values_list("pk", "worker")[:1000]
    )
    held = heartbeat.pages_in_hand(worker for _, worker in overdue)
    if held is None:
        return []
    kept = [pk for pk, worker in overdue if pk in (held.get(worker) or ())]
    if kept:
        logger.info("%d pages past the time limit are still in their workers' hands", len(kept))
    return kept


def _lost_pages(*, now, lost_after: timedelta) -> list:
    """Queued pages whose message is gone. While an engine's queue holds messages a waiting
    page may be among them, so only an empty queue proves the loss; pages behind a lost
    message are then found on a later round, once the queue has drained."""
    waiting = Page.objects.filter(
        status=Page.Status.QUEUED,
        sent_at__lt=now - lost_after,
        job__status__in=Job.ACTIVE,
    )
    lost = []
    queues = waiting.order_by().values_list("engine", "decode_plain").distinct()
    for engine, plain in queues:
        if queue_depth(engine=engine, plain=plain) == 0:
            lost.append(waiting.filter(engine=engine, decode_plain=plain))
    return lost


def _plain_pages_unserved(
    *, now, serves_plain: Callable[[str], bool | None] | None, after: timedelta
) -> list:
    """Handed-over pages waiting on a no-speculation queue that no live worker consumes."""
    if serves_plain is None:
        return []
    waiting = Page.objects.filter(
        status=Page.Status.QUEUED,
        decode_plain=True,
        sent_at__lt=now - after,
        job__status__in=Job.ACTIVE,
    )
    engines = waiting.order_by().values_list("engine", flat=True).distinct()
    return [waiting.filter(engine=e) for e in engines if serves_plain(e) is False]


def _cancelled_job_pages_close(*, now, stuck_after: timedelta) -> int:
    """Pages of a cancelled job that will never finish: sent back to the queue by a transient
    error after the cancel (no claim takes them now), or held by a worker that died."""
    closed = 0
    for page_id, job_id, status in Page.objects.filter(
        Q(status=Page.Status.QUEUED)
        | Q(status=Page.Status.RUNNING, started_at__lt=now - stuck_after),
        job__status=Job.Status.CANCELLED,
    ).values_list("pk", "job_id", "status")[:1000]:
        with transaction.atomic():
            if Page.objects.filter(pk=page_id, status=status).update(
                status=Page.Status.CANCELLED, finished_at=now, error="the job was cancelled"
            ):
                Job.objects.filter(pk=job_id).update(pages_cancelled=F("pages_cancelled") + 1)
                closed += 1
    return closed
