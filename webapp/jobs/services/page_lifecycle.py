"""The worker's side of a page: ``page_claim``, then exactly one of ``page_complete``,
``page_fail``, ``page_retry_later`` or ``page_hand_off`` with the claim it got; the last page
closes its job."""

from __future__ import annotations

import base64
import logging
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import PurePath

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Case, F, QuerySet, Value, When
from django.utils import timezone

from model.engines.auto import FIRST_READER
from model.engines.base import PageResult
from model.page_images import SUFFIX as PAGE_IMAGE_SUFFIX
from model.usage import job_usage
from webapp.jobs.models import Job, Page
from webapp.jobs.services.options import JobOptions
from webapp.jobs.services.readings import reading_back
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
    # The job's engine (``engine`` is the one reading the page: ``local`` or a VLM engine
    # for an ``auto`` job), and the page's escalation so far (model.engines.auto).
    job_engine: str = ""
    escalation: dict = field(default_factory=dict)


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
    return _claim_of(page)


@dataclass(frozen=True)
class Outcome:
    """How an ``auto`` job's page ends (``webapp.jobs.services.escalation``): the reading kept
    is ``engine``'s; what the other reading spent is added to the page's and the job's usage
    (both were paid for); ``record`` is stored as the page's ``escalation``."""

    engine: str
    engine_version: str
    record: dict
    other_input_tokens: int = 0
    other_output_tokens: int = 0
    other_engine_seconds: float = 0.0
    vlm_seconds: float = 0.0
    escalated: bool = False
    left_local: bool = False


def page_complete(
    *,
    claim: PageClaim,
    result: PageResult,
    engine_version: str,
    outcome: Outcome | None = None,
) -> bool:
    """Save a transcription; ``False`` if this claim was superseded (nothing is written)."""
    return page_save(
        page=_still_claimed(claim),
        claim=claim,
        result=result,
        outcome=outcome or Outcome(engine=claim.engine, engine_version=engine_version, record={}),
    )


def page_save(
    *,
    page: QuerySet[Page],
    claim: PageClaim,
    result: PageResult,
    outcome: Outcome,
    stop_at_budget: bool = True,
) -> bool:
    """Save ``result`` as the page that ``page`` selects while it still selects it (a
    claimed page, or a queued escalated page settled without a claim): its row, the job's
    counters, the result cache (under the engine whose reading it is), the page event, and
    the job's end if it was the last page. ``False`` if ``page`` selects nothing."""
    options = JobOptions.from_dict(claim.options)
    quality = review_judged(result.extra.pop("quality", None) or {}, options)
    needs_review = quality["needs_review"]
    layout = result.layout.to_dict() if result.layout is not None else {}
    input_tokens = result.input_tokens + outcome.other_input_tokens
    output_tokens = result.output_tokens + outcome.other_output_tokens
    engine_seconds = result.engine_seconds + outcome.other_engine_seconds
    with transaction.atomic():
        saved = page.update(
            status=Page.Status.SUCCEEDED,
            needs_review=needs_review,
            review_score=quality.get("score"),
            quality=quality,
            extra=_page_extra(claim=claim, result=result),
            markdown=result.markdown,
            layout=layout,
            method=result.method,
            engine=outcome.engine,
            escalation=outcome.record,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            render_seconds=result.render_seconds,
            engine_seconds=engine_seconds,
            finished_at=timezone.now(),
            error="",
        )
        if not saved:
            return False
        Job.objects.filter(pk=claim.job_id).update(
            pages_done=F("pages_done") + 1,
            input_tokens=F("input_tokens") + input_tokens,
            output_tokens=F("output_tokens") + output_tokens,
            engine_seconds=F("engine_seconds") + engine_seconds,
            pages_needing_review=F("pages_needing_review") + int(needs_review),
            pages_escalated=F("pages_escalated") + int(outcome.escalated),
            vlm_seconds=F("vlm_seconds") + outcome.vlm_seconds,
            pages_left_local=F("pages_left_local") + int(outcome.left_local),
        )
        # Not cached: pages with figure crops (they belong to the job that stored them, and a
        # later job would link crops it does not have), and pages flagged for review (a later
        # identical upload deserves a fresh reading, not the same doubtful one). A reading is
        # cached under the engine that produced it, with its own tokens.
        if not result.extra.get("figures") and not needs_review:
            cached_page_store(
                sha256=claim.sha256,
                engine=outcome.engine,
                engine_version=outcome.engine_version,
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
        if stop_at_budget:
            _job_stop_at_token_budget(job_id=claim.job_id)
        webhook_services.page_event_record(job_id=claim.job_id, page_id=claim.page_id)
        job_finalize_if_complete(job_id=claim.job_id)
    return True


def _job_stop_at_token_budget(*, job_id: uuid.UUID) -> None:
    """Once a job has used its token budget, its pages still queued are failed, saying why;
    pages already running finish (their tokens are spent either way). An escalated page
    waiting for its VLM pass keeps the local reading it holds."""
    job = Job.objects.only("options", "input_tokens", "output_tokens").get(pk=job_id)
    budget = job.options.get("token_budget")
    if budget is None or job.input_tokens + job.output_tokens < budget:
        return
    escalated_pages_settle(
        pages=Page.objects.filter(job_id=job_id),
        why=f"the job reached its token budget of {budget} before the VLM read the page",
    )
    stopped = Page.objects.filter(job_id=job_id, status=Page.Status.QUEUED).update(
        status=Page.Status.FAILED,
        error=f"not transcribed: the job reached its token budget of {budget}",
        finished_at=timezone.now(),
    )
    if stopped:
        Job.objects.filter(pk=job_id).update(pages_failed=F("pages_failed") + stopped)


def escalated_pages_settle(*, pages: QuerySet[Page], why: str) -> int:
    """Save the escalated pages among ``pages`` that still wait for their VLM pass with the
    local reading each holds (``Page.escalation["local"]``), saying ``why``: the job was
    cancelled, its token budget is spent, or no worker serves the VLM engine any more. A page
    whose local reading failed holds none and is left as it is. How many were saved."""
    settled = 0
    waiting = pages.filter(status=Page.Status.QUEUED, escalation__has_key="local")
    for page in waiting.select_related("job__document")[:1000]:
        record = dict(page.escalation)
        kept = record.pop("local")
        if not kept:
            continue
        outcome = Outcome(
            engine=FIRST_READER,
            engine_version=kept.get("engine_version", ""),
            record={**record, "kept": "local", "why": why},
            left_local=True,
        )
        if page_save(
            page=Page.objects.filter(pk=page.pk, status=Page.Status.QUEUED, task_id=page.task_id),
            claim=_claim_of(page),
            result=reading_back(kept),
            outcome=outcome,
            stop_at_budget=False,
        ):
            settled += 1
    return settled


def _claim_of(page: Page) -> PageClaim:
    """What saving a page needs to know of it, for a page saved without a claim."""
    job = page.job
    return PageClaim(
        page_id=page.pk,
        job_id=job.pk,
        number=page.number,
        attempts=page.attempts,
        engine=page.engine or job.engine,
        options=job.options,
        document_name=job.document.file.name,
        mime_type=job.document.mime_type,
        sha256=job.document.sha256,
        owner_id=job.owner_id,
        decode_plain=page.decode_plain,
        job_engine=job.engine,
        escalation=page.escalation or {},
    )


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


def office_page_images_store(*, job_id: uuid.UUID, number: int, image: bytes) -> dict:
    """Store an Office page's image under the name every page's image has (a rerun replaces
    it); what the page's ``extra["page_image"]`` records, which the UI reads."""
    name = page_image_storage_name(job_id=job_id, number=number)
    if default_storage.exists(name):
        default_storage.delete(name)
    return {"path": default_storage.save(name, ContentFile(image))}


def page_image_storage_name(*, job_id: uuid.UUID, number: int) -> str:
    """Where a page's image is kept (``model.page_images``: one WebP a page; jobs read before
    it kept two JPEGs, ``page-NNNN.jpg`` and ``page-NNNN-full.jpg``, which are still served)."""
    return f"results/{job_id}/pages/page-{number:04d}{PAGE_IMAGE_SUFFIX}"


def retention_expiry(*, finished_at):
    hours = settings.FOLIO_RETENTION_HOURS
    return finished_at + timedelta(hours=hours) if hours else None
