"""The Reader endpoint: ``POST /`` and ``GET /<url>``, a synchronous wrapper over a job."""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.views import APIView

from webapp.accounts.authentication import ApiKeyAuthentication
from webapp.core.errors import bad_parameter
from webapp.core.parsers import JSONParser
from webapp.core.renderers import AnyMediaJSONRenderer
from webapp.jobs import services
from webapp.jobs.errors import submission_api_error
from webapp.jobs.waiting import WaiterSlot, job_wait
from webapp.reader.anonymous import anonymous_owner, client_identity
from webapp.reader.engines import engine_for_model
from webapp.reader.options import RESPOND_WITH, reader_options
from webapp.reader.polling import poll_url as capability_poll_url
from webapp.reader.polling import result_url as capability_result_url
from webapp.reader.responses import accepted_response, event_stream, finished_response
from webapp.reader.sources import document_source

logger = logging.getLogger(__name__)

READER_HEADERS = [
    OpenApiParameter("X-Respond-With", str, OpenApiParameter.HEADER, enum=list(RESPOND_WITH)),
    OpenApiParameter("X-Page", str, OpenApiParameter.HEADER, description="`3`, `2-5,7`"),
    OpenApiParameter(
        "X-Timeout", int, OpenApiParameter.HEADER, description="seconds; above 180 read as 180"
    ),
    OpenApiParameter("X-No-Cache", bool, OpenApiParameter.HEADER),
    OpenApiParameter("X-Cache-Tolerance", int, OpenApiParameter.HEADER, description="seconds"),
    OpenApiParameter("X-Token-Budget", int, OpenApiParameter.HEADER),
]

READER_RESPONSES = {
    (200, "text/plain"): OpenApiTypes.STR,
    (200, "application/json"): OpenApiTypes.OBJECT,
    (200, "text/event-stream"): OpenApiTypes.STR,
    202: OpenApiTypes.OBJECT,
}


class _ReaderBase(APIView):
    parser_classes = [JSONParser, FormParser, MultiPartParser]
    renderer_classes = [AnyMediaJSONRenderer]
    # Anonymous requests are limited per client by the quotas job_submit counts (only
    # accepted work counts), not by a throttle that would count refusals too.
    throttle_classes: list = []

    def get_permissions(self):
        return [IsAuthenticated() if settings.FOLIO_READER_REQUIRE_KEY else AllowAny()]

    def read(self, request, *, body, url: str | None):
        options = reader_options(request, body=body, url=url)
        engine = engine_for_model(options.model)
        anonymous = not (request.user and request.user.is_authenticated)
        try:
            # Inside: an upload over the size limit is a SubmissionError, a 413 like the rest.
            source = document_source(body=body, url=url)
            job = services.job_submit(
                owner=anonymous_owner() if anonymous else request.user,
                data=source.data,
                filename=source.filename,
                page_selection=options.pages,
                engine=engine,
                options=services.JobOptions.parse(
                    token_budget=options.token_budget,
                    table_format=options.table_format,
                    headers=options.headers,
                    normalize=options.normalize,
                    speaker_notes=options.speaker_notes,
                    comments=options.comments,
                    ocr_language=options.ocr_language,
                ),
                cache=services.CachePolicy(
                    use=not options.no_cache, max_age=options.cache_tolerance
                ),
                client=client_identity(request) if anonymous else "",
            )
        except services.SubmissionError as exc:
            raise submission_api_error(exc) from exc
        if anonymous:
            # No key to poll the jobs API with: the link itself is the permission.
            poll_url = capability_poll_url(request, job.id)
            result_url = capability_result_url(request, job.id)
        else:
            poll_url = request.build_absolute_uri(reverse("job-detail", args=[job.id]))
            result_url = request.build_absolute_uri(reverse("job-result", args=[job.id]))
        if options.respond_async:
            return accepted_response(job=job, poll_url=poll_url)
        # Waiting holds a thread of this process: beyond FOLIO_READER_WAITERS waiters, the
        # answer is at once what it would be when time runs out, a 202 with the poll link.
        slot = WaiterSlot()
        if options.response_format == "sse":
            if not slot.taken:
                return accepted_response(job=job, poll_url=poll_url)
            return event_stream(job=job, source=source, options=options, slot=slot)
        with slot:
            if slot.taken:
                job = job_wait(job_id=job.id, timeout=options.timeout)
        if not job.is_final:
            return accepted_response(job=job, poll_url=poll_url)
        return finished_response(job=job, source=source, options=options, result_url=result_url)


class ReaderView(_ReaderBase):
    """``POST /`` reads a document; ``GET /`` tells how."""

    @extend_schema(
        operation_id="reader_index",
        responses={
            (200, "text/plain"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request):
        return self.index(request)

    @extend_schema(
        operation_id="reader_read",
        parameters=READER_HEADERS,
        request={
            "application/json": OpenApiTypes.OBJECT,
            "multipart/form-data": OpenApiTypes.OBJECT,
        },
        responses=READER_RESPONSES,
    )
    def post(self, request):
        body = request.data if hasattr(request.data, "get") else {}
        url = body.get("url")
        if url is not None and not isinstance(url, str):
            raise bad_parameter("`url` must be a string")
        return self.read(request, body=body, url=url or None)

    def index(self, request):
        if "text/html" in request.headers.get("Accept", ""):
            return render(request, "home.html")
        headers = {
            "X-Respond-With": f"one of {', '.join(RESPOND_WITH)}",
            "X-Page": "pages to read: `3`, `2-5,7` (or `#3` at the end of the URL, sent as `%233`)",
            "X-Timeout": "seconds to wait (above 180: 180); then a 202 with a poll link",
            "X-No-Cache": "true to read again instead of using a cached result",
            "X-Cache-Tolerance": "seconds: the oldest cached result to accept",
            "X-Token-Budget": "the most tokens to spend",
            "X-Folio-Format": "markdown (default); blocks or chunks (JSON, with boxes in "
            "points) or pdf (a searchable PDF)",
            "X-Folio-Chunk-Tokens": "with X-Folio-Format: chunks, the most tokens a chunk",
            "Accept": "text/plain (default), application/json or text/event-stream",
            "Authorization": "Bearer <key> (anonymous use is rate-limited)",
        }
        how = (
            "POST / with a JSON, form or multipart body carrying `url`, `file` or `pdf`; "
            "or GET /<url>"
        )
        usage = {
            "usage": how,
            "headers": headers,
            "jobs": "/v1/jobs",
            "openai": "/v1/chat/completions",
            "schema": "/api/schema/",
        }
        if "application/json" in request.headers.get("Accept", ""):
            return JsonResponse({"code": 200, "status": 20000, "data": usage})
        lines = ["Folio: document OCR with Jina Reader's conventions", "", how, ""]
        lines += [f"{name}: {text}" for name, text in headers.items()]
        lines += [
            "",
            "Jobs API: /v1/jobs",
            "OpenAI-compatible: /v1/chat/completions",
            "Schema: /api/schema/",
        ]
        return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; charset=utf-8")


class ReaderTargetView(_ReaderBase):
    """``GET /<url>``: the document's URL is the path.

    Only a key makes it a user's request: any site can make a browser follow a link, and a
    session cookie sent along with it must not spend the logged-in user's quota."""

    authentication_classes = [ApiKeyAuthentication]

    @extend_schema(
        operation_id="reader_read_url", parameters=READER_HEADERS, responses=READER_RESPONSES
    )
    def get(self, request, target: str):
        return self.read(request, body={}, url=_target_url(request))


IPV6_HOST = re.compile(r"^(https?:/{1,2})%5B([0-9a-f:.]+)%5D", re.IGNORECASE)


def _target_url(request) -> str:
    """The URL in the path, with its query string; `//` may arrive squeezed to `/`."""
    target = request.get_full_path()[1:]
    # Django percent-encodes the brackets of an IPv6 literal ("http://[2001:db8::1]/a.pdf");
    # they are the URL's own syntax, never data, in the host part.
    target = IPV6_HOST.sub(r"\1[\2]", target, count=1)
    # A page fragment ("#3") can only travel in a path percent-encoded.
    if "%23" in target:
        head, _, fragment = target.rpartition("%23")
        target = f"{head}#{fragment}"
    for scheme in ("https:/", "http:/"):
        if target.startswith(scheme) and not target.startswith(scheme + "/"):
            target = scheme + "/" + target[len(scheme) :]
    return target
