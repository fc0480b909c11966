"""The API's calls as data (method, path, parameters, upload) and the parsing of their
answers: written once, sent by the sync Client and the AsyncClient alike."""

from __future__ import annotations

import contextlib
import mimetypes
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import httpx

from folio_client.errors import FolioError, error_from_response
from folio_client.models import Engine, Health, Job, JobList, JobResult, PageList
from folio_client.retry import retry_after_seconds

FileSource = str | os.PathLike[str] | IO[bytes]


class Upload:
    """A file to send, opened afresh for each attempt and streamed by httpx in 64 KiB chunks
    (never read whole into memory). A file object is rewound for a retry."""

    def __init__(self, source: FileSource, filename: str | None = None) -> None:
        self.source = source
        if isinstance(source, str | os.PathLike):
            self.filename = filename or Path(source).name
        else:
            self.filename = filename or Path(str(getattr(source, "name", "") or "upload")).name
            seekable = getattr(source, "seekable", lambda: False)()
            self._start = source.tell() if seekable else None
        self.content_type = mimetypes.guess_type(self.filename)[0] or "application/octet-stream"
        self._sent = False

    @contextlib.contextmanager
    def opened(self) -> Iterator[IO[bytes]]:
        if isinstance(self.source, str | os.PathLike):
            with open(self.source, "rb") as handle:
                yield handle
            return
        if self._sent:
            if self._start is None:
                raise FolioError(f"cannot send {self.filename} again: its stream is not seekable")
            self.source.seek(self._start)
        self._sent = True
        yield self.source


@dataclass
class Call:
    method: str
    path: str
    params: dict[str, Any] | None = None
    json: Any = None
    data: dict[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    upload: Upload | None = None

    @contextlib.contextmanager
    def request_arguments(self) -> Iterator[dict[str, Any]]:
        arguments: dict[str, Any] = {"params": self.params, "headers": self.headers}
        if self.json is not None:
            arguments["json"] = self.json
        if self.data is not None:
            arguments["data"] = self.data
        if self.upload is None:
            yield arguments
            return
        with self.upload.opened() as handle:
            upload = self.upload
            arguments["files"] = {"file": (upload.filename, handle, upload.content_type)}
            yield arguments


def _fields(**values: str | None) -> dict[str, str]:
    return {name: value for name, value in values.items() if value}


def submit(
    source: FileSource,
    *,
    filename: str | None,
    pages: str | None,
    engine: str | None,
    table_format: str | None,
    webhook_url: str | None,
    idempotency_key: str | None,
    speaker_notes: bool = False,
    comments: bool = False,
    ocr_language: str | None = None,
) -> Call:
    return Call(
        "POST",
        "/v1/jobs",
        data=_fields(
            pages=pages,
            engine=engine,
            table_format=table_format,
            webhook_url=webhook_url,
            # Office documents: a presentation's speaker notes, reviewers' comments.
            speaker_notes="true" if speaker_notes else None,
            comments="true" if comments else None,
            # A scan's language for what the bundled OCR cannot read ("kor", "fas+ara").
            ocr_language=ocr_language,
        ),
        # The same key on every attempt: a retry after a lost answer gets the first job back.
        headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())},
        upload=Upload(source, filename),
    )


def submit_url(
    url: str,
    *,
    pages: str | None,
    engine: str | None,
    table_format: str | None = None,
    speaker_notes: bool = False,
    comments: bool = False,
) -> Call:
    """The jobs API takes files only; a URL goes through the Reader endpoint, asked to answer
    at once with the job's id (``Prefer: respond-async``), with the same options as an upload
    in the Reader body's names."""
    headers = {"Prefer": "respond-async", "Accept": "application/json"}
    if pages:
        headers["X-Page"] = pages
    if engine:
        headers["X-Respond-With"] = engine
    body: dict[str, Any] = {"url": url}
    if table_format:
        body["tableFormat"] = table_format
    if speaker_notes:
        body["speakerNotes"] = True
    if comments:
        body["comments"] = True
    return Call("POST", "/", json=body, headers=headers)


def job_id_of_accepted(response: httpx.Response) -> str:
    body = response.json()
    job_id = (body.get("data") or {}).get("jobId") or response.headers.get("X-Folio-Job")
    if not job_id:
        raise FolioError(f"the server answered {response.status_code} without a job id")
    return str(job_id)


def job(job_id: str, *, pages: bool = False) -> Call:
    """The status document; with ``pages``, every page's details in it (``include=pages``)."""
    return Call("GET", f"/v1/jobs/{job_id}", params={"include": "pages"} if pages else None)


def comma_separated(values: str | list[str]) -> str:
    """A filter of one value or several, as the API reads it."""
    return values if isinstance(values, str) else ",".join(values)


def pages(
    job_id: str,
    *,
    status: str | list[str] | None,
    needs_review: bool | None,
    sort: str | None,
    page: int,
    page_size: int,
) -> Call:
    params: dict[str, Any] = {"page": page, "page_size": page_size}
    if status:
        params["status"] = comma_separated(status)
    if needs_review is not None:
        params["needs_review"] = "true" if needs_review else "false"
    if sort:
        params["sort"] = sort
    return Call("GET", f"/v1/jobs/{job_id}/pages", params=params)


def cancel(job_id: str) -> Call:
    return Call("POST", f"/v1/jobs/{job_id}/cancel")


def delete(job_id: str) -> Call:
    return Call("DELETE", f"/v1/jobs/{job_id}")


def result_markdown(job_id: str) -> Call:
    return Call("GET", f"/v1/jobs/{job_id}/result", headers={"Accept": "text/markdown"})


def result_json(job_id: str) -> Call:
    return Call("GET", f"/v1/jobs/{job_id}/result", headers={"Accept": "application/json"})


def result_format(job_id: str, fmt: str, **params: Any) -> Call:
    """The result as ``blocks``, ``chunks`` (JSON), ``pdf`` or ``markdown`` (with options such
    as ``max_tokens`` or ``page_markers``; None leaves one out)."""
    query = {"format": fmt, **{k: v for k, v in params.items() if v is not None}}
    accept = {"pdf": "application/pdf", "markdown": "text/markdown"}.get(fmt, "application/json")
    return Call("GET", f"/v1/jobs/{job_id}/result", params=query, headers={"Accept": accept})


# Seconds to wait before asking again for an output being built when the server names none.
PREPARING_DELAY = 2.0


def being_prepared(response: httpx.Response) -> float | None:
    """Seconds to wait before asking again when the server is still building the output
    (``202``, the searchable PDF), or None: the output is in the answer."""
    if response.status_code != 202:
        return None
    return retry_after_seconds(response.headers.get("Retry-After")) or PREPARING_DELAY


def jobs(
    *,
    status: str | list[str] | None,
    created_after: datetime | str | None,
    created_before: datetime | str | None,
    page: int,
    page_size: int,
) -> Call:
    params: dict[str, Any] = {"page": page, "page_size": page_size}
    if status:
        params["status"] = comma_separated(status)
    for name, value in (("created_after", created_after), ("created_before", created_before)):
        if value:
            params[name] = value.isoformat() if isinstance(value, datetime) else value
    return Call("GET", "/v1/jobs", params=params)


def engines() -> Call:
    return Call("GET", "/v1/models")


def parse_job(response: httpx.Response) -> Job:
    return Job.from_json(response.json())


def parse_jobs(response: httpx.Response) -> JobList:
    return JobList.from_json(response.json())


def parse_pages(response: httpx.Response) -> PageList:
    return PageList.from_json(response.json())


def parse_result(response: httpx.Response) -> JobResult:
    return JobResult.from_json(response.json())


def parse_engines(response: httpx.Response) -> list[Engine]:
    return [
        Engine(id=str(item["id"]), owned_by=str(item.get("owned_by") or ""))
        for item in response.json().get("data") or []
    ]


def parse_health(live: httpx.Response | None, ready: httpx.Response | None) -> Health:
    """``/healthz`` says the process answers; ``/readyz`` (200 or 503) says whether it can work."""
    checks: dict[str, Any] = {}
    if ready is not None:
        with contextlib.suppress(ValueError):
            checks = dict(ready.json().get("checks") or {})
    return Health(
        live=live is not None and live.status_code == 200,
        ready=ready is not None and ready.status_code == 200,
        checks=checks,
    )


def raise_for_error(response: httpx.Response, *, retry_after: float | None = None) -> None:
    if response.status_code >= 400:
        raise error_from_response(response, retry_after=retry_after)


def poll_delay(job: Job, polls: int, *, minimum: float, maximum: float) -> float:
    """How long to wait before asking again: half the server's ETA when it has one (so the
    end is seen soon after it happens), else a back-off from ``minimum``."""
    eta = job.progress.eta_seconds
    if eta is not None and eta > 0:
        return min(maximum, max(minimum, eta / 2))
    return min(maximum, minimum * 1.5**polls)
