"""How the webapp hands work to the workers: by task name and queue, never by importing
the worker's code (so the web process loads no engine)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from kombu.exceptions import OperationalError as BrokerError

from ocr_worker.celery_app import app
from webapp.core.queues import engine_queue, page_queue  # noqa: F401 (engine_queue: re-exported)

logger = logging.getLogger(__name__)

TRANSCRIBE_PAGE = "folio.transcribe_page"


def pages_enqueue(
    *, engine: str, pages: Iterable[tuple[int, uuid.UUID | str]], plain: bool = False
) -> bool:
    """Send one message per ``(page_id, task_id)``, to the engine's queue, or with ``plain``
    to its no-speculation queue (pages the engine handed over).

    Called after the commit that created the pages. If the broker is unreachable this logs
    and answers ``False``: the pages stay queued in the database for the reaper to send, so
    an accepted submission is never lost and its client never sees an error for saved work.
    """
    queue = page_queue(engine, plain=plain)
    try:
        with app.producer_or_acquire() as producer:
            for page_id, task_id in pages:
                app.send_task(
                    TRANSCRIBE_PAGE,
                    args=[page_id],
                    task_id=str(task_id),
                    queue=queue,
                    producer=producer,
                )
    except BrokerError:
        logger.exception("broker unreachable; the reaper will enqueue these pages later")
        return False
    return True


# Task ids per revoke broadcast: a message of about 40 KB.
REVOKE_BATCH = 1000


def pages_revoke(task_ids: Iterable[uuid.UUID | str]) -> None:
    """Tell every worker to drop these pages' messages unrun (Celery's revoke: a worker
    discards a revoked message as it receives it, before any database work, so a cancelled
    job's thousands of messages cost the queue next to nothing). Best effort: a worker that
    starts later (or misses the broadcast) still finds the page cancelled at its claim."""
    ids = [str(task_id) for task_id in task_ids]
    try:
        for start in range(0, len(ids), REVOKE_BATCH):
            app.control.revoke(ids[start : start + REVOKE_BATCH])
    except BrokerError:
        logger.warning("broker unreachable; %d cancelled pages are dropped at claim", len(ids))


def queue_depth(*, engine: str, plain: bool = False) -> int | None:
    """Messages waiting in an engine's queue (or its no-speculation queue); ``None`` when the
    broker cannot say."""
    try:
        with app.connection_for_write() as connection:
            return connection.default_channel.client.llen(page_queue(engine, plain=plain))
    except Exception:
        logger.warning("queue depth of %s unavailable", engine, exc_info=True)
        return None
