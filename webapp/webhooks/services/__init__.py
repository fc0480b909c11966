"""Writes for webhooks, one seam a module:

- ``endpoints``: registering, verifying, changing and rotating endpoints, the test event;
- ``outbox``: the deliveries written in the transaction that caused them, and sent after it;
- ``redelivery``: sending an event again on its owner's request, throttled;
- ``attempts``: one attempt at a due delivery, recorded, and the retry schedule after it;
- ``transport``: the POST itself, through the SSRF guard, within one deadline;
- ``signing``: secrets and Standard Webhooks signatures.

Callers use the names below (``from webapp.webhooks import services``)."""

from webapp.webhooks.services.attempts import delivery_attempt
from webapp.webhooks.services.endpoints import (
    WebhookError,
    endpoint_create,
    endpoint_for_job_url,
    endpoint_rotate_secret,
    endpoint_test_send,
    endpoint_update,
    endpoint_verify,
    events_validate,
    webhook_url_validate,
)
from webapp.webhooks.services.outbox import (
    deliveries_dispatch_due,
    job_event_data,
    job_event_record,
    job_links,
    page_event_record,
)
from webapp.webhooks.services.redelivery import (
    RedeliveryPending,
    RedeliveryThrottled,
    delivery_redeliver,
)
from webapp.webhooks.services.signing import secret_generate, signature_headers

__all__ = [
    "RedeliveryPending",
    "RedeliveryThrottled",
    "WebhookError",
    "deliveries_dispatch_due",
    "delivery_attempt",
    "delivery_redeliver",
    "endpoint_create",
    "endpoint_for_job_url",
    "endpoint_rotate_secret",
    "endpoint_test_send",
    "endpoint_update",
    "endpoint_verify",
    "events_validate",
    "job_event_data",
    "job_event_record",
    "job_links",
    "page_event_record",
    "secret_generate",
    "signature_headers",
    "webhook_url_validate",
]
