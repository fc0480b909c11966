"""The worker's side of a page: ``page_claim``, then exactly one of ``page_complete``,
``page_fail``, ``page_retry_later`` or ``page_hand_off`` with the claim it got; the last page
closes its job."""

from __future__ import annotations

import base64
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import PurePath

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Case, F, QuerySet, Value, When
from django.utils import timezone

from model.engines.base import PageResult
from model.usage import job_usage
from webapp.jobs.models import Job, Page
from webapp.jobs.services.options import JobOptions
from webapp.jobs.services.review import review_judged
from webapp.jobs.services.sending import pages_send
from webapp.results.services import cached_page_store
from webapp.webhooks import services as webhook_services

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PageClaim:
    page_id: int
    job_id: uuid.UUID
    number: int
    attempts: int
    engine: str
    options: dict
    document_name: str
    mime_type: str
    sha256: str
    # Whose result cache the page's transcription goes to (webapp/results/services.py).
    owner_id: int | None = None
    # Handed over already: this claim is a no-speculation worker's, never handed on again.
    decode_plain: bool = False


def _still_claimed(claim: PageClaim) -> QuerySet[Page]:
    """The claimed page, while this claim still holds it: a later attempt, or the reaper
    handing the page out again, makes the queryset empty and so every update a no-op."""
    return Page.objects.filter(
        pk=claim.page_id, status=Page.Status.RUNNING, attempts=claim.attempts
    )


def page_claim(*, page_id: int, task_id: str, worker: str) -> PageClaim | None:
    """Take a page for this message, or ``None`` when there is nothing to do: the page is
    finished, its job is over, or the message is stale (the page now belongs to another)."""
    now = timezone.now()
    with transaction.atomic():
        claimed = Page.objects.filter(
            pk=page_id,
            task_id=task_id,
            status__in=Page.CLAIMABLE,
            job__status__in=Job.ACTIVE,
        ).update(
            status=Page.Status.RUNNING, attempts=F("attempts") + 1, worker=worker, started_at=now
        )
        if not claimed:
            return None
        page = Page.objects.select_related("job__document").get(pk=page_id)
        if page.attempts > settings.FOLIO_PAGE_MAX_ATTEMPTS:
            # Each earlier attempt died with its worker: this page is likely what kills them.
            _page_finish_failed(
                page_id=page.pk,
                job_id=page.job_id,
                attempts=page.attempts,
                error=f"the worker stopped while transcribing this page, "
                f"{page.attempts - 1} times; giving up on it",
            )
            return None
        if page.queue_wait_seconds is None and page.enqueued_at:
            Page.objects.filter(pk=page_id).update(
                queue_wait_seconds=(now - page.enqueued_at).total_seconds()
            )
        Job.objects.filter(pk=page.job_id, status=Job.Status.QUEUED).update(
            status=Job.Status.RUNNING, started_at=now
        )
    job = page.job
    return PageClaim(
        page_id=page.pk,
        job_id=job.pk,
        number=page.number,
        attempts=page.attempts,
        engine=job.engine,
        options=job.options,
        document_name=job.document.file.name,
        mime_type=job.document.mime_type,
        sha256=job.document.sha256,
        owner_id=job.owner_id,
        decode_plain=page.decode_plain,
    )


def page_complete(*, claim: PageClaim, result: PageResult, engine_version: str) -> bool:
    """Save a transcription; ``False`` if this claim was superseded (nothing is written)."""
    options = JobOptions.from_dict(claim.options)
    quality = review_judged(result.extra.pop("quality", None) or {}, options)
    needs_review = quality["needs_review"]
    layout = result.layout.to_dict() if result.layout is not None else {}
    with transaction.atomic():
        saved = _still_claimed(claim).update(
            status=Page.Status.SUCCEEDED,
            needs_review=needs_review,
            review_score=quality.get("score"),
            quality=quality,
            extra=_page_extra(claim=claim, result=result),
            markdown=result.markdown,
            layout=layout,
            method=result.method,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            render_seconds=result.render_seconds,
            engine_seconds=result.engine_seconds,
            finished_at=timezone.now(),
            error="",
        )
        if not saved:
            return False
        Job.objects.filter(pk=claim.job_id).update(
            pages_done=F("pages_done") + 1,
            input_tokens=F("input_tokens") + result.input_tokens,
            output_tokens=F("output_tokens") + result.output_tokens,
            engine_seconds=F("engine_seconds") + result.engine_seconds,
            pages_needing_review=F("pages_needing_review") + int(needs_review),
        )
        # Not cached: pages with figure crops (they belong to the job that stored them, and a
        # later job would link crops it does not have), and pages flagged for review (a later
        # identical upload deserves a fresh reading, not the same doubtful one).
        if not result.extra.get("figures") and not needs_review:
            cached_page_store(
                sha256=claim.sha256,
                engine=claim.engine,
                engine_version=engine_version,
                options=options.output_options(),
                page_number=claim.number,
                markdown=result.markdown,
                layout=layout,
                method=result.method,
                input_tokens=result.input_tokens,
                output_tokens=result.output_tokens,
                quality=quality,
                owner_id=claim.owner_id,
            )
        _job_stop_at_token_budget(job_id=claim.job_id)
        webhook_services.page_event_record(job_id=claim.job_id, page_id=claim.page_id)
        job_finalize_if_complete(job_id=claim.job_id)
    return True


def _job_stop_at_token_budget(*, job_id: uuid.UUID) -> None:
    """Once a job has used its token budget, its pages still queued are failed, saying why;
    pages already running finish (their tokens are spent either way)."""
    job = Job.objects.only("options", "input_tokens", "output_tokens").get(pk=job_id)
    budget = job.options.get("token_budget")
    if budget is None or job.input_tokens + job.output_tokens < budget:
        return
    stopped = Page.objects.filter(job_id=job_id, status=Page.Status.QUEUED).update(
        status=Page.Status.FAILED,
        error=f"not transcribed: the job reached its token budget of {budget}",
        finished_at=timezone.now(),
    )
    if stopped:
        Job.objects.filter(pk=job_id).update(pages_failed=F("pages_failed") + stopped)


def page_fail(*, claim: PageClaim, error: str) -> bool:
    with transaction.atomic():
        return _page_finish_failed(
            page_id=claim.page_id, job_id=claim.job_id, attempts=claim.attempts, error=error
        )


def page_fail_stopped(*, page_id: int, task_id: str, error: str) -> bool:
    """Fail a page whose worker process was killed at the hard time limit, at once: a page
    that ran that long is what made it run that long, and another attempt would cost as much
    again. Called by the worker's pool parent (the child is gone), so it finds the page by its
    message: a page since handed to another message is left alone."""
    with transaction.atomic():
        page = (
            Page.objects.filter(pk=page_id, task_id=task_id, status=Page.Status.RUNNING)
            .values("job_id", "attempts")
            .first()
        )
        if page is None:
            return False
        return _page_finish_failed(
            page_id=page_id, job_id=page["job_id"], attempts=page["attempts"], error=error
        )


def page_retry_later(*, claim: PageClaim, error: str) -> bool:
    """Put the page back in the queue state while its message waits out a back-off."""
    return bool(
        _still_claimed(claim).update(
            status=Page.Status.QUEUED, error=error, enqueued_at=timezone.now()
        )
    )


def page_hand_off(*, claim: PageClaim, reason: str) -> bool:
    """Send a page the engine asked to hand over (``model.engines.handoff``) to a worker of the
    same engine started without speculative decoding, on the engine's no-speculation queue;
    ``False`` if this claim was superseded. A new task id makes any other message a no-op; the
    hand-over is not a failed attempt, so it does not count against the attempts limit."""
    new_task_id = uuid.uuid4()
    with transaction.atomic():
        moved = _still_claimed(claim).update(
            status=Page.Status.QUEUED,
            task_id=new_task_id,
            decode_plain=True,
            attempts=F("attempts") - 1,
            enqueued_at=timezone.now(),
            sent_at=None,
            error=f"handed over to a worker without speculative decoding: {reason}",
        )
        if moved:
            transaction.on_commit(
                partial(
                    pages_send,
                    engine=claim.engine,
                    pages=[(claim.page_id, new_task_id)],
                    plain=True,
                )
            )
    return bool(moved)


def _page_finish_failed(*, page_id: int, job_id: uuid.UUID, attempts: int, error: str) -> bool:
    failed = Page.objects.filter(pk=page_id, status=Page.Status.RUNNING, attempts=attempts).update(
        status=Page.Status.FAILED, error=error, finished_at=timezone.now()
    )
    if not failed:
        return False
    Job.objects.filter(pk=job_id).update(pages_failed=F("pages_failed") + 1)
    job_finalize_if_complete(job_id=job_id)
    return True


def job_finalize_if_complete(*, job_id: uuid.UUID) -> bool:
    """Close the job when its last page is in. The conditional UPDATE lets exactly one
    caller win, however many pages finish at the same moment, and that caller writes the
    webhook deliveries in the same transaction (the outbox)."""
    now = timezone.now()
    finalized = Job.objects.filter(
        pk=job_id,
        status__in=Job.ACTIVE,
        pages_total=F("pages_done") + F("pages_failed"),
    ).update(
        status=Case(
            When(pages_failed=0, then=Value(Job.Status.SUCCEEDED)),
            When(pages_done=0, then=Value(Job.Status.FAILED)),
            default=Value(Job.Status.PARTIALLY_FAILED),
        ),
        finished_at=now,
        expires_at=retention_expiry(finished_at=now),
    )
    if finalized:
        logger.info("job %s finished", job_id)
        _job_record_engine_metrics(job_id=job_id)
        webhook_services.job_event_record(job_id=job_id)
    return bool(finalized)


def _job_record_engine_metrics(*, job_id: uuid.UUID) -> None:
    job = Job.objects.only("started_at", "finished_at").get(pk=job_id)
    pages = Page.objects.filter(job_id=job_id, status=Page.Status.SUCCEEDED)
    reports = [
        {**extra, "output_tokens": tokens}
        for extra, tokens in pages.values_list("extra", "output_tokens")
    ]
    wall = (
        (job.finished_at - job.started_at).total_seconds()
        if job.started_at and job.finished_at
        else 0.0
    )
    Job.objects.filter(pk=job_id).update(engine_metrics=job_usage(reports, wall_seconds=wall))


def figure_name_is_plain(name: str) -> bool:
    """Whether ``name`` could name a figure file: one path segment, not "." or "..", not
    hidden (the folder itself or its parent are no figure)."""
    return bool(name) and PurePath(name).name == name and not name.startswith(".")


def figure_storage_name(*, job_id: uuid.UUID, name: str) -> str:
    return f"results/{job_id}/figures/{PurePath(name).name}"


def _page_extra(*, claim: PageClaim, result: PageResult) -> dict:
    """The engine's report, with figure crops moved out of it into storage (the Markdown
    links them as ``figures/<name>``; the API serves them under the job)."""
    extra = dict(result.extra)
    figures = []
    for figure in extra.pop("figures", None) or []:
        stored = default_storage.save(
            figure_storage_name(job_id=claim.job_id, name=figure["name"]),
            ContentFile(base64.b64decode(figure["png_base64"])),
        )
        figures.append(
            {"name": PurePath(figure["name"]).name, "box": figure.get("box"), "path": stored}
        )
    if figures:
        extra["figures"] = figures
    return extra


def office_page_images_store(*, job_id: uuid.UUID, number: int, panel: bytes, full: bytes) -> dict:
    """Store an Office page's two images under the names every page's images have (a rerun
    replaces them); what the page's ``extra["page_image"]`` records, which the UI reads."""
    stored = {}
    for key, is_full, data in (("path", False, panel), ("full_path", True, full)):
        name = page_image_storage_name(job_id=job_id, number=number, full=is_full)
        if default_storage.exists(name):
            default_storage.delete(name)
        stored[key] = default_storage.save(name, ContentFile(data))
    return stored


def page_image_storage_name(*, job_id: uuid.UUID, number: int, full: bool = False) -> str:
    return f"results/{job_id}/pages/page-{number:04d}{'-full' if full else ''}.jpg"


def retention_expiry(*, finished_at):
    hours = settings.FOLIO_RETENTION_HOURS
    return finished_at + timedelta(hours=hours) if hours else None
