"""Writes for documents, jobs and pages: the one place where their state changes.

The web side calls ``job_submit``; the worker calls ``page_claim`` and then exactly one of
``page_complete``, ``page_fail`` or ``page_retry_later`` with the claim it got.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePath

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from model.documents import DocumentError, DocumentInfo, inspect_document, safe_filename
from model.engines.base import PageResult
from model.engines.registry import UnknownEngine, engine_names
from model.pages import PageSelectionError, parse_page_selection
from webapp.jobs.models import Document, Job, Page
from webapp.jobs.queueing import pages_enqueue

logger = logging.getLogger(__name__)

TABLE_FORMATS = ("markdown", "html")


class SubmissionError(ValueError):
    """A submission refused before anything was written. ``kind`` picks the HTTP answer."""

    def __init__(self, message: str, *, kind: str = "bad_parameter"):
        super().__init__(message)
        self.kind = kind  # "bad_parameter" | "unprocessable" | "too_large"


@dataclass(frozen=True)
class JobOptions:
    table_format: str = "markdown"

    @classmethod
    def parse(cls, *, table_format: str | None) -> JobOptions:
        table_format = (table_format or "markdown").strip().lower()
        if table_format not in TABLE_FORMATS:
            raise SubmissionError(
                f"table_format {table_format!r} is not one of: {', '.join(TABLE_FORMATS)}"
            )
        return cls(table_format=table_format)

    def as_dict(self) -> dict:
        return {"table_format": self.table_format}


# --- submission -------------------------------------------------------------------------------


def job_submit(
    *,
    owner: AbstractBaseUser,
    data: bytes,
    filename: str | None,
    page_selection: str | None = None,
    engine: str | None = None,
    options: JobOptions | None = None,
) -> Job:
    """Validate everything first, then write the document, job and pages in one transaction
    and enqueue the pages once it has committed: a refused submission leaves nothing behind."""
    engine = _validated_engine(engine)
    upload_size_check(size=len(data))
    info = _inspected(data)
    try:
        page_numbers = parse_page_selection(page_selection, info.page_count)
    except PageSelectionError as exc:
        raise SubmissionError(str(exc)) from exc
    if len(page_numbers) > settings.FOLIO_MAX_PAGES:
        raise SubmissionError(
            f"{len(page_numbers)} pages selected; this server takes at most "
            f"{settings.FOLIO_MAX_PAGES} pages per job (use `pages` to pick a range)",
            kind="too_large",
        )
    options = options or JobOptions()
    sha256 = hashlib.sha256(data).hexdigest()
    stored_name = _store_content(data, sha256=sha256, filename=filename)

    with transaction.atomic():
        document, _ = Document.objects.get_or_create(
            owner=owner,
            sha256=sha256,
            defaults={
                "file": stored_name,
                "mime_type": info.mime_type,
                "page_count": info.page_count,
                "original_name": safe_filename(filename),
                "size": len(data),
            },
        )
        job = Job.objects.create(
            owner=owner,
            document=document,
            engine=engine,
            page_selection=page_selection or "",
            options=options.as_dict(),
            pages_total=len(page_numbers),
        )
        now = timezone.now()
        pages = Page.objects.bulk_create(
            Page(job=job, number=number, task_id=uuid.uuid4(), enqueued_at=now)
            for number in page_numbers
        )
        # bulk_create gives ids back on PostgreSQL and SQLite, the two databases we support.
        messages = [(page.pk, page.task_id) for page in pages]
        transaction.on_commit(lambda: pages_send(engine=engine, pages=messages))
    logger.info("job %s: %d pages of %s with %s", job.id, len(pages), document.id, engine)
    return job


def upload_size_check(*, size: int) -> None:
    """Refuse an oversized upload; the API calls it before reading the body into memory."""
    if size > settings.FOLIO_MAX_UPLOAD_BYTES:
        raise SubmissionError(
            f"the file is {size:,} bytes; this server accepts at most "
            f"{settings.FOLIO_MAX_UPLOAD_BYTES:,}",
            kind="too_large",
        )


def _validated_engine(engine: str | None) -> str:
    engine = (engine or settings.FOLIO_DEFAULT_ENGINE).strip()
    if engine not in engine_names():  # names only: the web process imports no engine
        raise SubmissionError(str(UnknownEngine(engine)))
    return engine


def _inspected(data: bytes) -> DocumentInfo:
    try:
        return inspect_document(data)
    except DocumentError as exc:
        kind = "too_large" if getattr(exc, "code", "") == "too_large" else "unprocessable"
        if getattr(exc, "code", "") in ("empty", "unsupported"):
            kind = "bad_parameter"
        raise SubmissionError(str(exc), kind=kind) from exc


def _store_content(data: bytes, *, sha256: str, filename: str | None) -> str:
    """Content-addressed: the same bytes are stored once, whoever uploads them."""
    suffix = PurePath(safe_filename(filename)).suffix.lower()[:10]
    name = f"documents/{sha256[:2]}/{sha256}{suffix}"
    if default_storage.exists(name):
        return name
    saved = default_storage.save(name, ContentFile(data))
    if saved != name:
        # Someone stored the same bytes between our check and our save: keep theirs.
        default_storage.delete(saved)
    return name


def pages_send(*, engine: str, pages: list[tuple[int, uuid.UUID]]) -> None:
    """Send the pages' messages and note that they went out; pages whose send failed keep
    ``sent_at`` empty, and the reaper sends them once the broker is back."""
    if pages_enqueue(engine=engine, pages=pages):
        Page.objects.filter(pk__in=[page_id for page_id, _ in pages], sent_at__isnull=True).update(
            sent_at=timezone.now()
        )


# --- the worker's side ------------------------------------------------------------------------


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
    )


def page_complete(*, claim: PageClaim, result: PageResult) -> bool:
    """Save a transcription; ``False`` if this claim was superseded (nothing is written)."""
    with transaction.atomic():
        saved = Page.objects.filter(
            pk=claim.page_id, status=Page.Status.RUNNING, attempts=claim.attempts
        ).update(
            status=Page.Status.SUCCEEDED,
            markdown=result.markdown,
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
        )
        _job_finalize_if_complete(job_id=claim.job_id)
    return True


def page_fail(*, claim: PageClaim, error: str) -> bool:
    with transaction.atomic():
        return _page_finish_failed(
            page_id=claim.page_id, job_id=claim.job_id, attempts=claim.attempts, error=error
        )


def page_retry_later(*, claim: PageClaim, error: str) -> bool:
    """Put the page back in the queue state while its message waits out a back-off."""
    return bool(
        Page.objects.filter(
            pk=claim.page_id, status=Page.Status.RUNNING, attempts=claim.attempts
        ).update(status=Page.Status.QUEUED, error=error, enqueued_at=timezone.now())
    )


def _page_finish_failed(*, page_id: int, job_id: uuid.UUID, attempts: int, error: str) -> bool:
    failed = Page.objects.filter(pk=page_id, status=Page.Status.RUNNING, attempts=attempts).update(
        status=Page.Status.FAILED, error=error, finished_at=timezone.now()
    )
    if not failed:
        return False
    Job.objects.filter(pk=job_id).update(pages_failed=F("pages_failed") + 1)
    _job_finalize_if_complete(job_id=job_id)
    return True


def _job_finalize_if_complete(*, job_id: uuid.UUID) -> bool:
    """Close the job when its last page is in. The conditional UPDATE lets exactly one
    caller win, however many pages finish at the same moment."""
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
        finished_at=timezone.now(),
    )
    if finalized:
        logger.info("job %s finished", job_id)
    return bool(finalized)


# --- maintenance ------------------------------------------------------------------------------


def pages_reap(*, stuck_after: timedelta, unsent_after: timedelta) -> int:
    """Hand out again the pages that no message will ever finish: claimed by a worker that
    died (running far past the time limit) or never sent (the broker was down at submit).

    Each gets a new task id, which turns any old message for it into a no-op."""
    now = timezone.now()
    stuck = Page.objects.filter(
        status=Page.Status.RUNNING, started_at__lt=now - stuck_after, job__status__in=Job.ACTIVE
    )
    unsent = Page.objects.filter(
        status=Page.Status.QUEUED,
        sent_at__isnull=True,
        enqueued_at__lt=now - unsent_after,
        job__status__in=Job.ACTIVE,
    )
    reaped = 0
    for candidates in (stuck, unsent):
        for page_id, status, task_id, engine in candidates.values_list(
            "pk", "status", "task_id", "job__engine"
        )[:1000]:
            new_task_id = uuid.uuid4()
            with transaction.atomic():
                moved = Page.objects.filter(pk=page_id, status=status, task_id=task_id).update(
                    status=Page.Status.QUEUED, task_id=new_task_id, enqueued_at=now, sent_at=None
                )
                if moved:
                    reaped += 1
                    transaction.on_commit(
                        lambda e=engine, p=page_id, t=new_task_id: pages_send(
                            engine=e, pages=[(p, t)]
                        )
                    )
    if reaped:
        logger.warning("re-enqueued %d pages that no worker was going to finish", reaped)
    return reaped
