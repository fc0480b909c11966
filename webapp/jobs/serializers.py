from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from model.layout import BLOCK_TYPES
from model.layout.chunks import DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS
from webapp.jobs.models import Job, Page
from webapp.jobs.outputs import PAGE_MARKER_MAX
from webapp.jobs.selectors import (
    job_auto_summary,
    job_page_summary,
    job_pages_listed,
    job_progress,
    job_unread_script_pages,
)


def statuses_listed(value: str, known: list[str], noun: str) -> list[str]:
    """A comma-separated ``status`` filter as a list, refusing what is not one of ``known``
    with the ones it may be."""
    statuses = [item.strip() for item in value.split(",") if item.strip()]
    unknown = [item for item in statuses if item not in known]
    if unknown:
        raise serializers.ValidationError(
            f"unknown {noun} {', '.join(unknown)}; use any of: {', '.join(known)}"
        )
    return statuses


class JobCreateSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="PDF, PNG, JPEG, TIFF (multi-page too) or WebP")
    pages = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="e.g. `1-3,7`; all pages if empty",
    )
    engine = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=50,
        help_text="an engine (`GET /v1/models` lists those served now), or `auto`: every page "
        "read by `local`, and the pages whose review score reaches FOLIO_AUTO_THRESHOLD read "
        "again by the best VLM engine a worker serves; the server's FOLIO_DEFAULT_ENGINE if "
        "left out",
    )
    table_format = serializers.ChoiceField(choices=["markdown", "html", "auto"], required=False)
    figures = serializers.BooleanField(
        required=False,
        default=False,
        help_text="store figure crops and link them from the Markdown (engines that find figures)",
    )
    speaker_notes = serializers.BooleanField(
        required=False,
        default=False,
        help_text="a presentation's speaker notes after each slide (PPTX, PPT, ODP)",
    )
    comments = serializers.BooleanField(
        required=False,
        default=False,
        help_text="reviewers' comments after the content (DOCX, PPTX, XLSX, OpenDocument)",
    )
    ocr_language = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=40,
        help_text="a scan's language in Tesseract's codes (`kor`, `fas+ara`) for the lines "
        "the bundled OCR cannot read; found on the page if empty",
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
    review_threshold = serializers.FloatField(
        required=False,
        min_value=0.01,
        max_value=1.0,
        help_text="pages whose review score (0-1) reaches this need review; the server's "
        "FOLIO_REVIEW_THRESHOLD if left out",
    )


class JobListQuerySerializer(serializers.Serializer):
    status = serializers.CharField(
        required=False, help_text="one status or several, comma-separated"
    )
    created_after = serializers.DateTimeField(required=False, help_text="ISO 8601, inclusive")
    created_before = serializers.DateTimeField(required=False, help_text="ISO 8601, exclusive")
    # Bounded so that the offset fits the database's integers (past it a list is empty anyway).
    page = serializers.IntegerField(required=False, min_value=1, max_value=10_000_000, default=1)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=100, default=20)

    def validate_status(self, value: str) -> list[str]:
        return statuses_listed(value, Job.Status.values, "status")

    def validate(self, attrs: dict) -> dict:
        after, before = attrs.get("created_after"), attrs.get("created_before")
        if after and before and after >= before:
            raise serializers.ValidationError("created_after must be before created_before")
        return attrs


class PageSerializer(serializers.ModelSerializer):
    escalation = serializers.SerializerMethodField()

    class Meta:
        model = Page
        fields = [
            "number",
            "status",
            "attempts",
            "engine",
            "escalation",
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
            "review_score",
            "quality",
            "extra",
        ]
        # What the engine reported beyond the text; its `figures` are served at
        # /v1/jobs/{id}/figures/{name}.
        # `quality`: the page's signals, its review `score` (0-1) and, when `needs_review`
        # (the score reached the job's threshold), the reasons.
        # `engine`: the engine whose reading the page holds (while it is read: the engine
        # reading it).
        extra_kwargs = {"extra": {"read_only": True}, "quality": {"read_only": True}}

    def get_escalation(self, page: Page) -> dict | None:
        """An ``auto`` job's page: whether its local reading was sent to a VLM engine (its
        review score, the threshold, the reasons), and which reading was kept and why;
        ``null`` for other jobs' pages. The local reading a page holds while it waits for
        the VLM is not shown (``waiting`` says it waits)."""
        if not page.escalation:
            return None
        shown = {key: value for key, value in page.escalation.items() if key != "local"}
        if "local" in page.escalation and page.status != Page.Status.SUCCEEDED:
            shown["waiting"] = True
        return shown


class PageFilterSerializer(serializers.Serializer):
    """Which pages a page list holds, and in what order."""

    sort = serializers.ChoiceField(
        choices=["number", "review"],
        required=False,
        default="number",
        help_text="`review`: the pages most likely wrong first (review score, high to low)",
    )
    needs_review = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="`true`: only the pages that need review; `false`: only those that do not",
    )


class JobDetailQuerySerializer(PageFilterSerializer):
    include = serializers.ChoiceField(
        choices=["pages"],
        required=False,
        help_text="`pages`: every page's details in `pages` (sorted and filtered by `sort` "
        "and `needs_review`); without it the status document has the counts in "
        "`page_summary` only, whatever the job's length (the pages a page at a time: "
        "`GET /v1/jobs/{id}/pages`)",
    )


class JobPagesQuerySerializer(PageFilterSerializer):
    status = serializers.CharField(
        required=False, help_text="one page status or several, comma-separated"
    )
    finished_after = serializers.DateTimeField(
        required=False,
        help_text="ISO 8601: only pages that finished after this moment (what a poller has not "
        "seen yet: the latest `finished_at` it saw)",
    )
    page = serializers.IntegerField(required=False, min_value=1, max_value=10_000_000, default=1)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=500, default=100)

    def validate_status(self, value: str) -> list[str]:
        return statuses_listed(value, Page.Status.values, "page status")


class PageSummarySerializer(serializers.Serializer):
    """The job's pages counted by state: the same size for one page or two thousand."""

    total = serializers.IntegerField()
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    needs_review = serializers.IntegerField(help_text="finished pages flagged for review")


class PageResultSerializer(PageSerializer):
    class Meta(PageSerializer.Meta):
        fields = [*PageSerializer.Meta.fields, "markdown"]


class JobSerializer(serializers.ModelSerializer):
    document = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    usage = serializers.SerializerMethodField()
    review = serializers.SerializerMethodField()
    links = serializers.SerializerMethodField()
    waiting_for = serializers.SerializerMethodField()
    auto = serializers.SerializerMethodField()

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
            "auto",
            "created_at",
            "started_at",
            "finished_at",
            "expires_at",
            "expired_at",
            "webhook_url",
            "error",
            "waiting_for",
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

    def get_auto(self, job: Job) -> dict | None:
        """An ``auto`` job (``null`` for others): the pages read again by a VLM engine, their
        share of the job's pages, the seconds the VLM engines spent, and the pages whose score
        passed the threshold but stayed as ``local`` read them, with a note saying why."""
        return job_auto_summary(job=job)

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

    def get_waiting_for(self, job: Job) -> dict | None:
        """While no live worker serves the job's engine: which, since when, and when the job
        fails if none comes back (FOLIO_ENGINE_WAIT_LIMIT); ``null`` otherwise."""
        if job.is_final or job.waiting_fails_at is None:
            return None
        return {
            "engine": job.waiting_for,
            "since": job.waiting_since,
            "fails_at": job.waiting_fails_at,
            "message": f"waiting for a worker that serves {job.waiting_for}: none is running",
        }

    def get_links(self, job: Job) -> dict:
        request = self.context.get("request")
        return {
            "self": reverse("job-detail", args=[job.id], request=request),
            "result": reverse("job-result", args=[job.id], request=request),
            "cancel": reverse("job-cancel", args=[job.id], request=request),
            "deliveries": reverse("job-deliveries", args=[job.id], request=request),
            "pages": reverse("job-pages", args=[job.id], request=request),
        }


class JobDetailSerializer(JobSerializer):
    """The status document: the job, its progress and its pages counted by state
    (``page_summary``); every page's details only when asked for (``include=pages``, in the
    serializer's ``pages`` context), so that a poll of a long job stays small."""

    page_summary = serializers.SerializerMethodField()
    pages = serializers.SerializerMethodField(
        help_text="only with `include=pages`: every page's details"
    )

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "page_summary", "pages"]

    def get_review(self, job: Job) -> dict:
        numbers = job.pages.filter(needs_review=True).order_by("number")
        return {
            **super().get_review(job),
            "pages": list(numbers.values_list("number", flat=True)),
            # pages with text in a script no installed OCR model reads (missing from them)
            "unread_script_pages": job_unread_script_pages(job=job),
        }

    @extend_schema_field(PageSummarySerializer)
    def get_page_summary(self, job: Job) -> dict:
        return job_page_summary(job=job)

    @extend_schema_field(PageSerializer(many=True))
    def get_pages(self, job: Job) -> list[dict]:
        query = self.context.get("pages", {})
        pages = job_pages_listed(
            job=job, needs_review=query.get("needs_review"), sort=query.get("sort", "number")
        )
        return PageSerializer(pages, many=True).data

    def to_representation(self, job: Job) -> dict:
        if self.context.get("pages", {}).get("include") != "pages":
            # Left out, not computed: the summary says what a poll needs.
            self.fields.pop("pages", None)
        return super().to_representation(job)


class JobPagesSerializer(serializers.Serializer):
    """``GET /v1/jobs/{id}/pages``: the job's pages, a page of them at a time."""

    count = serializers.IntegerField()
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = PageSerializer(many=True)


# --- the result's other formats (`format=blocks|chunks|pdf`): query, and their documents ------


class JobResultQuerySerializer(serializers.Serializer):
    format = serializers.ChoiceField(
        choices=["markdown", "json", "blocks", "chunks", "pdf"],
        required=False,
        help_text="`markdown` (joined; the default) or `json` (per page) as `Accept` says "
        "otherwise; `blocks`: layout blocks with boxes; `chunks`: chunks for retrieval; "
        "`pdf`: a searchable PDF",
    )
    max_tokens = serializers.IntegerField(
        required=False,
        min_value=MIN_MAX_TOKENS,
        max_value=MAX_MAX_TOKENS,
        default=DEFAULT_MAX_TOKENS,
        help_text="`format=chunks`: the most tokens in a chunk (tables and formulas are never "
        "split and may exceed it)",
    )
    page_markers = serializers.BooleanField(
        required=False,
        default=False,
        help_text="joined Markdown: a marker line before each page (`<!-- page 3 -->`)",
    )
    page_marker = serializers.CharField(
        required=False,
        max_length=PAGE_MARKER_MAX,
        help_text="the marker line itself, with `{page}` where the number goes (implies "
        "`page_markers`)",
    )

    def validate_page_marker(self, value: str) -> str:
        if "{page}" not in value or "\n" in value:
            raise serializers.ValidationError(
                "page_marker must be one line holding {page}, e.g. `--- page {page} ---`"
            )
        return value


class BlockSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="`p<page>-b<index>`: cited by chunks")
    type = serializers.ChoiceField(choices=list(BLOCK_TYPES))
    level = serializers.IntegerField(required=False, help_text="headings and titles: 1 for `#`")
    markdown = serializers.CharField(allow_blank=True)
    bbox = serializers.ListField(
        child=serializers.FloatField(),
        min_length=4,
        max_length=4,
        help_text="x0, y0, x1, y1 in points from the page's top-left corner",
    )
    confidence = serializers.FloatField(
        required=False, help_text="0-1, where the engine gives one (OCR: mean line score)"
    )


class PageBlocksSerializer(serializers.Serializer):
    page = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Page.Status.choices)
    width = serializers.FloatField(required=False, help_text="points")
    height = serializers.FloatField(required=False, help_text="points")
    source = serializers.ChoiceField(
        choices=["text-layer", "ocr", "grounding", "page"],
        required=False,
        help_text="where the boxes came from; `page`: the engine gave none, one block covers "
        "the page",
    )
    blocks = BlockSerializer(many=True)
    error = serializers.CharField(required=False)


class BlocksDocumentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=Job.Status.choices)
    unit = serializers.ChoiceField(choices=["pt"])
    origin = serializers.ChoiceField(choices=["top-left"])
    pages = PageBlocksSerializer(many=True)


class ChunkBoxSerializer(serializers.Serializer):
    page = serializers.IntegerField()
    block = serializers.CharField(help_text="the block's id in `format=blocks`")
    bbox = serializers.ListField(child=serializers.FloatField(), min_length=4, max_length=4)


class ChunkSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    text = serializers.CharField(help_text="the chunk's Markdown")
    tokens = serializers.IntegerField(help_text="approximate, as usage counts them")
    headings = serializers.ListField(
        child=serializers.CharField(), help_text="the headings it sits under, outermost first"
    )
    pages = serializers.ListField(child=serializers.IntegerField())
    boxes = ChunkBoxSerializer(many=True, help_text="where on which page its text came from")


class ChunksDocumentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=Job.Status.choices)
    max_tokens = serializers.IntegerField()
    chunks = ChunkSerializer(many=True)


class JobPagesResultSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=Job.Status.choices)
    pages = PageResultSerializer(many=True)
    usage = serializers.DictField()
