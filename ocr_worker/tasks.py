"""Celery tasks: fetch by id, call a service, nothing more."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from datetime import timedelta

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings

from model import pipeline
from model.engines import EngineError, EngineOptions, PageInput, TransientEngineError, load_engine
from model.engines.auto import AUTO
from model.engines.handoff import wants_plain
from model.formats.types import is_converted
from ocr_worker.celery_app import app
from ocr_worker.documents import document_bytes
from ocr_worker.page_images import office_page_images_make, page_images_make
from ocr_worker.searchable_pdf import searchable_pdf_make
from webapp.accounts import services as account_services
from webapp.core.logcontext import log_context
from webapp.core.workers import served_engines_or_none, serves_plain
from webapp.jobs import engine_waits, heartbeat, liveness, services
from webapp.jobs.models import Job
from webapp.jobs.services import escalation
from webapp.jobs.services import searchable_pdf as searchable_pdf_builds
from webapp.webhooks import services as webhook_services

logger = logging.getLogger(__name__)

RETRY_BACKOFF_MAX_SECONDS = 120


class PageTask(Task):
    """A page task whose hard time limit ends its page at once.

    At the hard limit the pool kills the process in the middle of the page (MuPDF's C code
    does not hear the soft limit), and the page would stay ``running`` until the reaper sent
    it again, to be killed again, up to FOLIO_PAGE_MAX_ATTEMPTS times. Celery calls
    ``on_failure`` with ``TimeLimitExceeded`` in the pool's parent when it kills the child:
    the page fails there, with that reason, and is not retried."""

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        if not isinstance(exc, TimeLimitExceeded) or not args:
            return
        from django.db import connection

        try:
            services.page_fail_stopped(
                page_id=int(args[0]),
                task_id=task_id,
                error=f"the page was stopped at the hard time limit "
                f"({settings.FOLIO_PAGE_TIME_LIMIT} s); not retried",
            )
        except Exception:  # the reaper still ends the page, after its own delay
            logger.exception("page %s: could not record the hard time limit", args[0])
        finally:
            connection.close()  # the pool's parent holds no connection between kills


@app.task(
    name="folio.transcribe_page",
    base=PageTask,
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
    data = document_bytes(claim.document_name)
    try:
        # The page's images for the viewer, drawn in a child process with a wall-clock
        # limit: a page that cannot be drawn in time fails here, before an engine is stuck
        # in it.
        refusal = page_images_make(
            job_id=claim.job_id, number=claim.number, data=data, mime_type=claim.mime_type
        )
        if refusal is not None:
            services.page_fail(claim=claim, error=refusal)
            return "failed"
        # The engine's transcription, normalised as asked, with its quality signals.
        page = PageInput(data=data, mime_type=claim.mime_type, page_number=claim.number)
        options = EngineOptions.from_dict(claim.options)
        result = pipeline.transcribe_page(engine, page, options)
    except TransientEngineError as exc:
        if claim.attempts >= settings.FOLIO_PAGE_MAX_ATTEMPTS:
            return _failed(claim, f"{exc} (gave up after {claim.attempts} attempts)")
        services.page_retry_later(claim=claim, error=str(exc))
        countdown = get_exponential_backoff_interval(
            factor=2, retries=claim.attempts, maximum=RETRY_BACKOFF_MAX_SECONDS, full_jitter=True
        )
        raise task.retry(countdown=countdown, max_retries=None) from exc
    except SoftTimeLimitExceeded:
        return _failed(claim, _past_soft_limit())
    except EngineError as exc:
        # An engine that caught the soft limit as any other failure still ran out of time.
        return _failed(claim, _past_soft_limit() if _timed_out(exc) else str(exc))
    except Exception:
        logger.exception("page %s: unexpected engine failure", claim.page_id)
        return _failed(claim, "the engine failed on this page (an internal error)")
    handoff = None if claim.decode_plain else wants_plain(result.extra)
    # Handed over only to a live worker without speculation; otherwise the page stands as the
    # engine left it (a runaway trimmed and flagged for review).
    if handoff and serves_plain(claim.engine, fresh=True):
        return "handed over" if services.page_hand_off(claim=claim, reason=handoff) else "skipped"
    office = pipeline.has_office_page_images(claim.mime_type) and services.page_image_drawing_claim(
        job_id=claim.job_id, number=claim.number
    )
    if claim.job_engine == AUTO:
        return _auto_saved(claim, result, engine.version)
    saved = services.page_complete(claim=claim, result=result, engine_version=engine.version)
    if office and saved:
        # An Office page's images, drawn from LibreOffice's layout once its text is saved (the
        # text does not wait for LibreOffice); the viewer shows them beside the text.
        office_page_images_make(
            job_id=claim.job_id,
            number=claim.number,
            data=data,
            mime_type=claim.mime_type,
            options=claim.options,
        )
    return "done"


def _failed(claim: services.PageClaim, error: str) -> str:
    """A page its engine could not read fails; an ``auto`` job's page goes to a VLM engine
    instead (local failed), or keeps its local reading (the VLM failed)."""
    if claim.job_engine == AUTO and claim.escalation.get("escalated"):
        return "done" if escalation.vlm_reading_failed(claim=claim, error=error) else "skipped"
    if claim.job_engine == AUTO:
        return escalation.local_reading_failed(claim=claim, error=error)
    services.page_fail(claim=claim, error=error)
    return "failed"


def _auto_saved(claim: services.PageClaim, result, engine_version: str) -> str:
    """An ``auto`` job's page: its local reading judged (saved, or sent to a VLM engine), or
    its VLM reading weighed against the local one (model.engines.auto)."""
    if claim.escalation.get("escalated"):
        saved = escalation.vlm_reading_done(
            claim=claim, result=result, engine_version=engine_version
        )
        return "done" if saved else "skipped"
    return escalation.local_reading_done(claim=claim, result=result, engine_version=engine_version)


@app.task(name=services.page_images.RENDER_PAGE_IMAGE, acks_late=True)
def render_page_image(job_id: str, number: int) -> str:
    """The images of a finished page that has none stored (answered from the result cache,
    or read before images were stored), asked for by the viewer."""
    job = Job.objects.select_related("document").filter(pk=job_id).first()
    if job is None or job.is_expired or job.document.file_deleted_at is not None:
        return "gone"
    data, mime_type = document_bytes(job.document.file.name), job.document.mime_type
    if is_converted(mime_type):  # an Office page: drawn from LibreOffice's layout, if at all
        drawn = office_page_images_make(
            job_id=job.pk, number=number, data=data, mime_type=mime_type, options=job.options
        )
        return "drawn" if drawn else "failed"
    refusal = page_images_make(job_id=job.pk, number=number, data=data, mime_type=mime_type)
    return "failed" if refusal else "drawn"


@app.task(
    name=searchable_pdf_builds.BUILD_SEARCHABLE_PDF,
    acks_late=True,
    # The build's child is killed at FOLIO_SEARCHABLE_PDF_TIMEOUT; these only bound what is
    # around it (reading the pages and the file, storing the result).
    soft_time_limit=settings.FOLIO_SEARCHABLE_PDF_TIMEOUT + 30,
    time_limit=settings.FOLIO_SEARCHABLE_PDF_TIMEOUT + 60,
)
def build_searchable_pdf(job_id: str, fingerprint: str) -> str:
    """A finished job's searchable PDF, asked for by a download (jobs API, Reader, UI)."""
    with log_context(job_id=job_id):
        return searchable_pdf_make(job_id=uuid.UUID(job_id), fingerprint=fingerprint)


@app.task(name="folio.reap_pages", acks_late=True)
def reap_pages() -> int:
    reaped = services.pages_reap(
        stuck_after=timedelta(seconds=settings.FOLIO_PAGE_TIME_LIMIT + 60),
        unsent_after=timedelta(minutes=1),
        lost_nodes=liveness.lost_nodes(),
        serves_plain=serves_plain,
    )
    served = served_engines_or_none(fresh=True)
    # Escalated pages whose VLM engine's workers left keep their local reading.
    escalation.escalated_pages_settle_unserved(served=served)
    # Jobs whose engine's workers left: say so, and end them after the limit.
    engine_waits.jobs_waiting_for_engines(
        served=served, limit=timedelta(seconds=settings.FOLIO_ENGINE_WAIT_LIMIT)
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


def _past_soft_limit() -> str:
    return f"the page took longer than {settings.FOLIO_PAGE_SOFT_TIME_LIMIT} s, the limit"


def _timed_out(exc: BaseException) -> bool:
    """Whether the soft time limit is what ``exc`` came from (as its cause or context)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, SoftTimeLimitExceeded):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _worker_id(node: str | None) -> str:
    # The node name (worker@host), which the reaper pings to find lost hosts, and the pid of
    # the process doing the work (a prefork child), not of the parent.
    return f"{node or socket.gethostname()}:{os.getpid()}"
