"""The asynchronous twin of ``Client``, for many files in flight from one event loop.

async with AsyncClient() as folio:
    job = await folio.wait((await folio.submit("scan.pdf")).id)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime
from typing import Any

import httpx

from folio_client import _calls
from folio_client._calls import Call, FileSource
from folio_client.client import PAGES_PER_REQUEST, PDF_WAIT, POLL_MAX, POLL_MIN, _client_options
from folio_client.errors import ConnectionFailed, WaitTimeout
from folio_client.models import Engine, Health, Job, JobList, JobResult, PageStatus, UsageTotals
from folio_client.retry import Attempts, Pause, RetryPolicy

logger = logging.getLogger(__name__)


class AsyncClient:
    """Folio's public API over HTTP, with asyncio. Uploads are streamed from the file; its
    64 KiB reads happen on the event loop (local files: short, and no thread per file)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 100,
    ) -> None:
        options = _client_options(base_url, api_key, timeout)
        self.base_url: str = options["base_url"]
        self.retry = retry or RetryPolicy()
        self._pause = Pause()
        limits = httpx.Limits(max_connections=max_connections)
        self._http = httpx.AsyncClient(**options, transport=transport, limits=limits)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: Call) -> httpx.Response:
        attempts = Attempts(self.retry)
        while True:
            if wait := self._pause.remaining():
                await asyncio.sleep(wait)
            try:
                with call.request_arguments() as arguments:
                    response = await self._http.request(call.method, call.path, **arguments)
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
                await asyncio.sleep(delay)
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
            await asyncio.sleep(delay)

    async def submit(
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
        return _calls.parse_job(await self._send(call))

    async def submit_url(
        self,
        url: str,
        *,
        pages: str | None = None,
        engine: str | None = None,
        table_format: str | None = None,
        speaker_notes: bool = False,
        comments: bool = False,
    ) -> Job:
        call = _calls.submit_url(
            url,
            pages=pages,
            engine=engine,
            table_format=table_format,
            speaker_notes=speaker_notes,
            comments=comments,
        )
        return await self.job(_calls.job_id_of_accepted(await self._send(call)))

    async def job(self, job_id: str, *, pages: bool = False) -> Job:
        return _calls.parse_job(await self._send(_calls.job(job_id, pages=pages)))

    async def iter_pages(
        self,
        job_id: str,
        *,
        status: str | list[str] | None = None,
        needs_review: bool | None = None,
        sort: str | None = None,
    ) -> AsyncIterator[PageStatus]:
        page = 1
        while True:
            call = _calls.pages(
                job_id, status=status, needs_review=needs_review, sort=sort, page=page,
                page_size=PAGES_PER_REQUEST,
            )  # fmt: skip
            listing = _calls.parse_pages(await self._send(call))
            for item in listing.results:
                yield item
            if not listing.next:
                return
            page += 1

    async def with_failed_pages(self, job: Job) -> Job:
        """The job with its failed pages' details, which ``failure_reason()`` reads."""
        if job.pages is not None or job.page_summary.get("failed") == 0:
            return job  # listed already, or none failed (a submission's answer has no count)
        failed = [page async for page in self.iter_pages(job.id, status="failed")]
        return replace(job, pages=failed)

    async def wait(
        self,
        job_id: str,
        *,
        timeout: float | None = None,
        poll_min: float = POLL_MIN,
        poll_max: float = POLL_MAX,
    ) -> Job:
        deadline = None if timeout is None else time.monotonic() + timeout
        polls = 0
        while not (job := await self.job(job_id)).is_final:
            delay = _calls.poll_delay(job, polls, minimum=poll_min, maximum=poll_max)
            if deadline is not None and time.monotonic() + delay > deadline:
                raise WaitTimeout(f"job {job_id} is still {job.status} after {timeout} s", job=job)
            await asyncio.sleep(delay)
            polls += 1
        return job

    async def result_markdown(self, job_id: str) -> str:
        return (await self._send(_calls.result_markdown(job_id))).text

    async def result(self, job_id: str) -> JobResult:
        return _calls.parse_result(await self._send(_calls.result_json(job_id)))

    async def result_blocks(self, job_id: str) -> dict[str, Any]:
        """Every page's layout blocks: type, Markdown, box in points (origin top-left)."""
        blocks: dict[str, Any] = (await self._send(_calls.result_format(job_id, "blocks"))).json()
        return blocks

    async def result_chunks(self, job_id: str, *, max_tokens: int | None = None) -> dict[str, Any]:
        """Heading-aware chunks, each with its heading path, pages and boxes."""
        call = _calls.result_format(job_id, "chunks", max_tokens=max_tokens)
        chunks: dict[str, Any] = (await self._send(call)).json()
        return chunks

    async def result_pdf(self, job_id: str, *, timeout: float | None = PDF_WAIT) -> bytes:
        """The searchable PDF: scans with an invisible text layer, born-digital pages as is.
        A worker builds it when it is first asked for: while the server answers ``202``
        this asks again after its ``Retry-After``; ``WaitTimeout`` after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            response = await self._send(_calls.result_format(job_id, "pdf"))
            delay = _calls.being_prepared(response)
            if delay is None:
                return response.content
            if deadline is not None and time.monotonic() + delay > deadline:
                raise WaitTimeout(
                    f"the searchable PDF of job {job_id} was still being built after {timeout} s",
                    job=None,
                )
            await asyncio.sleep(delay)

    async def result_markdown_with_markers(self, job_id: str, *, marker: str | None = None) -> str:
        """The joined Markdown with a marker line before each page (``<!-- page 3 -->``, or
        ``marker`` with ``{page}`` in it)."""
        call = _calls.result_format(job_id, "markdown", page_markers="true", page_marker=marker)
        return (await self._send(call)).text

    async def convert(
        self, file: FileSource, *, timeout: float | None = None, **options: Any
    ) -> str:
        job = await self.wait((await self.submit(file, **options)).id, timeout=timeout)
        return await self.result_markdown(job.id)

    async def jobs(
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
        return _calls.parse_jobs(await self._send(call))

    async def iter_jobs(self, **filters: Any) -> AsyncIterator[Job]:
        page = 1
        while True:
            listing = await self.jobs(**filters, page=page, page_size=100)
            for job in listing.results:
                yield job
            if not listing.next:
                return
            page += 1

    async def cancel(self, job_id: str) -> Job:
        return _calls.parse_job(await self._send(_calls.cancel(job_id)))

    async def delete(self, job_id: str) -> None:
        await self._send(_calls.delete(job_id))

    async def usage(
        self,
        *,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
    ) -> UsageTotals:
        totals = UsageTotals()
        async for job in self.iter_jobs(created_after=created_after, created_before=created_before):
            totals = totals.add(job)
        return totals

    async def engines(self) -> list[Engine]:
        return _calls.parse_engines(await self._send(_calls.engines()))

    async def health(self) -> Health:
        live = ready = None
        try:
            live = await self._http.get("/healthz")
            ready = await self._http.get("/readyz")
        except httpx.TransportError as exc:
            logger.info("health: %r", exc)
        return _calls.parse_health(live, ready)
