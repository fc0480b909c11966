"""The deliveries outbox: events are written as ``WebhookDelivery`` rows inside the
transaction that caused them (a job finishing, a page completing), and a message carrying the
delivery's id is sent once that transaction commits. A delivery is therefore never lost: if
the message is, the periodic sweep (``deliveries_dispatch_due``) sends another for every
pending delivery that is due."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from webapp.jobs.models import Job, Page
from webapp.jobs.selectors import job_progress
from webapp.webhooks.models import Event, WebhookDelivery, WebhookEndpoint
from webapp.webhooks.queueing import deliveries_enqueue
from webapp.webhooks.selectors import endpoint_for_job_url_existing

logger = logging.getLogger(__name__)

# A message that did not lead to an attempt in this long is presumed lost and sent again.
ENQUEUED_GRACE = timedelta(minutes=5)


def job_event_record(*, job_id: uuid.UUID) -> int:
    """Write the deliveries of a job's final event. Call it in the transaction that made the
    job final; the messages go out when it commits."""
    job = Job.objects.select_related("document").get(pk=job_id)
    event = f"job.{job.status}"
    endpoints = {
        endpoint.pk: endpoint
        for endpoint in WebhookEndpoint.objects.filter(
            owner_id=job.owner_id, for_all_jobs=True, disabled_at__isnull=True
        )
        if event in endpoint.events
    }
    if job.webhook_url:
        named = endpoint_for_job_url_existing(owner_id=job.owner_id, url=job.webhook_url)
        if named is not None and named.disabled_at is None:
            endpoints[named.pk] = named
    if not endpoints:
        return 0
    payload = {
        "type": event,
        "timestamp": iso_time(timezone.now()),
        "data": job_event_data(job=job),
    }
    return deliveries_create(endpoints=endpoints.values(), job=job, event=event, payload=payload)


def page_event_record(*, job_id: uuid.UUID, page_id: int) -> int:
    """``page.completed`` for the owner's endpoints that asked for it (in the page's
    transaction, like ``job_event_record``)."""
    job = Job.objects.select_related("document").get(pk=job_id)
    endpoints = [
        endpoint
        for endpoint in WebhookEndpoint.objects.filter(
            owner_id=job.owner_id, for_all_jobs=True, disabled_at__isnull=True
        )
        if Event.PAGE_COMPLETED in endpoint.events
    ]
    if not endpoints:
        return 0
    page = Page.objects.get(pk=page_id)
    data = {
        "job_id": str(job.id),
        "page": page.number,
        "status": page.status,
        "method": page.method,
        "input_tokens": page.input_tokens,
        "output_tokens": page.output_tokens,
        "needs_review": page.needs_review,
        "review_score": page.review_score,
        "review_reasons": page.quality.get("reasons", []),
        "progress": job_progress(job=job),
        "links": job_links(job=job),
    }
    payload = {"type": Event.PAGE_COMPLETED, "timestamp": iso_time(timezone.now()), "data": data}
    return deliveries_create(
        endpoints=endpoints, job=job, event=Event.PAGE_COMPLETED, payload=payload
    )


def job_links(*, job: Job) -> dict:
    base = settings.FOLIO_PUBLIC_URL
    return {
        "self": base + reverse("job-detail", args=[job.id]),
        "result": base + reverse("job-result", args=[job.id]),
    }


def job_event_data(*, job: Job) -> dict:
    return {
        "id": str(job.id),
        "status": job.status,
        "engine": job.engine,
        "document": {
            "id": str(job.document_id),
            "name": job.document.original_name,
            "sha256": job.document.sha256,
        },
        "progress": job_progress(job=job),
        "usage": {
            "input_tokens": job.input_tokens,
            "output_tokens": job.output_tokens,
            "tokens": job.input_tokens + job.output_tokens,
        },
        "review": {
            "pages_needing_review": job.pages_needing_review,
            "pages": list(
                job.pages.filter(needs_review=True)
                .order_by("number")
                .values_list("number", flat=True)
            ),
        },
        "created_at": iso_time(job.created_at),
        "finished_at": iso_time(job.finished_at) if job.finished_at else None,
        "expires_at": iso_time(job.expires_at) if job.expires_at else None,
        "links": job_links(job=job),
    }


def deliveries_create(*, endpoints, job: Job | None, event: str, payload: dict) -> int:
    now = timezone.now()
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint=endpoint,
            job=job,
            event=event,
            message_id=f"msg_{uuid.uuid4().hex}",
            payload=payload,
            next_attempt_at=now,
            enqueued_at=now,
        )
        for endpoint in endpoints
    )
    ids = [delivery.pk for delivery in deliveries]
    transaction.on_commit(lambda: deliveries_send(ids))
    return len(ids)


def deliveries_send(ids: list[uuid.UUID], countdown: float = 0) -> None:
    if not deliveries_enqueue(delivery_ids=ids, countdown=countdown):
        WebhookDelivery.objects.filter(pk__in=ids).update(enqueued_at=None)


def deliveries_dispatch_due(*, now: datetime | None = None) -> int:
    """Send a message for every pending delivery that is due and has none on its way (its
    message was lost with Redis, or its back-off was too long for a delayed message)."""
    now = now or timezone.now()
    due = (
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
        )
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=now - ENQUEUED_GRACE))
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .values_list("pk", flat=True)[:1000]
    )
    ids = list(due)
    if ids:
        WebhookDelivery.objects.filter(pk__in=ids).update(enqueued_at=now)
        deliveries_send(ids)
        logger.info("sent %d due webhook deliveries", len(ids))
    return len(ids)


def iso_time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
