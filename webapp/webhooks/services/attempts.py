"""One attempt at a due delivery (claimed so that no other worker makes it at once),
recorded, and what follows: done, failed, the endpoint disabled (410), or a retry on
FOLIO_WEBHOOK_RETRY_SCHEDULE (never sooner than ``Retry-After``)."""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from webapp.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webapp.webhooks.services.outbox import deliveries_send
from webapp.webhooks.services.signing import signature_headers
from webapp.webhooks.services.transport import USER_AGENT, Outcome, delivery_post

logger = logging.getLogger(__name__)

# Retries sooner than this get a delayed message; later ones are left to the sweep, because a
# Redis broker hands out unacknowledged delayed messages again after its visibility timeout.
COUNTDOWN_LIMIT_SECONDS = 60


def delivery_attempt(*, delivery_id: uuid.UUID | str, now: datetime | None = None) -> str:
    """Make one attempt at a due delivery, if no other worker is making one; record it and
    decide what comes next. Answers what happened, for the task's log."""
    now = now or timezone.now()
    lock = now + timedelta(seconds=settings.FOLIO_WEBHOOK_TIMEOUT + 60)
    # A delayed message may arrive a moment before its due time by the database's clock.
    claimed = (
        WebhookDelivery.objects.filter(
            pk=delivery_id,
            status=WebhookDelivery.Status.PENDING,
            next_attempt_at__lte=now + timedelta(seconds=2),
        )
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .update(locked_until=lock, attempts=F("attempts") + 1)
    )
    if not claimed:
        return "skipped"
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    endpoint = delivery.endpoint
    if endpoint.disabled_at is not None:
        _finish(
            delivery, status=WebhookDelivery.Status.FAILED, code=None, error="endpoint disabled"
        )
        return "endpoint disabled"
    body = json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False)
    headers = {
        **signature_headers(endpoint=endpoint, message_id=delivery.message_id, body=body, now=now),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }
    started = time.monotonic()
    outcome = delivery_post(url=endpoint.url, body=body, headers=headers)
    latency_ms = int((time.monotonic() - started) * 1000)
    WebhookAttempt.objects.create(
        delivery=delivery,
        number=delivery.attempts,
        started_at=now,
        status_code=outcome.status_code,
        latency_ms=latency_ms,
        error=outcome.error,
        response_excerpt=outcome.excerpt,
    )
    return _decide(delivery=delivery, outcome=outcome, now=now)


def _decide(*, delivery: WebhookDelivery, outcome: Outcome, now: datetime) -> str:
    if outcome.status_code is not None and 200 <= outcome.status_code < 300:
        _finish(delivery, status=WebhookDelivery.Status.SUCCEEDED, code=outcome.status_code)
        return "delivered"
    if outcome.gone:
        WebhookEndpoint.objects.filter(pk=delivery.endpoint_id, disabled_at__isnull=True).update(
            disabled_at=now, disabled_reason="the endpoint answered 410 Gone"
        )
        _finish(delivery, status=WebhookDelivery.Status.FAILED, code=410, error=outcome.error)
        logger.warning("webhook endpoint %s answered 410: disabled", delivery.endpoint_id)
        return "gone"
    schedule = settings.FOLIO_WEBHOOK_RETRY_SCHEDULE
    if not outcome.retry or delivery.attempts > len(schedule):
        _finish(
            delivery,
            status=WebhookDelivery.Status.FAILED,
            code=outcome.status_code,
            error=outcome.error,
        )
        return "failed"
    # Jitter spreads the retries of many deliveries that failed together (an outage).
    delay = timedelta(seconds=schedule[delivery.attempts - 1] * random.uniform(0.8, 1.2))
    if outcome.retry_after is not None:
        delay = max(delay, outcome.retry_after)
    soon = delay.total_seconds() <= COUNTDOWN_LIMIT_SECONDS
    moved = WebhookDelivery.objects.filter(
        pk=delivery.pk, status=WebhookDelivery.Status.PENDING, attempts=delivery.attempts
    ).update(
        next_attempt_at=now + delay,
        locked_until=None,
        enqueued_at=timezone.now() if soon else None,
        last_status_code=outcome.status_code,
        last_error=outcome.error,
    )
    if moved and soon:
        deliveries_send([delivery.pk], countdown=delay.total_seconds())
    return f"retry in {delay.total_seconds():.0f} s"


def _finish(delivery: WebhookDelivery, *, status: str, code: int | None, error: str = "") -> None:
    WebhookDelivery.objects.filter(
        pk=delivery.pk, status=WebhookDelivery.Status.PENDING, attempts=delivery.attempts
    ).update(
        status=status,
        locked_until=None,
        last_status_code=code,
        last_error=error,
        finished_at=timezone.now(),
    )
