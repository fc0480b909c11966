"""The synchronous client.

from folio_client import Client

with Client() as folio:                      # FOLIO_URL / FOLIO_API_KEY / config file
    job = folio.submit("scan.pdf", pages="1-3")
    job = folio.wait(job.id)
    print(folio.result_markdown(job.id))
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

import httpx

from folio_client import _calls
from folio_client._calls import Call, FileSource
from folio_client.config import resolve
from folio_client.errors import ConnectionFailed, WaitTimeout
from folio_client.models import (
    Engine,
    Health,
    Job,
    JobList,
    JobResult,
    PageStatus,
    UsageTotals,
)
from folio_client.retry import Attempts, Pause, RetryPolicy

logger = logging.getLogger(__name__)

USER_AGENT = "folio-client/0.1.0"
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
POLL_MIN, POLL_MAX = 0.25, 5.0
# Seconds result_pdf asks again while a worker builds the PDF (the server's own limit on a
# build is FOLIO_SEARCHABLE_PDF_TIMEOUT, 300 s by default).
PDF_WAIT = 600.0
# Pages per request of iter_pages (the server's largest page of pages).
PAGES_PER_REQUEST = 500


def _client_options(base_url: str | None, api_key: str | None, timeout: Any) -> dict[str, Any]:
    settings = resolve(base_url, api_key)
    headers = {"User-Agent": USER_AGENT}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    return {
        "base_url": settings.url,
        "headers": headers,
        "timeout": DEFAULT_TIMEOUT if timeout is None else timeout,
    }


class Client:
    """Folio's public API over HTTP. Thread-safe: one client can serve many threads."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        options = _client_options(base_url, api_key, timeout)
        self.base_url: str = options["base_url"]
        self.retry = retry or RetryPolicy()
        self._pause = Pause()
        self._http = httpx.Client(**options, transport=transport)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- sending, with retries ------------------------------------------------------------

    def _send(self, call: Call) -> httpx.Response:
        attempts = Attempts(self.retry)
        while True:
            if wait := self._pause.remaining():
                time.sleep(wait)
            try:
                with call.request_arguments() as arguments:
                    response = self._http.request(call.method, call.path, **arguments)
            except httpx.TransportError as exc:
                delay = attempts.after_error(exc)
                if delay is None:
                    raise ConnectionFailed(
                        f"cannot reach {self.base_url} ({call.method} {call.path}): "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                logger.warning(
                    "%s %s: %s: %s; again in %.1f s",
                    call.method, call.path, type(exc).__name__, exc, delay,
                )  # fmt: skip
                time.sleep(delay)
                continue
            delay = attempts.after_response(response)
            if delay is None:
                _calls.raise_for_error(response)
                return response
            if response.status_code in (429, 503):
                self._pause.extend(delay)
            # A wait the server asked for is worth seeing: it explains a stalled run.
            logger.warning(
                "%s %s: %s; again in %.1f s", call.method, call.path, response.status_code, delay
            )
            time.sleep(delay)

    # --- jobs -------------------------------------------------------------------------------

    def submit(
        self,
        file: FileSource,
        *,
        filename: str | None = None,
        pages: str | None = None,
        engine: str | None = None,
        table_format: str | None = None,
        webhook_url: str | None = None,
        idempotency_key: str | None = None,
        speaker_notes: bool = False,
        comments: bool = False,
        ocr_language: str | None = None,
    ) -> Job:
        """Upload a file (a path or a binary file object, streamed) as a new job;
        ``speaker_notes`` and ``comments`` add an Office document's speaker notes and
        reviewers' comments to its text (both off by default); ``ocr_language`` names a
        scan's language in Tesseract's codes ("kor", "fas+ara") for the lines the server's
        bundled OCR cannot read (found on the page when left out). ``engine="auto"`` reads
        every page with ``local`` and the pages it reads badly again with a VLM engine: each
        page's ``engine`` and ``escalation`` say which reading it holds and why, ``Job.auto``
        the share sent on and the VLM seconds."""
        call = _calls.submit(
            file,
            filename=filename,
            pages=pages,
            engine=engine,
            table_format=table_format,
            webhook_url=webhook_url,
            idempotency_key=idempotency_key,
            speaker_notes=speaker_notes,
            comments=comments,
            ocr_language=ocr_language,
        )
        return _calls.parse_job(self._send(call))

    def submit_url(
        self,
        url: str,
        *,
        pages: str | None = None,
        engine: str | None = None,
        table_format: str | None = None,
        speaker_notes: bool = False,
        comments: bool = False,
    ) -> Job:
        """Have the server fetch a document from a URL (through the Reader endpoint); the
        options are ``submit``'s."""
        call = _calls.submit_url(
            url,
            pages=pages,
            engine=engine,
            table_format=table_format,
            speaker_notes=speaker_notes,
            comments=comments,
        )
        return self.job(_calls.job_id_of_accepted(self._send(call)))

    def job(self, job_id: str, *, pages: bool = False) -> Job:
        """The job's status; with ``pages``, every page's details too (``job.pages``; for a
        long job ``iter_pages`` fetches them a page at a time instead)."""
        return _calls.parse_job(self._send(_calls.job(job_id, pages=pages)))

    def iter_pages(
        self,
        job_id: str,
        *,
        status: str | list[str] | None = None,
        needs_review: bool | None = None,
        sort: str | None = None,
    ) -> Iterator[PageStatus]:
        """The job's pages with every detail, in page order (``sort="review"``: the most
        doubtful first), 500 per request."""
        page = 1
        while True:
            call = _calls.pages(
                job_id, status=status, needs_review=needs_review, sort=sort, page=page,
                page_size=PAGES_PER_REQUEST,
            )  # fmt: skip
            listing = _calls.parse_pages(self._send(call))
            yield from listing.results
            if not listing.next:
                return
            page += 1

    def with_failed_pages(self, job: Job) -> Job:
        """The job with its failed pages' details, which ``failure_reason()`` reads."""
        if job.pages is not None or job.page_summary.get("failed") == 0:
            return job  # listed already, or none failed (a submission's answer has no count)
        return replace(job, pages=list(self.iter_pages(job.id, status="failed")))

    def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        poll_min: float = POLL_MIN,
        poll_max: float = POLL_MAX,
    ) -> Job:
        """Poll until the job is final; ``WaitTimeout`` (carrying the job) after ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        polls = 0
        while not (job := self.job(job_id)).is_final:
            delay = _calls.poll_delay(job, polls, minimum=poll_min, maximum=poll_max)
            if deadline is not None and time.monotonic() + delay > deadline:
                raise WaitTimeout(f"job {job_id} is still {job.status} after {timeout} s", job=job)
            time.sleep(delay)
            polls += 1
        return job

    def result_markdown(self, job_id: str) -> str:
        return self._send(_calls.result_markdown(job_id)).text

    def result(self, job_id: str) -> JobResult:
        return _calls.parse_result(self._send(_calls.result_json(job_id)))

    def result_blocks(self, job_id: str) -> dict[str, Any]:
        """Every page's layout blocks: type, Markdown, box in points (origin top-left)."""
        blocks: dict[str, Any] = self._send(_calls.result_format(job_id, "blocks")).json()
        return blocks

    def result_chunks(self, job_id: str, *, max_tokens: int | None = None) -> dict[str, Any]:
        """Heading-aware chunks, each with its heading path, pages and boxes."""
        call = _calls.result_format(job_id, "chunks", max_tokens=max_tokens)
        chunks: dict[str, Any] = self._send(call).json()
        return chunks

    def result_pdf(self, job_id: str, *, timeout: float | None = PDF_WAIT) -> bytes:
        """The searchable PDF: scans with an invisible text layer, born-digital pages as is.
        A worker builds it when it is first asked for: while the server answers ``202``
        this asks again after its ``Retry-After``; ``WaitTimeout`` after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            response = self._send(_calls.result_format(job_id, "pdf"))
            delay = _calls.being_prepared(response)
            if delay is None:
                return response.content
            if deadline is not None and time.monotonic() + delay > deadline:
                raise WaitTimeout(
                    f"the searchable PDF of job {job_id} was still being built after {timeout} s",
                    job=None,
                )
            time.sleep(delay)

    def result_markdown_with_markers(self, job_id: str, *, marker: str | None = None) -> str:
        """The joined Markdown with a marker line before each page (``<!-- page 3 -->``, or
        ``marker`` with ``{page}`` in it)."""
        call = _calls.result_format(job_id, "markdown", page_markers="true", page_marker=marker)
        return self._send(call).text

    def convert(self, file: FileSource, *, timeout: float | None = None, **options: Any) -> str:
        """Submit, wait and answer the Markdown (failed pages are notes in it)."""
        job = self.wait(self.submit(file, **options).id, timeout=timeout)
        return self.result_markdown(job.id)

    def jobs(
        self,
        *,
        status: str | list[str] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        page: int = 1,
        page_size: int = 20,
    ) -> JobList:
        call = _calls.jobs(
            status=status,
            created_after=created_after,
            created_before=created_before,
            page=page,
            page_size=page_size,
        )
        return _calls.parse_jobs(self._send(call))

    def iter_jobs(self, **filters: Any) -> Iterator[Job]:
        """Every job matching the filters, newest first, a hundred per request."""
        page = 1
        while True:
            listing = self.jobs(**filters, page=page, page_size=100)
            yield from listing.results
            if not listing.next:
                return
            page += 1

    def cancel(self, job_id: str) -> Job:
        return _calls.parse_job(self._send(_calls.cancel(job_id)))

    def delete(self, job_id: str) -> None:
        self._send(_calls.delete(job_id))

    def usage(
        self,
        *,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
    ) -> UsageTotals:
        """Tokens and pages summed over your jobs created in the window."""
        totals = UsageTotals()
        for job in self.iter_jobs(created_after=created_after, created_before=created_before):
            totals = totals.add(job)
        return totals

    # --- the server -------------------------------------------------------------------------

    def engines(self) -> list[Engine]:
        return _calls.parse_engines(self._send(_calls.engines()))

    def health(self) -> Health:
        live = ready = None
        try:
            live = self._http.get("/healthz")
            ready = self._http.get("/readyz")
        except httpx.TransportError as exc:
            logger.info("health: %r", exc)
        return _calls.parse_health(live, ready)
