"""The jobs API: submit a document, follow its pages, fetch the result."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.core.errors import bad_parameter, conflict, too_large, unprocessable
from webapp.core.renderers import MarkdownRenderer
from webapp.jobs import selectors, services
from webapp.jobs.serializers import (
    JobCreateSerializer,
    JobDetailSerializer,
    JobSerializer,
    PageResultSerializer,
)

_SUBMISSION_ERRORS = {
    "bad_parameter": bad_parameter,
    "unprocessable": unprocessable,
    "too_large": too_large,
}


def _owned_job(request, job_id):
    job = selectors.job_get(owner=request.user, job_id=job_id)
    if job is None:
        raise NotFound(f"No job {job_id} here.")
    return job


class JobListCreateView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=JobCreateSerializer, responses={202: JobSerializer})
    def post(self, request):
        serializer = JobCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        try:
            services.upload_size_check(size=upload.size)
            job = services.job_submit(
                owner=request.user,
                data=upload.read(),
                filename=upload.name,
                page_selection=serializer.validated_data.get("pages"),
                engine=serializer.validated_data.get("engine"),
                options=services.JobOptions.parse(
                    table_format=serializer.validated_data.get("table_format")
                ),
            )
        except services.SubmissionError as exc:
            raise _SUBMISSION_ERRORS[exc.kind](str(exc)) from exc
        body = JobSerializer(job, context={"request": request}).data
        return Response(
            body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["links"]["self"]}
        )


class JobDetailView(APIView):
    @extend_schema(responses={200: JobDetailSerializer})
    def get(self, request, job_id):
        job = _owned_job(request, job_id)
        return Response(JobDetailSerializer(job, context={"request": request}).data)


class JobResultView(APIView):
    renderer_classes = [MarkdownRenderer, JSONRenderer]

    @extend_schema(
        responses={
            (200, "text/markdown"): OpenApiResponse(description="the pages' Markdown, joined"),
            (200, "application/json"): PageResultSerializer(many=True),
            409: OpenApiResponse(description="the job has not finished"),
        }
    )
    def get(self, request, job_id):
        job = _owned_job(request, job_id)
        if not job.is_final:
            poll = request.build_absolute_uri(f"/v1/jobs/{job.id}")
            raise conflict(
                f"job {job.id} is {job.status} ({job.pages_done + job.pages_failed} of "
                f"{job.pages_total} pages finished); poll {poll}"
            )
        if request.accepted_renderer.format == "md":
            return Response(selectors.job_markdown(job=job))
        pages = PageResultSerializer(selectors.job_pages(job=job), many=True).data
        return Response(
            {
                "id": str(job.id),
                "status": job.status,
                "pages": pages,
                "usage": JobSerializer().get_usage(job),
            }
        )
