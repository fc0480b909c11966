"""Celery tasks: fetch by id, call a service, nothing more."""

from __future__ import annotations

import logging
import os
import socket
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings

from model import pipeline
from model.engines import EngineError, EngineOptions, PageInput, TransientEngineError, load_engine
from ocr_worker.celery_app import app
from ocr_worker.documents import document_bytes
from webapp.accounts import services as account_services
from webapp.core.logcontext import log_context
from webapp.core.workers import served_engines_or_none
from webapp.jobs import engine_waits, heartbeat, liveness, services
from webapp.webhooks import services as webhook_services

logger = logging.getLogger(__name__)

RETRY_BACKOFF_MAX_SECONDS = 120


@app.task(
    name="folio.transcribe_page",
    bind=True,
    # Safe to redeliver when a worker dies mid-page: the claim makes a second run a no-op
    # once the page is saved, and a rerun of an unsaved page replaces nothing.
    acks_late=True,
    reject_on_worker_lost=True,
)
def transcribe_page(self, page_id: int) -> str:
    worker = _worker_id(self.request.hostname)
    claim = services.page_claim(page_id=page_id, task_id=self.request.id, worker=worker)
    if claim is None:
        return "skipped"
    # While the page is in hand, this process's heartbeat lists it: the reaper leaves it alone.
    with (
        heartbeat.process_heartbeat(worker).holding(page_id),
        log_context(job_id=claim.job_id, page=claim.number, engine=claim.engine),
    ):
        return _transcribe(self, claim)


def _transcribe(task, claim: services.PageClaim) -> str:
    engine = load_engine(claim.engine)
    page = PageInput(
        data=document_bytes(claim.document_name),
        mime_type=claim.mime_type,
        page_number=claim.number,
    )
    try:
        # The engine's transcription, normalised as asked, with its quality signals.
        result = pipeline.transcribe_page(engine, page, EngineOptions.from_dict(claim.options))
        # An Office page's image, for the UI's page-beside-text view (a PDF's is drawn from it).
        pipeline.attach_page_images(page, result)
    except TransientEngineError as exc:
        if claim.attempts >= settings.FOLIO_PAGE_MAX_ATTEMPTS:
            services.page_fail(
                claim=claim, error=f"{exc} (gave up after {claim.attempts} attempts)"
            )
            return "failed"
        services.page_retry_later(claim=claim, error=str(exc))
        countdown = get_exponential_backoff_interval(
            factor=2, retries=claim.attempts, maximum=RETRY_BACKOFF_MAX_SECONDS, full_jitter=True
        )
        raise task.retry(countdown=countdown, max_retries=None) from exc
    except EngineError as exc:
        services.page_fail(claim=claim, error=str(exc))
        return "failed"
    except SoftTimeLimitExceeded:
        services.page_fail(
            claim=claim,
            error=f"the page took longer than {settings.FOLIO_PAGE_SOFT_TIME_LIMIT} s, the limit",
        )
        return "failed"
    except Exception:
        logger.exception("page %s: unexpected engine failure", claim.page_id)
        services.page_fail(claim=claim, error="the engine failed on this page (an internal error)")
        return "failed"
    services.page_complete(claim=claim, result=result, engine_version=engine.version)
    return "done"


@app.task(name="folio.reap_pages", acks_late=True)
def reap_pages() -> int:
    reaped = services.pages_reap(
        stuck_after=timedelta(seconds=settings.FOLIO_PAGE_TIME_LIMIT + 60),
        unsent_after=timedelta(minutes=1),
        lost_nodes=liveness.lost_nodes(),
    )
    # Jobs whose engine's workers left: say so, and end them after the limit.
    engine_waits.jobs_waiting_for_engines(
        served=served_engines_or_none(fresh=True),
        limit=timedelta(seconds=settings.FOLIO_ENGINE_WAIT_LIMIT),
    )
    return reaped


@app.task(name="folio.deliver_webhook", acks_late=True)
def deliver_webhook(delivery_id: str) -> str:
    # A redelivered message is harmless: the attempt claims the delivery first.
    return webhook_services.delivery_attempt(delivery_id=delivery_id)


@app.task(name="folio.dispatch_webhooks", acks_late=True)
def dispatch_webhooks() -> int:
    return webhook_services.deliveries_dispatch_due()


@app.task(name="folio.expire_jobs", acks_late=True)
def expire_jobs() -> int:
    expired = services.jobs_expire()
    account_services.usage_counters_prune()
    return expired


def _worker_id(node: str | None) -> str:
    # The node name (worker@host), which the reaper pings to find lost hosts, and the pid of
    # the process doing the work (a prefork child), not of the parent.
    return f"{node or socket.gethostname()}:{os.getpid()}"
