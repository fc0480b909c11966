"""Submission: a request is checked (``submission_validate``, nothing written) into a
``Submission``, and its document, job and pages are then written from it in one transaction
(``job_create``); the pages' messages go out once that has committed."""

from __future__ import annotations

import hashlib
import json
import logging
import mimetypes
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from model.documents import DocumentError, DocumentInfo, inspect_document, safe_filename
from model.engines.auto import AUTO, VLM_PREFERENCE, escalates, reading_engine
from model.engines.registry import engine_spec, job_engine_names
from model.formats.types import format_of
from model.pages import PageSelectionError, parse_page_selection
from webapp.accounts import services as account_services
from webapp.core.storage import StorageFailed, StorageFull, content_store, stored_content_lock
from webapp.core.workers import unserved_engine_refusal
from webapp.jobs.models import Document, Job, Page
from webapp.jobs.services.job_lifecycle import stored_files_delete_unused
from webapp.jobs.services.options import CachePolicy, JobOptions, Refusal, SubmissionError
from webapp.jobs.services.page_lifecycle import job_finalize_if_complete
from webapp.jobs.services.review import review_judged
from webapp.jobs.services.sending import pages_send_soon
from webapp.results.models import CachedPage
from webapp.results.services import cached_pages
from webapp.webhooks import services as webhook_services

logger = logging.getLogger(__name__)

# The `method` of a page answered from the result cache.
CACHE_METHOD = "cache"


@dataclass(frozen=True)
class Submission:
    """A request that passed every check, with nothing written yet: what creating its job
    needs."""

    owner: User
    data: bytes
    sha256: str
    filename: str | None
    info: DocumentInfo
    engine: str
    page_selection: str | None
    page_numbers: list[int]
    options: JobOptions
    webhook_url: str
    idempotency_key: str
    fingerprint: str
    # The anonymous client whose quotas this spends (empty for an account's own request).
    client: str = ""


def job_submit(
    *,
    owner: User,
    data: bytes,
    filename: str | None,
    page_selection: str | None = None,
    engine: str | None = None,
    options: JobOptions | None = None,
    cache: CachePolicy | None = None,
    idempotency_key: str | None = None,
    webhook_url: str | None = None,
    client: str = "",
) -> Job:
    """Validate everything first, then write the document, job and pages in one transaction
    and enqueue the pages once it has committed: a refused submission leaves nothing behind.

    Pages whose transcription is in the result cache are written finished and never sent.

    With an ``idempotency_key``, the owner's earlier job with that key is answered again
    (marked ``job.idempotent_replay = True``) if the request is the same, and a different
    request with it is refused. Every other submission that is accepted counts against the
    owner's rate limit and daily page quota (``SubmissionError`` of kind ``rate_limited``,
    nothing written); a refused one counts nothing. ``client`` names the anonymous client of a
    request made for the shared anonymous account, whose quotas are counted per client."""
    engine = _validated_engine(engine)
    upload_size_check(size=len(data))
    options = options or JobOptions.parse()
    idempotency_key = (idempotency_key or "").strip()
    webhook_url = (webhook_url or "").strip()
    fingerprint = ""
    if idempotency_key:
        fingerprint = _request_fingerprint(
            data=data,
            filename=filename,
            page_selection=page_selection,
            engine=engine,
            options=options,
            webhook_url=webhook_url,
        )
        replay = _idempotent_replay(owner=owner, key=idempotency_key, fingerprint=fingerprint)
        if replay is not None:
            return replay
    _engine_served_check(engine)
    # A replay is free. A client already at its rate limit is refused before the costly
    # checks of the document; the request is counted only once its job is written.
    _quota(account_services.request_rate_check, user=owner, client=client)
    submission = submission_validate(
        owner=owner,
        data=data,
        filename=filename,
        page_selection=page_selection,
        engine=engine,
        options=options,
        webhook_url=webhook_url,
        idempotency_key=idempotency_key,
        fingerprint=fingerprint,
        client=client,
    )
    with _stored_files_taken_back_on_refusal() as fresh:
        return job_create(submission=submission, cache=cache or CachePolicy(), fresh=fresh)


def jobs_submit_together(
    *,
    owner: User,
    documents: Sequence[tuple[bytes, str | None]],
    engine: str | None = None,
    client: str = "",
) -> list[Job]:
    """One job per document, all or none: every document is checked, and the quotas for all
    of them, before anything is written; then the jobs are written in one transaction, so a
    refusal of the last one (a quota reached meanwhile) takes back the others, charges
    included, and sends no page."""
    engine = _validated_engine(engine)
    for data, _ in documents:
        upload_size_check(size=len(data))
    _engine_served_check(engine)
    _quota(account_services.request_rate_check, user=owner, client=client, amount=len(documents))
    options = JobOptions.parse()
    submissions = [
        submission_validate(
            owner=owner,
            data=data,
            filename=filename,
            page_selection=None,
            engine=engine,
            options=options,
            client=client,
        )
        for data, filename in documents
    ]
    pages = sum(len(submission.page_numbers) for submission in submissions)
    _quota(account_services.page_quota_check, user=owner, client=client, pages=pages)
    with _stored_files_taken_back_on_refusal() as fresh, transaction.atomic():
        return [
            job_create(submission=submission, cache=CachePolicy(), fresh=fresh)
            for submission in submissions
        ]


@contextmanager
def _stored_files_taken_back_on_refusal() -> Iterator[list[str]]:
    """The names of files a submission stored for the first time (``job_create`` adds them);
    if it is then refused (a quota reached meanwhile by another request, a later job of the
    same chat request refused), they are deleted again once its transaction is undone, unless
    a document that committed meanwhile holds the same bytes. Refused work leaves nothing
    behind, in storage as in the database."""
    fresh: list[str] = []
    try:
        yield fresh
    except BaseException:
        if fresh:
            stored_files_delete_unused(names=fresh)
        raise


def submission_validate(
    *,
    owner: User,
    data: bytes,
    filename: str | None,
    page_selection: str | None,
    engine: str,
    options: JobOptions,
    webhook_url: str = "",
    idempotency_key: str = "",
    fingerprint: str = "",
    client: str = "",
) -> Submission:
    """Check a request's webhook URL, document, pages, page quota and token budget; raise
    ``SubmissionError`` on the first that fails. Reads only: nothing is written."""
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
            kind=Refusal.TOO_LARGE,
        )
    _quota(account_services.page_quota_check, user=owner, client=client, pages=len(page_numbers))
    _token_budget_check(engine=engine, options=options, pages=len(page_numbers))
    return Submission(
        owner=owner,
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        filename=filename,
        info=info,
        engine=engine,
        page_selection=page_selection,
        page_numbers=page_numbers,
        options=options,
        webhook_url=webhook_url,
        idempotency_key=idempotency_key,
        fingerprint=fingerprint,
        client=client,
    )


def job_create(
    *, submission: Submission, cache: CachePolicy, fresh: list[str] | None = None
) -> Job:
    """Answer what the result cache holds, check the token budget against the tokens those
    pages were counted at, then store the document's bytes and write the job. The name of a
    file stored for the first time here is added to ``fresh``, for the caller to take back
    should the submission be refused after all."""
    hits = _cache_hits(submission, cache) if cache.use else {}
    _token_budget_check(
        engine=submission.engine,
        options=submission.options,
        pages=len(submission.page_numbers),
        cached=list(hits.values()),
    )
    with transaction.atomic():
        # From finding the file stored to the document that needs it committed, no deletion
        # of unused files can take it (``stored_content_lock``).
        stored_content_lock(submission.sha256)
        stored_name, stored_now = _stored_content(
            submission.data, sha256=submission.sha256, mime_type=submission.info.mime_type
        )
        if stored_now and fresh is not None:
            fresh.append(stored_name)
        try:
            job, document, pages = _job_write(submission, stored_name=stored_name, hits=hits)
        except IntegrityError:
            # Two requests with one idempotency key raced; the other one made the job.
            replay = submission.idempotency_key and _idempotent_replay(
                owner=submission.owner,
                key=submission.idempotency_key,
                fingerprint=submission.fingerprint,
            )
            if not replay:
                raise
            return replay
    logger.info(
        "job %s: %d pages of %s with %s", job.id, len(pages), document.id, submission.engine
    )
    return job


def _cache_hits(submission: Submission, cache: CachePolicy) -> dict[int, CachedPage]:
    """The pages the result cache answers. An ``auto`` job takes a VLM engine's reading (the
    best engine first), else a local reading whose score is under the auto threshold (one
    over it would be sent on); each is the reading of the engine that produced it."""
    lookup = partial(
        cached_pages,
        sha256=submission.sha256,
        options=submission.options.output_options(),
        max_age=cache.max_age,
        owner_id=_cache_owner(submission.owner),
    )
    if submission.engine != AUTO:
        return lookup(engine=submission.engine, pages=submission.page_numbers)
    hits: dict[int, CachedPage] = {}
    for engine in (*VLM_PREFERENCE, reading_engine(AUTO)):
        left = [number for number in submission.page_numbers if number not in hits]
        if not left:
            break
        for number, hit in lookup(engine=engine, pages=left).items():
            if engine in VLM_PREFERENCE or not escalates(
                (hit.quality or {}).get("score"), settings.FOLIO_AUTO_THRESHOLD
            ):
                hits[number] = hit
    return hits


def _cache_owner(owner: User) -> int | None:
    """Whose cached readings may answer this submission: the owner's own. Not the shared
    anonymous account's, which would let one anonymous client learn what another read."""
    if account_services.is_anonymous_owner(owner):
        return None
    return owner.pk


def _job_write(
    submission: Submission, *, stored_name: str, hits: dict
) -> tuple[Job, Document, list[Page]]:
    owner, engine = submission.owner, submission.engine
    with transaction.atomic():
        client = submission.client
        _quota(account_services.request_rate_take, user=owner, client=client)
        _quota(
            account_services.page_quota_take,
            user=owner,
            client=client,
            pages=len(submission.page_numbers),
        )
        if submission.webhook_url:
            webhook_services.endpoint_for_job_url(owner=owner, url=submission.webhook_url)
        document, _ = Document.objects.get_or_create(
            owner=owner,
            sha256=submission.sha256,
            defaults={
                "file": stored_name,
                "mime_type": submission.info.mime_type,
                "page_count": submission.info.page_count,
                "original_name": safe_filename(submission.filename),
                "title": submission.info.title,
                "size": len(submission.data),
            },
        )
        if document.file_deleted_at is not None:
            # Retention removed the file; these are the same bytes, stored again just now.
            Document.objects.filter(pk=document.pk).update(file=stored_name, file_deleted_at=None)
        job = Job.objects.create(
            owner=owner,
            document=document,
            engine=engine,
            page_selection=submission.page_selection or "",
            options=submission.options.as_dict(),
            pages_total=len(submission.page_numbers),
            idempotency_key=submission.idempotency_key,
            request_fingerprint=submission.fingerprint,
            webhook_url=submission.webhook_url,
        )
        now = timezone.now()
        pages = Page.objects.bulk_create(
            _new_page(job=job, number=number, hit=hits.get(number), now=now)
            for number in submission.page_numbers
        )
        if hits:
            _job_count_cached_pages(job=job, pages=pages)
        # bulk_create gives ids back on PostgreSQL and SQLite, the two databases we support.
        messages = [(page.pk, page.task_id) for page in pages if page.number not in hits]
        if messages:
            first = reading_engine(engine)
            transaction.on_commit(lambda: pages_send_soon(engine=first, pages=messages))
    return job, document, pages


def _quota(check, **kwargs) -> None:
    try:
        check(**kwargs)
    except account_services.QuotaExceeded as exc:
        if exc.retry_after is None:
            raise SubmissionError(str(exc), kind=Refusal.TOO_LARGE) from exc
        raise SubmissionError(
            str(exc), kind=Refusal.RATE_LIMITED, retry_after=exc.retry_after
        ) from exc


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
            kind=Refusal.IDEMPOTENCY_MISMATCH,
        )
    job.idempotent_replay = True  # type: ignore[attr-defined]  # read by the API views
    return job


def _new_page(*, job: Job, number: int, hit: CachedPage | None, now) -> Page:
    if hit is None:
        engine = reading_engine(job.engine)
        return Page(job=job, number=number, task_id=uuid.uuid4(), enqueued_at=now, engine=engine)
    quality = review_judged(hit.quality, JobOptions.from_dict(job.options))
    return Page(
        job=job,
        number=number,
        engine=hit.engine,
        status=Page.Status.SUCCEEDED,
        markdown=hit.markdown,
        layout=hit.layout,
        method=CACHE_METHOD,
        quality=quality,
        review_score=quality.get("score"),
        needs_review=quality["needs_review"],
        input_tokens=hit.input_tokens,
        output_tokens=hit.output_tokens,
        engine_seconds=0.0,
        enqueued_at=now,
        started_at=now,
        finished_at=now,
    )


def _job_count_cached_pages(*, job: Job, pages: list[Page]) -> None:
    hits = [page for page in pages if page.method == CACHE_METHOD]
    Job.objects.filter(pk=job.pk).update(
        pages_done=F("pages_done") + len(hits),
        pages_needing_review=F("pages_needing_review") + sum(p.needs_review for p in hits),
        input_tokens=F("input_tokens") + sum(hit.input_tokens for hit in hits),
        output_tokens=F("output_tokens") + sum(hit.output_tokens for hit in hits),
    )
    job_finalize_if_complete(job_id=job.pk)
    job.refresh_from_db()


def _token_budget_check(
    *, engine: str, options: JobOptions, pages: int, cached: Sequence[CachedPage] = ()
) -> None:
    """Refuse before any work what is sure to exceed the budget: the tokens the ``cached``
    pages were counted at, plus the engine's per-page floor for each page left to read.
    The message is Reader's (``Token budget (B) exceeded, intended charge amount C``)."""
    budget = options.token_budget
    if budget is None:
        return
    floor = _token_floor(engine)
    counted = sum(page.input_tokens + page.output_tokens for page in cached)
    to_read = pages - len(cached)
    charge = counted + floor * to_read
    if charge <= budget:
        return
    parts = []
    if cached:
        parts.append(f"{len(cached)} pages already read cost {counted} tokens")
    if to_read and floor:
        parts.append(f"{to_read} pages with {engine} take at least {floor} tokens each")
    raise SubmissionError(
        f"Token budget ({budget}) exceeded, intended charge amount {charge} "
        f"({' and '.join(parts)}); raise the budget or select fewer pages",
        kind=Refusal.OVER_BUDGET,
    )


def _token_floor(engine: str) -> int:
    """Input tokens a page costs at least with ``engine`` (0 where a page may cost none; an
    ``auto`` job's page costs what ``local``'s does, and more only if it is sent on)."""
    return engine_spec(reading_engine(engine)).min_input_tokens_per_page


def upload_size_check(*, size: int) -> None:
    """Refuse an oversized upload; the API calls it before reading the body into memory."""
    if size > settings.FOLIO_MAX_UPLOAD_BYTES:
        raise SubmissionError(
            f"the file is {size:,} bytes; this server accepts at most "
            f"{settings.FOLIO_MAX_UPLOAD_BYTES:,}",
            kind=Refusal.TOO_LARGE,
        )


def _validated_engine(engine: str | None) -> str:
    engine = (engine or settings.FOLIO_DEFAULT_ENGINE).strip()
    if engine not in job_engine_names():  # names only: the web process imports no engine
        raise SubmissionError(
            f"unknown engine {engine!r}; known engines: {', '.join(job_engine_names())}"
        )
    return engine


def _engine_served_check(engine: str) -> None:
    """A job for an engine that no live worker serves would wait for nothing: refuse it
    while the client is still there to hear why. An ``auto`` job needs ``local``; without a
    VLM engine served it is read by ``local`` alone, and says so page by page."""
    refusal = unserved_engine_refusal(reading_engine(engine))
    if refusal:
        raise SubmissionError(refusal)


def _inspected(data: bytes) -> DocumentInfo:
    try:
        # A workbook past the pages a job may take is refused where its count passes them.
        return inspect_document(data, max_pages=settings.FOLIO_MAX_PAGES)
    except DocumentError as exc:
        code = getattr(exc, "code", "")
        kind = Refusal.TOO_LARGE if code == "too_large" else Refusal.UNPROCESSABLE
        if code in ("empty", "unsupported"):
            kind = Refusal.BAD_PARAMETER
        raise SubmissionError(str(exc), kind=kind) from exc


# Seconds a client is asked to wait after the storage was full or failing.
STORAGE_RETRY_AFTER_SECONDS = 60


def _stored_content(data: bytes, *, sha256: str, mime_type: str) -> tuple[str, bool]:
    """Content-addressed: the same bytes are stored once, whoever uploads them and whatever
    they called them (the extension comes from the type the bytes proved, not the name); a
    stored file is reused only once its size and hash are checked (``content_store``). The
    name, and whether this call stored the file. A full or failing storage refuses the
    submission (507 or 503, with ``Retry-After``): nothing is stored, and the transaction
    that would have written the job is undone."""
    fmt = format_of(mime_type)
    suffix = fmt.extension if fmt else (mimetypes.guess_extension(mime_type) or "")
    name = f"documents/{sha256[:2]}/{sha256}{suffix}"
    try:
        return name, content_store(name, data, sha256=sha256)
    except StorageFull as exc:
        logger.error("document %s not stored: %s", sha256[:12], exc)
        raise SubmissionError(
            f"{exc}: nothing was saved; retry in a minute, or ask the operator to free space",
            kind=Refusal.STORAGE_FULL,
            retry_after=STORAGE_RETRY_AFTER_SECONDS,
        ) from exc
    except StorageFailed as exc:
        logger.exception("document %s not stored", sha256[:12])
        raise SubmissionError(
            f"{exc}: nothing was saved; retry in a minute",
            kind=Refusal.STORAGE_FAILED,
            retry_after=STORAGE_RETRY_AFTER_SECONDS,
        ) from exc
