"""The jobs API: submit a document, follow its pages, fetch the result; list, cancel and
delete jobs."""

from __future__ import annotations

from django.core.files.storage import default_storage
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.core.errors import bad_parameter, conflict
from webapp.core.renderers import MarkdownRenderer, PdfRenderer
from webapp.core.schema import results_of
from webapp.jobs import selectors, services
from webapp.jobs.errors import submission_api_error
from webapp.jobs.result_http import (
    RESULT_RESPONSES,
    ResultNegotiation,
    job_result_response,
    result_query,
)
from webapp.jobs.serializers import (
    JobCreateSerializer,
    JobDetailQuerySerializer,
    JobDetailSerializer,
    JobListQuerySerializer,
    JobPagesQuerySerializer,
    JobPagesSerializer,
    JobResultQuerySerializer,
    JobSerializer,
    PageSerializer,
)

IDEMPOTENCY_KEY_MAX = 255


def idempotency_key_from(request) -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > IDEMPOTENCY_KEY_MAX or not key.isprintable():
        raise bad_parameter(
            f"the Idempotency-Key header must be 1 to {IDEMPOTENCY_KEY_MAX} printable "
            "characters (a UUID is a good choice)"
        )
    return key


def _owned_job(request, job_id):
    job = selectors.job_get(owner=request.user, job_id=job_id)
    if job is None:
        raise NotFound(f"No job {job_id} here.")
    return job


def paged_response(request, rows, params: dict, serialize) -> Response:
    """One page of ``rows`` (``params``' ``page`` and ``page_size``) in the shape every list of
    the API answers with: the count, the page, links to its neighbours and the results as
    ``serialize`` writes them."""
    number, size = params["page"], params["page_size"]
    count = rows.count()
    window = rows[(number - 1) * size : number * size]
    return Response(
        {
            "count": count,
            "page": number,
            "page_size": size,
            "next": page_link(request, number + 1) if number * size < count else None,
            "previous": page_link(request, number - 1) if number > 1 else None,
            "results": serialize(window),
        }
    )


def page_link(request, number: int) -> str:
    """This request's URL with its ``page`` parameter set to ``number``."""
    query_params = request.query_params.copy()
    query_params["page"] = str(number)
    return request.build_absolute_uri(f"{request.path}?{query_params.urlencode()}")


class JobListCreateView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        operation_id="v1_jobs_list",
        parameters=[JobListQuerySerializer],
        responses={200: results_of(JobSerializer, paginated=True)},
    )
    def get(self, request):
        query = JobListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        jobs = selectors.jobs_filtered(
            owner=request.user,
            statuses=params.get("status", []),
            created_after=params.get("created_after"),
            created_before=params.get("created_before"),
        )
        return paged_response(
            request,
            jobs,
            params,
            lambda window: JobSerializer(window, many=True, context={"request": request}).data,
        )

    @extend_schema(request=JobCreateSerializer, responses={202: JobSerializer})
    def post(self, request):
        serializer = JobCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        idempotency_key = idempotency_key_from(request)
        try:
            services.upload_size_check(size=upload.size)
            job = services.job_submit(
                owner=request.user,
                data=upload.read(),
                filename=upload.name,
                page_selection=serializer.validated_data.get("pages"),
                engine=serializer.validated_data.get("engine"),
                options=services.JobOptions.parse(
                    table_format=serializer.validated_data.get("table_format"),
                    figures=serializer.validated_data.get("figures", False),
                    headers=serializer.validated_data.get("headers"),
                    normalize=serializer.validated_data.get("normalize"),
                    review_threshold=serializer.validated_data.get("review_threshold"),
                    speaker_notes=serializer.validated_data.get("speaker_notes", False),
                    comments=serializer.validated_data.get("comments", False),
                    ocr_language=serializer.validated_data.get("ocr_language"),
                ),
                idempotency_key=idempotency_key,
                webhook_url=serializer.validated_data.get("webhook_url"),
            )
        except services.SubmissionError as exc:
            raise submission_api_error(exc) from exc
        body = JobSerializer(job, context={"request": request}).data
        headers = {"Location": body["links"]["self"]}
        if getattr(job, "idempotent_replay", False):
            headers["Idempotent-Replayed"] = "true"
        return Response(body, status=status.HTTP_202_ACCEPTED, headers=headers)


class JobDetailView(APIView):
    @extend_schema(parameters=[JobDetailQuerySerializer], responses={200: JobDetailSerializer})
    def get(self, request, job_id):
        job = _owned_job(request, job_id)
        query = JobDetailQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        context = {"request": request, "pages": query.validated_data}
        return Response(JobDetailSerializer(job, context=context).data)

    @extend_schema(responses={204: None})
    def delete(self, request, job_id):
        services.job_delete(job=_owned_job(request, job_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class JobPagesView(APIView):
    @extend_schema(parameters=[JobPagesQuerySerializer], responses={200: JobPagesSerializer})
    def get(self, request, job_id):
        """The job's pages with every detail, a page of them at a time."""
        job = _owned_job(request, job_id)
        query = JobPagesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        pages = selectors.job_pages_listed(
            job=job,
            statuses=params.get("status", []),
            needs_review=params.get("needs_review"),
            finished_after=params.get("finished_after"),
            sort=params["sort"],
        )
        return paged_response(
            request, pages, params, lambda window: PageSerializer(window, many=True).data
        )


class JobCancelView(APIView):
    @extend_schema(request=None, responses={200: JobSerializer, 409: OpenApiResponse()})
    def post(self, request, job_id):
        job = _owned_job(request, job_id)
        if not services.job_cancel(job=job):
            job.refresh_from_db()
            raise conflict(f"job {job.id} has already ended ({job.status}); nothing to cancel")
        job.refresh_from_db()
        return Response(JobSerializer(job, context={"request": request}).data)


class JobResultView(APIView):
    renderer_classes = [MarkdownRenderer, JSONRenderer, PdfRenderer]
    content_negotiation_class = ResultNegotiation

    @extend_schema(parameters=[JobResultQuerySerializer], responses=RESULT_RESPONSES)
    def get(self, request, job_id):
        params = result_query(request)  # a bad parameter is a 400 whatever the job
        job = _owned_job(request, job_id)
        return job_result_response(
            request, job, params=params, poll=request.build_absolute_uri(f"/v1/jobs/{job.id}")
        )


class JobFigureView(APIView):
    """A figure crop of a finished page, as linked from its Markdown."""

    @extend_schema(responses={(200, "image/png"): OpenApiTypes.BINARY})
    def get(self, request, job_id, name: str):
        job = _owned_job(request, job_id)
        if not services.figure_name_is_plain(name):
            raise NotFound(f"No figure {name!r} in job {job.id}.")
        path = services.figure_storage_name(job_id=job.id, name=name)
        if job.expired_at is not None or not default_storage.exists(path):
            raise NotFound(f"No figure {name!r} in job {job.id}.")
        return FileResponse(default_storage.open(path, "rb"), content_type="image/png")
