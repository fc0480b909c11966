from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Event(models.TextChoices):
    JOB_SUCCEEDED = "job.succeeded"
    JOB_PARTIALLY_FAILED = "job.partially_failed"
    JOB_FAILED = "job.failed"
    JOB_CANCELLED = "job.cancelled"
    PAGE_COMPLETED = "page.completed"


JOB_EVENTS = [
    Event.JOB_SUCCEEDED,
    Event.JOB_PARTIALLY_FAILED,
    Event.JOB_FAILED,
    Event.JOB_CANCELLED,
]


class WebhookEndpoint(models.Model):
    """A URL that receives a user's events, signed with its own ``whsec_`` secret.

    ``for_all_jobs`` endpoints were registered by their owner and get every event they
    subscribe to; the others were created for a job's ``webhook_url`` and get only the final
    event of the jobs that named them. ``previous_secret`` keeps signing beside ``secret``
    until ``previous_secret_expires_at`` (rotation without a gap). A ``410 Gone`` answer sets
    ``disabled_at``; the owner can enable it again.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    events = models.JSONField(default=list, blank=True)
    for_all_jobs = models.BooleanField(default=True)
    secret = models.CharField(max_length=100)
    previous_secret = models.CharField(max_length=100, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.url} ({self.owner})"


class WebhookDelivery(models.Model):
    """One event for one endpoint: the outbox row, written in the transaction that caused it.

    Status transitions (each by a conditional UPDATE on ``status`` and ``attempts``):

    - ``pending → pending``: an attempt failed in a way worth retrying (network error, 5xx,
      429); ``next_attempt_at`` moves along the retry schedule (or to ``Retry-After``).
    - ``pending → succeeded``: the endpoint answered 2xx.
    - ``pending → failed``: retries exhausted, a 4xx other than 429, a blocked address, the
      endpoint disabled (410 Gone) or removed.

    ``succeeded`` and ``failed`` are final; a redeliver makes a new row with the same
    ``message_id`` (the ``webhook-id`` a receiver deduplicates on).
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    job = models.ForeignKey(
        "jobs.Job", on_delete=models.CASCADE, null=True, blank=True, related_name="deliveries"
    )
    event = models.CharField(max_length=40, choices=Event.choices)
    message_id = models.CharField(max_length=64)
    payload = models.JSONField()
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # When a message was last sent for this delivery; empty: the sweep must send one.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # While an attempt is being made: no other worker may make one until then.
    locked_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint.url} ({self.status})"


class WebhookAttempt(models.Model):
    """One HTTP request of a delivery, for the delivery log."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField()
    error = models.TextField(blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["delivery", "number"]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}: {self.status_code or self.error}"
