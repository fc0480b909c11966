"""Reader's answers: plain text in its layout, the JSON envelope, or an event stream."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse

from model.plaintext import markdown_to_text
from webapp.core.errors import ApiError, error_body, unprocessable
from webapp.jobs import selectors, services
from webapp.jobs.models import Job
from webapp.jobs.waiting import job_updates
from webapp.reader.options import ReaderOptions
from webapp.reader.sources import Source

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def reader_data(*, job: Job, source: Source, options: ReaderOptions) -> dict:
    markdown = selectors.job_markdown(job=job)
    content = markdown_to_text(markdown) if options.plain_text else markdown
    tokens = job.input_tokens + job.output_tokens
    return {
        "title": _title(markdown, job.document.original_name),
        "description": "",
        "url": source.url,
        "content": content,
        "numPages": job.document.page_count,
        "usage": {"tokens": tokens},
    }


def finished_response(*, job: Job, source: Source, options: ReaderOptions) -> HttpResponse:
    if job.status == Job.Status.FAILED:
        return error_response(_nothing_read(job))
    if job.status == Job.Status.CANCELLED:
        return error_response(
            ApiError(
                f"job {job.id} was cancelled",
                http_status=409,
                name="ConflictError",
                detail_code=40901,
            )
        )
    data = reader_data(job=job, source=source, options=options)
    tokens = data["usage"]["tokens"]
    if options.response_format == "json":
        response = JsonResponse(
            {"code": 200, "status": 20000, "data": data, "meta": {"usage": {"tokens": tokens}}}
        )
    else:
        response = HttpResponse(plain_text(data), content_type="text/plain; charset=utf-8")
    response["X-Usage-Tokens"] = str(tokens)
    response["X-Folio-Job"] = str(job.id)
    return response


def accepted_response(*, job: Job, poll_url: str, anonymous: bool) -> JsonResponse:
    """Not done yet: the work goes on, and lands in the jobs API."""
    finished = job.pages_done + job.pages_failed
    message = f"job {job.id} is {job.status} ({finished} of {job.pages_total} pages)"
    if anonymous:
        message += "; send the same request again later and the finished pages come from the cache"
    else:
        message += f"; poll {poll_url}"
    body = {
        "code": 202,
        "status": 20200,
        "data": {"jobId": str(job.id), "status": job.status, "poll": poll_url},
        "message": message,
    }
    return JsonResponse(
        body, status=202, headers={"Location": poll_url, "X-Folio-Job": str(job.id)}
    )


def event_stream(*, job: Job, source: Source, options: ReaderOptions) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        event_frames(job=job, source=source, options=options), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # let proxies pass each frame at once
    response["X-Folio-Job"] = str(job.id)
    return response


def event_frames(*, job: Job, source: Source, options: ReaderOptions) -> Iterator[str]:
    """An ``event: data`` frame each time a page finishes (the document so far), the last
    one complete; ``event: error`` if nothing could be read or time ran out."""
    try:
        yield from _job_frames(job=job, source=source, options=options)
    except GeneratorExit:
        # The client went away mid-stream. Paid-for work goes on unless it asked otherwise.
        if options.cancel_on_disconnect:
            services.job_cancel(job=job)
        raise


def _job_frames(*, job: Job, source: Source, options: ReaderOptions) -> Iterator[str]:
    sent = 0
    for update in job_updates(job_id=job.id, timeout=options.timeout):
        if update.status == Job.Status.FAILED:
            yield _frame("error", error_body_of(_nothing_read(update)))
            return
        finished = update.pages_done + update.pages_failed
        if finished > sent or update.is_final:
            sent = finished
            yield _frame("data", reader_data(job=update, source=source, options=options))
        if update.is_final:
            return
    still_running = ApiError(
        f"job {job.id} did not finish in {options.timeout} s; it goes on in the jobs API",
        http_status=202,
        name="Accepted",
        detail_code=20200,
    )
    yield _frame("error", {**error_body_of(still_running), "jobId": str(job.id)})


def plain_text(data: dict) -> str:
    return (
        f"Title: {data['title']}\n\n"
        f"URL Source: {data['url']}\n\n"
        f"Number of Pages: {data['numPages']}\n\n"
        f"Markdown Content:\n{data['content']}"
    )


def error_body_of(error: ApiError) -> dict:
    return error_body(
        http_status=error.status_code,
        name=error.name,
        detail_code=error.detail_code,
        message=str(error.detail),
    )


def error_response(error: ApiError) -> JsonResponse:
    response = JsonResponse(error_body_of(error), status=error.status_code)
    if error.status_code == 429 and getattr(error, "retry_after", None):
        response["Retry-After"] = str(error.retry_after)
    return response


def _frame(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _nothing_read(job: Job) -> ApiError:
    errors = "; ".join(
        f"page {page.number}: {page.error}" for page in selectors.job_pages(job=job) if page.error
    )
    return unprocessable(f"no page could be read ({errors or 'no reason given'})")


def _title(markdown: str, fallback: str) -> str:
    match = _HEADING.search(markdown)
    return match.group(1).strip("*_ ") if match else fallback
