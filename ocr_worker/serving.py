"""The worker's serving heartbeat: once it is ready to take messages, its main process writes
which queues it consumes and how many pages it takes at once, every
FOLIO_WORKER_HEARTBEAT_SECONDS (``webapp.core.workers`` reads it for the web and the reaper).

A worker that stops, crashes or is starved of CPU simply stops writing: readers keep counting
it for FOLIO_WORKER_SEEN_SECONDS, and a graceful stop does the same (a restart within that
time refuses nothing)."""

from __future__ import annotations

import logging

from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

from webapp.core.workers import ServingHeartbeat

logger = logging.getLogger(__name__)

_heartbeat: ServingHeartbeat | None = None


def consumed_queues(consumer) -> list[str]:
    """The queues the consumer takes messages from now (a control command may have added
    or cancelled one since start); the configured ones while it reconnects."""
    task_consumer = getattr(consumer, "task_consumer", None)
    if task_consumer is not None:
        return [queue.name for queue in task_consumer.queues]
    return sorted(consumer.app.amqp.queues.consume_from or {})


def pool_capacity(consumer) -> int:
    """Pages the worker takes at once: its pool's processes or threads."""
    concurrency = getattr(getattr(consumer, "controller", None), "concurrency", None)
    return int(concurrency or consumer.app.conf.worker_concurrency or 1)


@worker_ready.connect
def start_serving_heartbeat(sender=None, **kwargs) -> None:
    global _heartbeat
    if sender is None or _heartbeat is not None:
        return  # the consumer reconnected: the heartbeat thread already runs
    _heartbeat = ServingHeartbeat(
        node=sender.hostname,
        queues=lambda: consumed_queues(sender),
        capacity=pool_capacity(sender),
        interval=settings.FOLIO_WORKER_HEARTBEAT_SECONDS,
    ).start()
    logger.info("serving heartbeat every %s s", settings.FOLIO_WORKER_HEARTBEAT_SECONDS)


@worker_shutdown.connect
def stop_serving_heartbeat(**kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()
