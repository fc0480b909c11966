"""Which engines a worker serves, and loading them once per worker process at start."""

from __future__ import annotations

import logging
import time

from celery import Celery
from celery.signals import worker_process_init

from model.engines import engine_names, load_engine
from ocr_worker.celery_app import app
from webapp.jobs.queueing import engine_queue

logger = logging.getLogger(__name__)


def consumed_engines(celery_app: Celery) -> list[str]:
    """The engines whose queues this worker was told to consume (``-Q``)."""
    queues = set(celery_app.amqp.queues.consume_from or {})
    return [name for name in engine_names() if engine_queue(name) in queues]


@worker_process_init.connect
def load_engines_in_this_process(**kwargs) -> None:
    # Runs in each prefork child after the fork: models are never loaded in the parent, so
    # no child inherits a half-initialised runtime (and a GPU is never touched pre-fork).
    for name in consumed_engines(app):
        started = time.perf_counter()
        load_engine(name).load()
        logger.info("engine %s loaded in %.1f s", name, time.perf_counter() - started)
