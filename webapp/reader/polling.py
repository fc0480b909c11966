"""Poll links for anonymous Reader callers: capability URLs.

A caller without a key has no account to prove ownership with, so the ``202``'s link carries
the proof itself: the job's id signed with the server's secret key and a timestamp
(Django's TimestampSigner, HMAC-SHA256). Holding the link is the permission to read that one
job; it cannot be guessed or turned into another job's link, and it stops working
``FOLIO_READER_POLL_SECONDS`` after the answer that gave it. Callers with a key get the jobs
API's own link instead.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core import signing
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.core.renderers import MarkdownRenderer, PdfRenderer
from webapp.jobs.models import Job
from webapp.jobs.result_http import (
    RESULT_RESPONSES,
    ResultNegotiation,
    job_result_response,
    result_query,
)
from webapp.jobs.serializers import (
    JobDetailQuerySerializer,
    JobDetailSerializer,
    JobResultQuerySerializer,
)

_SALT = "folio.reader.poll"


def _signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=_SALT, sep=".")


def poll_token(job_id: uuid.UUID) -> str:
    return _signer().sign(uuid.UUID(str(job_id)).hex)


def job_for_token(token: str) -> Job:
    """The job a valid, unexpired token names; anything else is a plain 404."""
    try:
        job_hex = _signer().unsign(token, max_age=settings.FOLIO_READER_POLL_SECONDS)
        job_id = uuid.UUID(hex=job_hex)
    except (signing.BadSignature, ValueError):
        # Expired, tampered with or made up: say nothing about which.
        raise NotFound("No such poll link, or it has expired.") from None
    job = Job.objects.select_related("document").filter(pk=job_id).first()
    if job is None:
        raise NotFound("No such poll link, or it has expired.")
    return job


def poll_url(request, job_id: uuid.UUID) -> str:
    return request.build_absolute_uri(reverse("reader-poll", args=[poll_token(job_id)]))


def result_url(request, job_id: uuid.UUID) -> str:
    return request.build_absolute_uri(reverse("reader-poll-result", args=[poll_token(job_id)]))


class _CapabilityView(APIView):
    # The link is the credential: no key, no session, no CSRF.
    authentication_classes: list = []
    permission_classes = [AllowAny]


class ReaderPollView(_CapabilityView):
    """``GET /v1/reader/jobs/<token>``: the job, as the jobs API shows it."""

    @extend_schema(
        parameters=[JobDetailQuerySerializer],
        responses={
            200: JobDetailSerializer,
            404: OpenApiResponse(description="no such poll link, or it has expired"),
        },
    )
    def get(self, request, token: str):
        job = job_for_token(token)
        query = JobDetailQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        context = {"request": request, "pages": query.validated_data}
        body = JobDetailSerializer(job, context=context).data
        # Links that work for this caller: the capability ones, not the key-only jobs API.
        body["links"] = {
            "self": request.build_absolute_uri(reverse("reader-poll", args=[token])),
            "result": request.build_absolute_uri(reverse("reader-poll-result", args=[token])),
        }
        return Response(body)


class ReaderPollResultView(_CapabilityView):
    """``GET /v1/reader/jobs/<token>/result``: the result, as the jobs API gives it."""

    renderer_classes = [MarkdownRenderer, JSONRenderer, PdfRenderer]
    content_negotiation_class = ResultNegotiation

    @extend_schema(
        parameters=[JobResultQuerySerializer],
        responses={
            **RESULT_RESPONSES,
            404: OpenApiResponse(description="no such poll link, or it has expired"),
        },
    )
    def get(self, request, token: str):
        params = result_query(request)
        job = job_for_token(token)
        poll = request.build_absolute_uri(reverse("reader-poll", args=[token]))
        return job_result_response(request, job, params=params, poll=poll)
