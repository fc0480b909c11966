"""Reader's answers: plain text in its layout, the JSON envelope, or an event stream."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from model.engines.auto import AUTO
from model.plaintext import markdown_to_text
from webapp.core.error_body import error_body
from webapp.core.errors import ApiError, unprocessable
from webapp.jobs import outputs, selectors, services
from webapp.jobs.models import Job, Page
from webapp.jobs.result_http import searchable_pdf_response
from webapp.jobs.waiting import HeldWhileStreaming, WaiterSlot, job_updates
from webapp.reader.options import ReaderOptions
from webapp.reader.sources import Source

# Names the pages (comma-separated numbers) with text no installed OCR model could read.
UNREAD_SCRIPT_HEADER = "X-Folio-Unread-Script-Pages"
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def reader_data(*, job: Job, source: Source, options: ReaderOptions) -> dict:
    """Reader's `data`: the whole document read so far."""
    markdown = selectors.job_markdown(job=job)
    return {
        "title": _title(job, markdown),
        "description": "",
        "url": source.url,
        **_body(markdown, options),
        "numPages": job.document.page_count,
        "usage": {"tokens": job.input_tokens + job.output_tokens},
        # Pages with text in a script no installed OCR model reads: their text is missing.
        "unreadScriptPages": selectors.job_unread_script_pages(job=job),
        **_auto(job),
    }


def _auto(job: Job) -> dict:
    """An ``auto`` job's figures (Folio's own field): pages sent to a VLM engine, their share,
    the VLM seconds."""
    summary = selectors.job_auto_summary(job=job)
    return {} if summary is None else {"auto": summary}


def _body(markdown: str, options: ReaderOptions) -> dict:
    """`content` (Markdown), or with `respondWith: text` Reader's `text` field, without
    Markdown or HTML markup (Reader answers `text` in place of `content`)."""
    if options.plain_text:
        return {"text": markdown_to_text(markdown)}
    return {"content": markdown}


def finished_response(
    *, job: Job, source: Source, options: ReaderOptions, result_url: str
) -> HttpResponseBase:
    """The finished job in Reader's answer; ``result_url`` is where its result can be asked
    for again (the searchable PDF a worker is still building)."""
    if job.status == Job.Status.FAILED:
        return error_response(_nothing_read(job))
    if job.status == Job.Status.CANCELLED:
        return error_response(_cancelled(job), job=job)
    over_budget = budget_exceeded(job)
    if over_budget is not None:
        return error_response(over_budget, job=job)
    if options.output != "markdown":
        return _layout_output(job=job, options=options, result_url=result_url)
    data = reader_data(job=job, source=source, options=options)
    tokens = data["usage"]["tokens"]
    response: HttpResponse
    if options.response_format == "json":
        response = JsonResponse(
            {"code": 200, "status": 20000, "data": data, "meta": {"usage": {"tokens": tokens}}}
        )
    else:
        response = HttpResponse(plain_text(data), content_type="text/plain; charset=utf-8")
    response["X-Usage-Tokens"] = str(tokens)
    response["X-Folio-Job"] = str(job.id)
    if data["unreadScriptPages"]:
        response[UNREAD_SCRIPT_HEADER] = ",".join(map(str, data["unreadScriptPages"]))
    return response


def _layout_output(*, job: Job, options: ReaderOptions, result_url: str) -> HttpResponseBase:
    """X-Folio-Format: the blocks or chunks document in Reader's JSON envelope, or the
    searchable PDF itself (a worker builds it: while it does, a 202 whose ``Location`` is the
    result link that gives it, ``format=pdf``)."""
    tokens = job.input_tokens + job.output_tokens
    response: HttpResponseBase
    if options.output == "pdf":
        response = searchable_pdf_response(job)
        if response.status_code == 202:
            response["Location"] = f"{result_url}?format=pdf"
    else:
        document = (
            outputs.job_blocks(job=job)
            if options.output == "blocks"
            else outputs.job_chunks(job=job, max_tokens=options.chunk_tokens)
        )
        response = JsonResponse(
            {"code": 200, "status": 20000, "data": document, "meta": {"usage": {"tokens": tokens}}}
        )
    response["X-Usage-Tokens"] = str(tokens)
    response["X-Folio-Job"] = str(job.id)
    return response


def accepted_response(*, job: Job, poll_url: str) -> JsonResponse:
    """Not done yet: the work goes on, and ``poll_url`` follows it (for an anonymous caller a
    capability link that only this answer holds)."""
    finished = job.pages_done + job.pages_failed
    message = (
        f"job {job.id} is {job.status} ({finished} of {job.pages_total} pages); poll {poll_url}"
    )
    body = {
        "code": 202,
        "status": 20200,
        "data": {"jobId": str(job.id), "status": job.status, "poll": poll_url},
        "message": message,
    }
    return JsonResponse(
        body, status=202, headers={"Location": poll_url, "X-Folio-Job": str(job.id)}
    )


def budget_exceeded(job: Job) -> ApiError | None:
    """Reader's answer when what was read cost more than the budget: a 409 that names both
    (the pages read within it stay in the jobs API, under the job's id)."""
    budget = job.options.get("token_budget")
    charge = job.input_tokens + job.output_tokens
    if budget is None or charge <= budget:
        return None
    return ApiError(
        f"Token budget ({budget}) exceeded, intended charge amount {charge}; what was read "
        f"({job.pages_done} of {job.pages_total} pages) is in the jobs API as job {job.id}",
        http_status=409,
        name="BudgetExceededError",
        detail_code=40904,
    )


def event_stream(
    *, job: Job, source: Source, options: ReaderOptions, slot: WaiterSlot
) -> StreamingHttpResponse:
    """The page-by-page stream, holding one of the process's waiting ``slot``s while it runs."""
    response = StreamingHttpResponse(
        HeldWhileStreaming(event_frames(job=job, source=source, options=options), slot),
        content_type="text/event-stream",
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
    """One ``data`` frame per page, in page order and naming its page (a page answered from
    the cache is a frame like any other), then one ``data`` frame with the whole document;
    an ``error`` frame instead of that last one if nothing could be read, the budget was
    exceeded or time ran out."""
    sent = 0
    for update in job_updates(job_id=job.id, timeout=options.timeout):
        if update.status == Job.Status.FAILED:
            yield _frame("error", error_body_of(_nothing_read(update)))
            return
        for page in selectors.job_pages_finished_in_order(job=update, after=sent):
            sent += 1
            yield _frame("data", _page_data(job=update, page=page, source=source, options=options))
        if update.is_final:
            problem = budget_exceeded(update)
            if update.status == Job.Status.CANCELLED:
                problem = _cancelled(update)
            if problem is not None:
                yield _frame("error", {**error_body_of(problem), "jobId": str(job.id)})
            else:
                yield _frame("data", reader_data(job=update, source=source, options=options))
            return
    still_running = ApiError(
        f"job {job.id} did not finish in {options.timeout} s; it goes on in the jobs API",
        http_status=202,
        name="Accepted",
        detail_code=20200,
    )
    yield _frame("error", {**error_body_of(still_running), "jobId": str(job.id)})


def _page_data(*, job: Job, page: Page, source: Source, options: ReaderOptions) -> dict:
    data = {
        "page": page.number,
        "title": _title(job, page.markdown),
        "url": source.url,
        **_body(selectors.page_text(page), options),
        "numPages": job.document.page_count,
        "usage": {"tokens": page.input_tokens + page.output_tokens},
    }
    if job.engine == AUTO and page.engine:
        # Which engine's reading this page is, and why it was sent on (Folio's own fields).
        data["engine"] = page.engine
        data["escalation"] = {k: v for k, v in page.escalation.items() if k != "local"}
    if page.status == Page.Status.FAILED:
        data["error"] = page.error
    return data


def plain_text(data: dict) -> str:
    """Reader's text layout; with `respondWith: text` the text alone, as Reader answers."""
    if "text" in data:
        return data["text"]
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


def error_response(error: ApiError, *, job: Job | None = None) -> JsonResponse:
    response = JsonResponse(error_body_of(error), status=error.status_code)
    if job is not None:
        response["X-Folio-Job"] = str(job.id)
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


def _cancelled(job: Job) -> ApiError:
    return ApiError(
        f"job {job.id} was cancelled", http_status=409, name="ConflictError", detail_code=40901
    )


def _title(job: Job, markdown: str) -> str:
    """The title in the document's metadata, else its first heading, else its file name."""
    if job.document.title:
        return job.document.title
    match = _HEADING.search(markdown)
    return match.group(1).strip("*_ ") if match else job.document.original_name
