"""Writes for documents, jobs and pages: the one place where their state changes.

The web side calls ``job_submit``; the worker calls ``page_claim`` and then exactly one of
``page_complete``, ``page_fail`` or ``page_retry_later`` with the claim it got.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import mimetypes
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePath

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone

from model.documents import DocumentError, DocumentInfo, inspect_document, safe_filename
from model.engines.base import HEADER_MODES, PageResult
from model.engines.registry import UnknownEngine, engine_class, engine_names
from model.pages import PageSelectionError, parse_page_selection
from model.textnorm import NormalizeError, parse_steps
from model.usage import job_usage
from webapp.accounts import services as account_services
from webapp.jobs.models import Document, Job, Page
from webapp.jobs.queueing import pages_enqueue, queue_depth
from webapp.results.models import CachedPage
from webapp.results.services import cached_page_store, cached_pages, cached_pages_forget
from webapp.webhooks import services as webhook_services

logger = logging.getLogger(__name__)

TABLE_FORMATS = ("markdown", "html")
# The `method` of a page answered from the result cache.
CACHE_METHOD = "cache"


class SubmissionError(ValueError):
    """A submission refused before anything was written. ``kind`` picks the HTTP answer."""

    def __init__(
        self, message: str, *, kind: str = "bad_parameter", retry_after: int | None = None
    ):
        super().__init__(message)
        # "bad_parameter" | "unprocessable" | "too_large" | "over_budget" | "rate_limited"
        # (retry_after: seconds) | "idempotency_mismatch"
        self.kind = kind
        self.retry_after = retry_after


@dataclass(frozen=True)
class JobOptions:
    table_format: str = "markdown"
    # Stop the job once its pages have used this many tokens (input + output).
    token_budget: int | None = None
    # Store figure crops beside the result and link them (engines that locate figures).
    figures: bool = False
    # Running heads and feet: "keep" or "drop" (jobs stored before this option dropped them).
    headers: str = "drop"
    # Canonical text normalisation steps (model.textnorm.parse_steps); "" for none.
    normalize: str = ""

    @classmethod
    def parse(
        cls,
        *,
        table_format: str | None = None,
        token_budget: int | None = None,
        figures: bool = False,
        headers: str | None = None,
        normalize: str | bool | None = None,
    ) -> JobOptions:
        """A request's options; what it leaves out comes from the server's defaults
        (FOLIO_TABLE_FORMAT, FOLIO_HEADERS, FOLIO_NORMALIZE)."""
        table_format = (table_format or settings.FOLIO_TABLE_FORMAT).strip().lower()
        if table_format not in TABLE_FORMATS:
            raise SubmissionError(
                f"table_format {table_format!r} is not one of: {', '.join(TABLE_FORMATS)}"
            )
        headers = (headers or settings.FOLIO_HEADERS).strip().lower()
        if headers not in HEADER_MODES:
            raise SubmissionError(f"headers {headers!r} is not one of: {', '.join(HEADER_MODES)}")
        try:
            steps = parse_steps(settings.FOLIO_NORMALIZE if normalize is None else normalize)
        except NormalizeError as exc:
            raise SubmissionError(str(exc)) from exc
        if token_budget is not None and token_budget < 1:
            raise SubmissionError(f"the token budget must be a positive number, not {token_budget}")
        return cls(
            table_format=table_format,
            token_budget=token_budget,
            figures=figures,
            headers=headers,
            normalize=steps,
        )

    @classmethod
    def from_dict(cls, options: dict) -> JobOptions:
        return cls(**{name: options[name] for name in cls.__dataclass_fields__ if name in options})

    def output_options(self) -> dict:
        """The options that change what an engine writes: part of the result cache key."""
        return {
            "table_format": self.table_format,
            "figures": self.figures,
            "headers": self.headers,
            "normalize": self.normalize,
        }

    def as_dict(self) -> dict:
        return {**self.output_options(), "token_budget": self.token_budget}


@dataclass(frozen=True)
class CachePolicy:
    use: bool = True
    max_age: timedelta | None = None  # None: any age


# --- submission -------------------------------------------------------------------------------


def job_submit(
    *,
    owner: AbstractBaseUser,
    data: bytes,
    filename: str | None,
    page_selection: str | None = None,
    engine: str | None = None,
    options: JobOptions | None = None,
    cache: CachePolicy | None = None,
    idempotency_key: str | None = None,
    webhook_url: str | None = None,
) -> Job:
    """Validate everything first, then write the document, job and pages in one transaction
    and enqueue the pages once it has committed: a refused submission leaves nothing behind.

    Pages whose transcription is in the result cache are written finished and never sent.

    With an ``idempotency_key``, the owner's earlier job with that key is answered again
    (marked ``job.idempotent_replay = True``) if the request is the same, and a different
    request with it is refused. Every other submission counts against the owner's rate limit
    and daily page quota (``SubmissionError`` of kind ``rate_limited``, nothing written)."""
    engine = _validated_engine(engine)
    upload_size_check(size=len(data))
    idempotency_key = (idempotency_key or "").strip()
    webhook_url = (webhook_url or "").strip()
    fingerprint = ""
    if idempotency_key:
        fingerprint = _request_fingerprint(
            data=data,
            filename=filename,
            page_selection=page_selection,
            engine=engine,
            options=options or JobOptions.parse(),
            webhook_url=webhook_url,
        )
        replay = _idempotent_replay(owner=owner, key=idempotency_key, fingerprint=fingerprint)
        if replay is not None:
            return replay
    _quota(account_services.request_rate_admit, user=owner)
    if webhook_url:
        try:
            webhook_url = webhook_services.webhook_url_validate(url=webhook_url)
        except webhook_services.WebhookError as exc:
            raise SubmissionError(str(exc)) from exc
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
    _quota(account_services.page_quota_check, user=owner, pages=len(page_numbers))
    options = options or JobOptions.parse()
    _token_budget_check(engine=engine, options=options, pages=len(page_numbers))
    sha256 = hashlib.sha256(data).hexdigest()
    stored_name = _store_content(data, sha256=sha256, mime_type=info.mime_type)
    cache = cache or CachePolicy()
    hits = (
        cached_pages(
            sha256=sha256,
            engine=engine,
            options=options.output_options(),
            pages=page_numbers,
            max_age=cache.max_age,
        )
        if cache.use
        else {}
    )

    try:
        job, document, pages = _job_create(
            owner=owner,
            sha256=sha256,
            stored_name=stored_name,
            info=info,
            filename=filename,
            data_size=len(data),
            engine=engine,
            page_selection=page_selection,
            options=options,
            page_numbers=page_numbers,
            hits=hits,
            idempotency_key=idempotency_key,
            fingerprint=fingerprint,
            webhook_url=webhook_url,
        )
    except IntegrityError:
        # Two requests with one idempotency key raced; the other one made the job.
        replay = idempotency_key and _idempotent_replay(
            owner=owner, key=idempotency_key, fingerprint=fingerprint
        )
        if not replay:
            raise
        return replay
    logger.info("job %s: %d pages of %s with %s", job.id, len(pages), document.id, engine)
    return job


def _job_create(
    *,
    owner,
    sha256: str,
    stored_name: str,
    info: DocumentInfo,
    filename: str | None,
    data_size: int,
    engine: str,
    page_selection: str | None,
    options: JobOptions,
    page_numbers: list[int],
    hits: dict,
    idempotency_key: str,
    fingerprint: str,
    webhook_url: str,
) -> tuple[Job, Document, list[Page]]:
    with transaction.atomic():
        _quota(account_services.page_quota_take, user=owner, pages=len(page_numbers))
        if webhook_url:
            webhook_services.endpoint_for_job_url(owner=owner, url=webhook_url)
        document, _ = Document.objects.get_or_create(
            owner=owner,
            sha256=sha256,
            defaults={
                "file": stored_name,
                "mime_type": info.mime_type,
                "page_count": info.page_count,
                "original_name": safe_filename(filename),
                "size": data_size,
            },
        )
        if document.file_deleted_at is not None:
            # Retention removed the file; these are the same bytes, stored again just now.
            Document.objects.filter(pk=document.pk).update(file=stored_name, file_deleted_at=None)
        job = Job.objects.create(
            owner=owner,
            document=document,
            engine=engine,
            page_selection=page_selection or "",
            options=options.as_dict(),
            pages_total=len(page_numbers),
            idempotency_key=idempotency_key,
            request_fingerprint=fingerprint,
            webhook_url=webhook_url,
        )
        now = timezone.now()
        pages = Page.objects.bulk_create(
            _new_page(job=job, number=number, hit=hits.get(number), now=now)
            for number in page_numbers
        )
        if hits:
            _job_count_cached_pages(job=job, hits=hits.values())
        # bulk_create gives ids back on PostgreSQL and SQLite, the two databases we support.
        messages = [(page.pk, page.task_id) for page in pages if page.number not in hits]
        if messages:
            transaction.on_commit(lambda: pages_send(engine=engine, pages=messages))
    return job, document, pages


def _quota(check, **kwargs) -> None:
    try:
        check(**kwargs)
    except account_services.QuotaExceeded as exc:
        if exc.retry_after is None:
            raise SubmissionError(str(exc), kind="too_large") from exc
        raise SubmissionError(str(exc), kind="rate_limited", retry_after=exc.retry_after) from exc


def _request_fingerprint(
    *,
    data: bytes,
    filename: str | None,
    page_selection: str | None,
    engine: str,
    options: JobOptions,
    webhook_url: str,
) -> str:
    """What makes two requests "the same" for an idempotency key: the file's bytes and name
    and every option, not the headers or the key used to send them."""
    request = {
        "sha256": hashlib.sha256(data).hexdigest(),
        "filename": filename or "",
        "pages": (page_selection or "").strip(),
        "engine": engine,
        "options": options.as_dict(),
        "webhook_url": webhook_url,
    }
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()


def _idempotent_replay(*, owner, key: str, fingerprint: str) -> Job | None:
    job = Job.objects.select_related("document").filter(owner=owner, idempotency_key=key).first()
    if job is None:
        return None
    if job.request_fingerprint != fingerprint:
        raise SubmissionError(
            f"the Idempotency-Key {key!r} was used for a different request (job {job.id}); "
            "use a new key for a new request",
            kind="idempotency_mismatch",
        )
    job.idempotent_replay = True
    return job


def _new_page(*, job: Job, number: int, hit: CachedPage | None, now) -> Page:
    if hit is None:
        return Page(job=job, number=number, task_id=uuid.uuid4(), enqueued_at=now)
    return Page(
        job=job,
        number=number,
        status=Page.Status.SUCCEEDED,
        markdown=hit.markdown,
        method=CACHE_METHOD,
        input_tokens=hit.input_tokens,
        output_tokens=hit.output_tokens,
        engine_seconds=0.0,
        enqueued_at=now,
        started_at=now,
        finished_at=now,
    )


def _job_count_cached_pages(*, job: Job, hits) -> None:
    hits = list(hits)
    Job.objects.filter(pk=job.pk).update(
        pages_done=F("pages_done") + len(hits),
        input_tokens=F("input_tokens") + sum(hit.input_tokens for hit in hits),
        output_tokens=F("output_tokens") + sum(hit.output_tokens for hit in hits),
    )
    _job_finalize_if_complete(job_id=job.pk)
    job.refresh_from_db()


def _token_budget_check(*, engine: str, options: JobOptions, pages: int) -> None:
    """Refuse up front what the page count alone proves is over budget (engines that read
    pages through a fixed number of visual tokens know their floor per page)."""
    if options.token_budget is None:
        return
    floor = getattr(engine_class(engine), "min_input_tokens_per_page", 0) * pages
    if floor > options.token_budget:
        raise SubmissionError(
            f"{pages} pages with {engine} take at least {floor} tokens, over the token budget "
            f"of {options.token_budget}; raise the budget or select fewer pages",
            kind="over_budget",
        )


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


def _store_content(data: bytes, *, sha256: str, mime_type: str) -> str:
    """Content-addressed: the same bytes are stored once, whoever uploads them and whatever
    they called them (the extension comes from the type the bytes proved, not the name)."""
    suffix = mimetypes.guess_extension(mime_type) or ""
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
    sha256: str


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
    )


def page_complete(*, claim: PageClaim, result: PageResult, engine_version: str) -> bool:
    """Save a transcription; ``False`` if this claim was superseded (nothing is written)."""
    quality = result.extra.pop("quality", None) or {}
    needs_review = bool(quality.get("needs_review"))
    with transaction.atomic():
        saved = Page.objects.filter(
            pk=claim.page_id, status=Page.Status.RUNNING, attempts=claim.attempts
        ).update(
            status=Page.Status.SUCCEEDED,
            needs_review=needs_review,
            quality=quality,
            extra=_page_extra(claim=claim, result=result),
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
                options=JobOptions.from_dict(claim.options).output_options(),
                page_number=claim.number,
                markdown=result.markdown,
                method=result.method,
                input_tokens=result.input_tokens,
                output_tokens=result.output_tokens,
            )
        _job_stop_at_token_budget(job_id=claim.job_id)
        webhook_services.page_event_record(job_id=claim.job_id, page_id=claim.page_id)
        _job_finalize_if_complete(job_id=claim.job_id)
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
    wall = (job.finished_at - job.started_at).total_seconds() if job.started_at else 0.0
    Job.objects.filter(pk=job_id).update(engine_metrics=job_usage(reports, wall_seconds=wall))


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


def retention_expiry(*, finished_at):
    hours = settings.FOLIO_RETENTION_HOURS
    return finished_at + timedelta(hours=hours) if hours else None


# --- maintenance ------------------------------------------------------------------------------


def pages_reap(
    *, stuck_after: timedelta, unsent_after: timedelta, lost_after: timedelta | None = None
) -> int:
    """Hand out again the pages that no message will ever finish: claimed by a worker that
    died (running far past the time limit), never sent (the broker was down at submit), or
    sent but lost (the broker restarted empty: its queue is empty while pages still wait).

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
    lost = _lost_pages(now=now, lost_after=unsent_after if lost_after is None else lost_after)
    for candidates in (stuck, unsent, *lost):
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
    _cancelled_job_pages_close(now=now, stuck_after=stuck_after)
    return reaped


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
    for engine in waiting.order_by().values_list("job__engine", flat=True).distinct():
        if queue_depth(engine=engine) == 0:
            lost.append(waiting.filter(job__engine=engine))
    return lost


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


# --- the job lifecycle: cancel, delete, expire ---------------------------------------------


def job_cancel(*, job: Job) -> bool:
    """Cancel a queued or running job: its queued pages are cancelled (their messages become
    no-ops at claim), pages running now may still finish and are kept. ``False`` if the job
    had already ended."""
    now = timezone.now()
    with transaction.atomic():
        cancelled = Job.objects.filter(pk=job.pk, status__in=Job.ACTIVE).update(
            status=Job.Status.CANCELLED,
            finished_at=now,
            expires_at=retention_expiry(finished_at=now),
        )
        if not cancelled:
            return False
        pages = Page.objects.filter(job_id=job.pk, status=Page.Status.QUEUED).update(
            status=Page.Status.CANCELLED, finished_at=now, error="the job was cancelled"
        )
        Job.objects.filter(pk=job.pk).update(pages_cancelled=F("pages_cancelled") + pages)
        webhook_services.job_event_record(job_id=job.pk)
    logger.info("job %s cancelled (%d pages not transcribed)", job.pk, pages)
    return True


def job_delete(*, job: Job) -> None:
    """Delete a job with its pages and deliveries, its document if no other job of the owner
    uses it, and the stored file if no other document needs it. A worker still on one of
    its pages finds nothing to save."""
    with transaction.atomic():
        document_id, name = job.document_id, job.document.file.name
        Job.objects.filter(pk=job.pk).delete()
        if not Job.objects.filter(document_id=document_id).exists():
            Document.objects.filter(pk=document_id).delete()
        transaction.on_commit(lambda: stored_files_delete_unused(names=[name]))
    logger.info("job %s deleted", job.pk)


def stored_files_delete_unused(*, names) -> int:
    """Delete stored files that no document with a live file refers to (files are shared by
    content between users, so one user's deletion must not take another's file)."""
    deleted = 0
    for name in set(names):
        if Document.objects.filter(file=name, file_deleted_at__isnull=True).exists():
            continue
        default_storage.delete(name)
        # What was read from the file goes with it: a deleted or expired document must not
        # be answered from the result cache.
        cached_pages_forget(sha256=PurePath(name).stem)
        deleted += 1
    return deleted


def jobs_expire(*, now=None, batch: int = 500) -> int:
    """Retention: delete the results of jobs past ``expires_at`` and then the files that no
    unexpired job needs. Runs from beat; safe to run twice (each step is conditional)."""
    now = now or timezone.now()
    due = list(
        Job.objects.filter(
            expires_at__lte=now, expired_at__isnull=True, status__in=Job.FINAL
        ).values_list("pk", "document_id")[:batch]
    )
    expired = 0
    for job_id, _ in due:
        with transaction.atomic():
            if Job.objects.filter(pk=job_id, expired_at__isnull=True).update(expired_at=now):
                Page.objects.filter(job_id=job_id).update(markdown="")
                expired += 1
    names = []
    for document in Document.objects.filter(
        pk__in={document_id for _, document_id in due}, file_deleted_at__isnull=True
    ):
        if Job.objects.filter(document=document, expired_at__isnull=True).exists():
            continue  # a newer job of the same document still needs the file
        if Document.objects.filter(pk=document.pk, file_deleted_at__isnull=True).update(
            file_deleted_at=now
        ):
            names.append(document.file.name)
    files = stored_files_delete_unused(names=names)
    if expired:
        logger.info("retention: expired %d jobs, deleted %d files", expired, files)
    return expired
