"""Sending an event again on its owner's request (API and UI alike), throttled per owner,
never while a copy of the same message is still pending."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from webapp.webhooks.models import WebhookDelivery
from webapp.webhooks.services.endpoints import WebhookError
from webapp.webhooks.services.outbox import deliveries_send


class RedeliveryPending(WebhookError):
    """The same message to the same endpoint is already waiting to be sent."""


class RedeliveryThrottled(WebhookError):
    """The owner asked for more redeliveries than FOLIO_WEBHOOK_REDELIVER_RATE allows."""

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


RATE_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _redelivery_admit(*, owner_id: int) -> None:
    """Count one redelivery against the owner's rate (API and UI alike): each one makes this
    server send a request, so unthrottled they would turn it against the receiver. A window
    from the first one, in the shared cache."""
    number, period = settings.FOLIO_WEBHOOK_REDELIVER_RATE.split("/")
    seconds = RATE_PERIODS[period[0]]
    key = f"webhook-redeliveries:{owner_id}"
    cache.add(key, 0, timeout=seconds)
    if cache.incr(key) > int(number):
        raise RedeliveryThrottled(
            f"at most {settings.FOLIO_WEBHOOK_REDELIVER_RATE} redeliveries; try again later",
            retry_after=seconds,
        )


def delivery_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send an event again as a new delivery with the same ``webhook-id`` (receivers that
    deduplicate on it see the same message); not while a copy of it is still pending."""
    pending = WebhookDelivery.objects.filter(
        endpoint_id=delivery.endpoint_id,
        message_id=delivery.message_id,
        status=WebhookDelivery.Status.PENDING,
    ).first()
    if pending is not None:
        raise RedeliveryPending(
            f"this message is already on its way (delivery {pending.pk}); "
            "wait for it to finish before sending it again"
        )
    if delivery.endpoint.disabled_at is not None:
        raise WebhookError(
            "this endpoint is disabled "
            f"({delivery.endpoint.disabled_reason or 'no reason given'}); enable it first"
        )
    _redelivery_admit(owner_id=delivery.endpoint.owner_id)
    with transaction.atomic():
        now = timezone.now()
        copy = WebhookDelivery.objects.create(
            endpoint=delivery.endpoint,
            job=delivery.job,
            event=delivery.event,
            message_id=delivery.message_id,
            payload=delivery.payload,
            next_attempt_at=now,
            enqueued_at=now,
        )
        transaction.on_commit(lambda: deliveries_send([copy.pk]))
    return copy
