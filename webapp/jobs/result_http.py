"""The result of a job over HTTP, shared by the jobs API and the Reader's capability links:
the query, the content negotiation and the response in every format."""

from __future__ import annotations

from types import SimpleNamespace

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response

from webapp.core.downloads import still_preparing, stored_attachment_response
from webapp.core.error_body import error_body
from webapp.core.errors import ApiError, conflict, unprocessable
from webapp.jobs import outputs, selectors
from webapp.jobs.serializers import (
    BlocksDocumentSerializer,
    ChunksDocumentSerializer,
    JobPagesResultSerializer,
    JobResultQuerySerializer,
    JobSerializer,
    PageResultSerializer,
)


def gone(message: str) -> ApiError:
    return ApiError(message, http_status=410, name="GoneError", detail_code=41001)


class ResultNegotiation(DefaultContentNegotiation):
    """``format`` is the result's own parameter (blocks, chunks, pdf, ...), not DRF's
    renderer override (``URL_FORMAT_OVERRIDE``, the only setting negotiation reads): the
    renderer follows ``Accept`` alone."""

    settings = SimpleNamespace(URL_FORMAT_OVERRIDE=None)


# A finished job's result, in each form it is given in (the jobs API and the Reader's
# anonymous poll links answer alike).
RESULT_RESPONSES = {
    (200, "text/markdown"): OpenApiResponse(
        response=OpenApiTypes.STR,
        description="the pages' Markdown, joined (with `page_markers`, each page "
        "after its marker line)",
    ),
    (200, "application/json"): OpenApiResponse(
        response=PolymorphicProxySerializer(
            component_name="JobResultDocument",
            serializers=[
                JobPagesResultSerializer,
                BlocksDocumentSerializer,
                ChunksDocumentSerializer,
            ],
            resource_type_field_name=None,
        ),
        description="per page (`Accept: application/json` or `format=json`), the "
        "layout blocks (`format=blocks`) or the chunks (`format=chunks`)",
    ),
    (200, "application/pdf"): OpenApiResponse(
        response=OpenApiTypes.BINARY,
        description="`format=pdf`: born-digital pages unchanged, scanned pages and "
        "images with an invisible text layer placed word by word",
    ),
    202: OpenApiResponse(
        description="`format=pdf`: a worker is building the searchable PDF; ask again after "
        "`Retry-After` seconds"
    ),
    409: OpenApiResponse(description="the job has not finished"),
    410: OpenApiResponse(description="the results (or, for a PDF, the file) expired"),
    422: OpenApiResponse(
        description="`format=pdf` of a document without page images, or one whose PDF could "
        "not be built within its limit"
    ),
}


def searchable_pdf_response(job) -> HttpResponseBase:
    """The searchable PDF as a worker stored it; while a worker builds it (after a short
    wait, ``FOLIO_SEARCHABLE_PDF_WAIT``), a ``202`` with ``Retry-After`` and the same URL to
    ask again; ``422`` when it cannot be built, ``410`` once the file is gone."""
    try:
        stored = outputs.searchable_pdf_stored(job=job, wait=settings.FOLIO_SEARCHABLE_PDF_WAIT)
    except outputs.OutputUnavailable as exc:
        raise gone(str(exc)) from exc
    except (outputs.OutputNotDrawable, outputs.OutputRefused) as exc:
        raise unprocessable(str(exc)) from exc
    except outputs.OutputPreparing as exc:
        return preparing_response(str(exc))
    return stored_attachment_response(
        stored, content_type="application/pdf", filename=outputs.pdf_filename(job)
    )


def preparing_response(message: str) -> JsonResponse:
    """An output a worker is building: ask again after ``Retry-After`` seconds."""
    body = error_body(http_status=202, name="Accepted", detail_code=20201, message=message)
    return still_preparing(
        JsonResponse(body, status=202), retry_after=outputs.PREPARING_RETRY_AFTER
    )


def result_query(request) -> dict:
    """The result's query parameters (``format``, ``max_tokens``, page markers), checked."""
    query = JobResultQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


def job_result_response(request, job, *, params: dict, poll: str) -> HttpResponseBase:
    """A finished job's result in the form asked for (``format``, else ``Accept``): the
    joined Markdown, each page as JSON, the layout blocks, the chunks or a searchable PDF;
    ``409`` while it runs (saying where to ``poll``), ``410`` once expired. ``params`` come
    from ``result_query``. Shared by the jobs API and the Reader's anonymous poll links."""
    if job.is_expired:
        raise gone(
            f"the results of job {job.id} expired at {job.expired_at:%Y-%m-%d %H:%M} UTC "
            "and were deleted (retention); submit the document again"
        )
    if not job.is_final:
        raise conflict(
            f"job {job.id} is {job.status} ({job.pages_done + job.pages_failed} of "
            f"{job.pages_total} pages finished); poll {poll}"
        )
    by_accept = {"md": "markdown", "pdf": "pdf"}
    kind = params.get("format") or by_accept.get(request.accepted_renderer.format, "json")
    if kind == "blocks":
        return Response(outputs.job_blocks(job=job))
    if kind == "chunks":
        return Response(outputs.job_chunks(job=job, max_tokens=params["max_tokens"]))
    if kind == "pdf":
        return searchable_pdf_response(job)
    if kind == "markdown":
        marker = params.get("page_marker")
        if marker or params["page_markers"]:
            text = outputs.job_markdown_with_markers(
                job=job, marker=marker or outputs.DEFAULT_PAGE_MARKER
            )
        else:
            text = selectors.job_markdown(job=job)
        # Asked for by name: Markdown, whatever the Accept header preferred.
        return HttpResponse(text, content_type="text/markdown; charset=utf-8")
    pages = PageResultSerializer(selectors.job_pages(job=job), many=True).data
    return Response(
        {
            "id": str(job.id),
            "status": job.status,
            "pages": pages,
            "usage": JobSerializer().get_usage(job),
        }
    )
