from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models

from model.engines.auto import reading_engine


class Document(models.Model):
    """An uploaded file, stored once per content (the storage name is its SHA-256), owned by
    one user. Two users uploading the same bytes get two rows over one stored file."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="documents"
    )
    file = models.FileField(max_length=300)
    sha256 = models.CharField(max_length=64, db_index=True)
    mime_type = models.CharField(max_length=100)
    page_count = models.PositiveIntegerField()
    original_name = models.CharField(max_length=255)
    # The title in the document's own metadata (a PDF's /Title); "" when it names none.
    title = models.CharField(max_length=300, blank=True)
    size = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when retention removed the stored file; a new upload of the same bytes clears it.
    file_deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "sha256"], name="one_document_per_owner_and_content"
            )
        ]

    def __str__(self) -> str:
        return f"{self.original_name} ({self.page_count} pages)"


class Job(models.Model):
    """One request to transcribe some pages of a document with one engine.

    Status transitions (each by a conditional UPDATE, so racing workers cannot both win):

    - ``queued → running``: the first page is claimed by a worker.
    - ``queued|running → succeeded``: the last page finished and none failed.
    - ``queued|running → partially_failed``: the last page finished, some (not all) failed.
    - ``queued|running → failed``: the last page finished and every page failed.
    - ``queued|running → cancelled``: a cancel request. Its queued pages are cancelled with
      it; pages already done are kept, and a page that was running when the cancel came
      still lands (done or failed) in the result when it finishes.

    ``succeeded``, ``partially_failed``, ``failed`` and ``cancelled`` are final. Expiry is not
    a status: a final job gets ``expires_at`` when it ends, and at that time retention deletes
    its pages' Markdown (and its file, once no live job needs it) and sets ``expired_at``.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        PARTIALLY_FAILED = "partially_failed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    FINAL = (Status.SUCCEEDED, Status.PARTIALLY_FAILED, Status.FAILED, Status.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="jobs"
    )
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="jobs")
    engine = models.CharField(max_length=50)
    page_selection = models.CharField(max_length=200, blank=True, help_text="as the client sent it")
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    pages_total = models.PositiveIntegerField()
    pages_done = models.PositiveIntegerField(default=0)
    pages_failed = models.PositiveIntegerField(default=0)
    pages_cancelled = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    engine_seconds = models.FloatField(default=0.0, help_text="sum over pages")
    # Written once when the job ends: pages/s, output tokens/s, time to first token and
    # speculative-decoding acceptance, from what its pages' engine reported.
    engine_metrics = models.JSONField(default=dict, blank=True)
    # Pages whose quality signals say a person should look (model.quality.signals).
    pages_needing_review = models.PositiveIntegerField(default=0)
    # ``auto`` jobs (model.engines.auto): pages read again by a VLM engine, the seconds the
    # VLM engines spent on them, and pages whose score passed FOLIO_AUTO_THRESHOLD that stayed
    # as ``local`` read them (no VLM engine served, or the token budget spent).
    pages_escalated = models.PositiveIntegerField(default=0)
    vlm_seconds = models.FloatField(default=0.0)
    pages_left_local = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    # The client's Idempotency-Key and a digest of what it sent with it: the same key with the
    # same request answers this job again; with another request it is refused.
    idempotency_key = models.CharField(max_length=255, blank=True)
    request_fingerprint = models.CharField(max_length=64, blank=True)
    # Where to announce the job's end, besides the owner's registered endpoints.
    webhook_url = models.URLField(max_length=2000, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    # Set by the reaper while no live worker serves this job's engine and pages wait for one
    # (the engine's name, and since when); cleared when a worker serves it again. A job that
    # waits longer than FOLIO_ENGINE_WAIT_LIMIT fails with that reason.
    waiting_for = models.CharField(max_length=50, blank=True)
    waiting_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="one_job_per_owner_and_idempotency_key",
            )
        ]

    def __str__(self) -> str:
        return f"job {self.id} ({self.status})"

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL

    @property
    def is_expired(self) -> bool:
        return self.expired_at is not None

    @property
    def waiting_fails_at(self):
        """When this job fails if no worker for its engine comes back; ``None`` unless it
        waits for one."""
        if not self.waiting_for or self.waiting_since is None:
            return None
        return self.waiting_since + timedelta(seconds=settings.FOLIO_ENGINE_WAIT_LIMIT)


class Page(models.Model):
    """One page of a job: the unit of work of the queue.

    Status transitions:

    - ``queued → running``: claimed by the worker holding the page's current ``task_id``;
      ``running → running`` again when that message is redelivered after a worker died.
    - ``running → queued``: a transient error; the page is retried after a back-off. Or the
      engine handed the page over to a worker started without speculative decoding
      (``decode_plain`` set: every later message for it goes to that worker's queue).
    - ``running → succeeded|failed``: only by the claim that is still current (``attempts``
      matches), so a page lands in the result exactly once.
    - ``queued|running → cancelled``: its job was cancelled before it finished.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    CLAIMABLE = (Status.QUEUED, Status.RUNNING)

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="pages")
    number = models.PositiveIntegerField(help_text="1-indexed page number in the document")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    # The Celery task id of the message that may work on this page; any other message is stale.
    task_id = models.UUIDField(default=uuid.uuid4)
    attempts = models.PositiveIntegerField(default=0)
    # Handed over by its engine (a runaway decode under speculation): its messages go to the
    # engine's no-speculation queue (webapp.core.queues.plain_queue).
    decode_plain = models.BooleanField(default=False)
    # The engine whose queue the page's messages go to, and once it is done, the engine whose
    # reading it holds: the job's engine, except in ``auto`` jobs (``local`` first, then the
    # VLM engine a page is escalated to, model.engines.auto).
    engine = models.CharField(max_length=50, blank=True)
    # An ``auto`` job's page: whether it was escalated and why, which reading was kept and why;
    # while it waits for the VLM, the local reading it would keep (``local``). Empty otherwise.
    escalation = models.JSONField(default=dict, blank=True)
    worker = models.CharField(
        max_length=200, blank=True, help_text="hostname:pid of the last claim"
    )
    markdown = models.TextField(blank=True)
    # Where the text is on the page (model.layout.PageLayout.to_dict): blocks in reading order
    # with boxes in points, the page size, and an OCR'd page's words. The blocks, chunks and
    # searchable PDF outputs are built from it.
    layout = models.JSONField(default=dict, blank=True)
    method = models.CharField(max_length=30, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    render_seconds = models.FloatField(null=True, blank=True)
    engine_seconds = models.FloatField(null=True, blank=True)
    queue_wait_seconds = models.FloatField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # Set once the broker took the page's message; empty means the reaper must send it.
    sent_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    # What the engine reported beyond the text (timings, speculative decoding, repetition
    # retries, the stored figure crops): read by the job's engine figures and the UI.
    extra = models.JSONField(default=dict, blank=True)
    # The page's quality signals and the reasons it needs review, if it does.
    needs_review = models.BooleanField(default=False)
    # 0-1: how likely a person would find the page wrong (model.quality.review); None for
    # pages not transcribed yet, or read before scores existed.
    review_score = models.FloatField(null=True, blank=True)
    quality = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="one_row_per_job_page")
        ]
        indexes = [models.Index(fields=["status", "started_at"])]

    def __str__(self) -> str:
        return f"page {self.number} of {self.job_id} ({self.status})"

    def save(self, *args, **kwargs) -> None:
        # A page made one by one (submission writes them in bulk, naming it) is read by its
        # job's engine first.
        if not self.engine and self.job_id:
            self.engine = reading_engine(self.job.engine)
        super().save(*args, **kwargs)
