"""Reads for webhooks, always scoped to their owner."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from webapp.webhooks.models import WebhookDelivery, WebhookEndpoint


def endpoints_of(*, owner: User) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(owner=owner)


def endpoint_get(*, owner: User, endpoint_id) -> WebhookEndpoint | None:
    return endpoints_of(owner=owner).filter(pk=endpoint_id).first()


def deliveries_of(*, owner: User) -> QuerySet[WebhookDelivery]:
    return (
        WebhookDelivery.objects.filter(endpoint__owner=owner)
        .select_related("endpoint")
        .prefetch_related("attempt_log")
        .order_by("-created_at")
    )


def delivery_get(*, owner: User, delivery_id) -> WebhookDelivery | None:
    return deliveries_of(owner=owner).filter(pk=delivery_id).first()


def endpoint_for_job_url_existing(*, owner_id: int, url: str) -> WebhookEndpoint | None:
    """The owner's endpoint for a job's ``webhook_url``: a registered endpoint with that URL
    before the one kept for job URLs."""
    return (
        WebhookEndpoint.objects.filter(owner_id=owner_id, url=url)
        .order_by("-for_all_jobs", "created_at")
        .first()
    )
