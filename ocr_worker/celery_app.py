"""The Celery application, configured from Django's settings.

Importing this module is cheap (no engine, no Django setup): the webapp imports it to send
messages by task name. Workers get Django set up by Celery's Django fixup at start.
"""

from __future__ import annotations

import logging
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

from django.conf import settings  # noqa: E402  (needs DJANGO_SETTINGS_MODULE)

MAINTENANCE_QUEUE = "folio"


class _NoResultBackendNotes(logging.Filter):
    """A revoke (a cancelled job's pages) makes Celery try to record each task as revoked in
    the result backend, which Folio has none of by design: one warning per page, thousands
    per cancel. The revoke itself works (the worker drops the messages)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "as revoked in backend" not in record.getMessage()


logging.getLogger("celery.worker.control").addFilter(_NoResultBackendNotes())

app = Celery("folio")
app.conf.update(
    broker_url=settings.FOLIO_BROKER_URL,
    broker_connection_retry_on_startup=True,
    # Redis hands an unacknowledged message out again after this long: it must outlast the
    # longest page, or a slow page would run twice.
    broker_transport_options={"visibility_timeout": settings.FOLIO_BROKER_VISIBILITY_TIMEOUT},
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    # The database holds every state; a result backend would only be a second, weaker copy.
    task_ignore_result=True,
    task_default_queue=MAINTENANCE_QUEUE,
    # A page message is acknowledged only after its page is saved, and one worker process
    # reserves one message at a time, so a crash loses nothing and starves no one.
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    worker_cancel_long_running_tasks_on_connection_loss=True,
    task_soft_time_limit=settings.FOLIO_PAGE_SOFT_TIME_LIMIT,
    task_time_limit=settings.FOLIO_PAGE_TIME_LIMIT,
    worker_max_tasks_per_child=settings.FOLIO_WORKER_MAX_TASKS_PER_CHILD or None,
    # A new prefork child loads its engine before it reports up (engines.py); Celery's 4 s
    # default killed replacement children on a busy host while they loaded (20 s and more),
    # over and over, and the queue stalled.
    worker_proc_alive_timeout=120.0,
    worker_hijack_root_logger=False,
    beat_schedule={
        "reap-pages": {"task": "folio.reap_pages", "schedule": float(settings.FOLIO_REAP_SECONDS)},
        # Deliveries whose message was lost (Redis restarted) or whose back-off was long.
        "dispatch-webhooks": {
            "task": "folio.dispatch_webhooks",
            "schedule": float(settings.FOLIO_WEBHOOK_SWEEP_SECONDS),
        },
        "expire-jobs": {
            "task": "folio.expire_jobs",
            "schedule": float(settings.FOLIO_RETENTION_SWEEP_SECONDS),
        },
    },
    imports=["ocr_worker.tasks", "ocr_worker.engines", "ocr_worker.serving"],
)
