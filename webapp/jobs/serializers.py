from __future__ import annotations

from rest_framework import serializers
from rest_framework.reverse import reverse

from webapp.jobs.models import Job, Page
from webapp.jobs.selectors import job_progress


class JobCreateSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="PDF, PNG, JPEG, TIFF (multi-page too) or WebP")
    pages = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="e.g. `1-3,7`; all pages if empty",
    )
    engine = serializers.CharField(required=False, allow_blank=True, max_length=50)
    table_format = serializers.ChoiceField(choices=["markdown", "html"], required=False)
    figures = serializers.BooleanField(
        required=False,
        default=False,
        help_text="store figure crops and link them from the Markdown (engines that find figures)",
    )
    webhook_url = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        help_text="receives the job's final event, signed with the endpoint's secret",
    )
    headers = serializers.ChoiceField(
        choices=["keep", "drop"],
        required=False,
        help_text="running heads, feet and page numbers; the server default if left out",
    )
    normalize = serializers.CharField(
        required=False,
        max_length=100,
        help_text="text normalisation: `all`, `none` or any of `ligatures,hyphenation,whitespace`",
    )


class JobListQuerySerializer(serializers.Serializer):
    status = serializers.CharField(
        required=False, help_text="one status or several, comma-separated"
    )
    created_after = serializers.DateTimeField(required=False, help_text="ISO 8601, inclusive")
    created_before = serializers.DateTimeField(required=False, help_text="ISO 8601, exclusive")
    page = serializers.IntegerField(required=False, min_value=1, default=1)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=100, default=20)

    def validate_status(self, value: str) -> list[str]:
        statuses = [item.strip() for item in value.split(",") if item.strip()]
        unknown = [item for item in statuses if item not in Job.Status.values]
        if unknown:
            raise serializers.ValidationError(
                f"unknown status {', '.join(unknown)}; use any of: {', '.join(Job.Status.values)}"
            )
        return statuses

    def validate(self, attrs: dict) -> dict:
        after, before = attrs.get("created_after"), attrs.get("created_before")
        if after and before and after >= before:
            raise serializers.ValidationError("created_after must be before created_before")
        return attrs


class PageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Page
        fields = [
            "number",
            "status",
            "attempts",
            "method",
            "input_tokens",
            "output_tokens",
            "render_seconds",
            "engine_seconds",
            "queue_wait_seconds",
            "started_at",
            "finished_at",
            "error",
            "needs_review",
            "quality",
            "extra",
        ]
        # What the engine reported beyond the text; its `figures` are served at
        # /v1/jobs/{id}/figures/{name}.
        # `quality`: the page's signals and, when `needs_review`, the reasons.
        extra_kwargs = {"extra": {"read_only": True}, "quality": {"read_only": True}}


class PageResultSerializer(PageSerializer):
    class Meta(PageSerializer.Meta):
        fields = [*PageSerializer.Meta.fields, "markdown"]


class JobSerializer(serializers.ModelSerializer):
    document = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    usage = serializers.SerializerMethodField()
    review = serializers.SerializerMethodField()
    links = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "status",
            "engine",
            "page_selection",
            "options",
            "document",
            "progress",
            "usage",
            "review",
            "created_at",
            "started_at",
            "finished_at",
            "expires_at",
            "expired_at",
            "webhook_url",
            "error",
            "links",
        ]

    def get_document(self, job: Job) -> dict:
        document = job.document
        return {
            "id": str(document.id),
            "name": document.original_name,
            "mime_type": document.mime_type,
            "page_count": document.page_count,
            "size": document.size,
            "sha256": document.sha256,
        }

    def get_review(self, job: Job) -> dict:
        """How many finished pages the quality signals flagged for a person to check."""
        return {"pages_needing_review": job.pages_needing_review}

    def get_progress(self, job: Job) -> dict:
        return job_progress(job=job)

    def get_usage(self, job: Job) -> dict:
        return {
            "input_tokens": job.input_tokens,
            "output_tokens": job.output_tokens,
            "tokens": job.input_tokens + job.output_tokens,
            "engine_seconds": round(job.engine_seconds, 3),
            # Once the job has ended: pages/s, output tokens/s, time to first token, and the
            # speculative-decoding acceptance where the engine reports it.
            "engine": job.engine_metrics,
        }

    def get_links(self, job: Job) -> dict:
        request = self.context.get("request")
        return {
            "self": reverse("job-detail", args=[job.id], request=request),
            "result": reverse("job-result", args=[job.id], request=request),
            "cancel": reverse("job-cancel", args=[job.id], request=request),
            "deliveries": reverse("job-deliveries", args=[job.id], request=request),
        }


class JobDetailSerializer(JobSerializer):
    pages = serializers.SerializerMethodField()

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "pages"]

    def get_review(self, job: Job) -> dict:
        numbers = job.pages.filter(needs_review=True).order_by("number")
        return {**super().get_review(job), "pages": list(numbers.values_list("number", flat=True))}

    def get_pages(self, job: Job) -> list[dict]:
        return PageSerializer(job.pages.order_by("number"), many=True).data
