"""Webhook endpoints, the deliveries outbox, and sending one delivery attempt.

Events are written as ``WebhookDelivery`` rows inside the transaction that caused them (a job
finishing, a page completing), and a message carrying the delivery's id is sent once that
transaction commits. A delivery is therefore never lost: if the message is, the periodic
sweep sends another for every pending delivery that is due.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from webapp.core.fetch import address_policy
from webapp.core.ssrf import AddressPolicy, BlockedAddress, guarded_client, resolve
from webapp.jobs.models import Job, Page
from webapp.jobs.selectors import job_progress
from webapp.webhooks.models import Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webapp.webhooks.queueing import deliveries_enqueue

logger = logging.getLogger(__name__)

# The event the browser interface sends to check a receiver.
TEST_EVENT = "webhook.test"
VERIFICATION_EVENT = "webhook.verification"

SECRET_PREFIX = "whsec_"
# A message that did not lead to an attempt in this long is presumed lost and sent again.
ENQUEUED_GRACE = timedelta(minutes=5)
# Retries sooner than this get a delayed message; later ones are left to the sweep, because a
# Redis broker hands out unacknowledged delayed messages again after its visibility timeout.
COUNTDOWN_LIMIT_SECONDS = 60
MAX_RETRY_AFTER = timedelta(days=1)
USER_AGENT = "Folio-Webhooks/1"


class WebhookError(ValueError):
    """A request about webhooks refused before anything was written; the message says why."""


# --- endpoints --------------------------------------------------------------------------------


def secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def webhook_url_validate(*, url: str, policy: AddressPolicy | None = None) -> str:
    """Refuse at registration what delivery would refuse anyway: other schemes, and hosts
    that resolve to addresses the SSRF policy blocks (delivery checks again, at connect)."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise WebhookError(f"a webhook URL must be http or https, not {parts.scheme or url!r}")
    if not parts.hostname:
        raise WebhookError(f"{url!r} has no host name")
    policy = policy or address_policy()
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        # Registration waits for the name at most a delivery's whole deadline.
        for address in resolve(parts.hostname, port, timeout=settings.FOLIO_WEBHOOK_TIMEOUT):
            policy.check(parts.hostname, address)
    except BlockedAddress as exc:
        raise WebhookError(f"webhook URL refused: {exc}") from exc
    except (httpx.HTTPError, ValueError) as exc:
        raise WebhookError(f"webhook URL refused: {exc}") from exc
    return url


def events_validate(*, events: list[str]) -> list[str]:
    unknown = sorted(set(events) - set(Event.values))
    if unknown:
        raise WebhookError(
            f"unknown event(s) {', '.join(unknown)}; use any of: {', '.join(Event.values)}"
        )
    if not events:
        raise WebhookError(f"name at least one event: {', '.join(Event.values)}")
    return sorted(set(events))


def endpoint_create(
    *, owner: User, url: str, events: list[str], description: str = "", verify: bool = False
) -> WebhookEndpoint:
    """Register an endpoint; with ``verify``, only once it has proved that it is the
    owner's (``endpoint_verify``)."""
    events = events_validate(events=events)
    url = webhook_url_validate(url=url)
    secret = secret_generate()
    if verify:
        endpoint_verify(url=url, secret=secret)
    return WebhookEndpoint.objects.create(
        owner=owner, url=url, events=events, description=description, secret=secret
    )


def endpoint_verify(*, url: str, secret: str) -> None:
    """The registration handshake: a signed ``webhook.verification`` event carrying a random
    challenge, which the endpoint must answer 2xx with the challenge in the first
    RESPONSE_EXCERPT_BYTES of its body. A URL that merely accepts anything (or one the
    registrant does not control) cannot echo a challenge it never saw."""
    challenge = secrets.token_urlsafe(24)
    now = timezone.now()
    body = json.dumps(
        {"type": VERIFICATION_EVENT, "timestamp": _iso(now), "data": {"challenge": challenge}}
    )
    headers = signature_headers(
        endpoint=WebhookEndpoint(secret=secret),
        message_id=f"msg_verify_{uuid.uuid4().hex}",
        body=body,
        now=now,
    )
    outcome = _post(
        url=url,
        body=body,
        headers={**headers, "content-type": "application/json", "user-agent": USER_AGENT},
    )
    if outcome.status_code is None or not 200 <= outcome.status_code < 300:
        raise WebhookError(
            f"the endpoint did not pass the verification: {outcome.error or 'no answer'}"
        )
    if challenge not in outcome.excerpt:
        raise WebhookError(
            "the endpoint did not pass the verification: its answer must contain the "
            "event's data.challenge"
        )


def endpoint_update(
    *,
    endpoint: WebhookEndpoint,
    url: str | None = None,
    events: list[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
) -> WebhookEndpoint:
    if url is not None:
        endpoint.url = webhook_url_validate(url=url)
    if events is not None:
        endpoint.events = events_validate(events=events)
    if description is not None:
        endpoint.description = description
    if enabled is True:
        endpoint.disabled_at, endpoint.disabled_reason = None, ""
    elif enabled is False and endpoint.disabled_at is None:
        endpoint.disabled_at, endpoint.disabled_reason = timezone.now(), "disabled by its owner"
    endpoint.save()
    return endpoint


def endpoint_rotate_secret(
    *, endpoint: WebhookEndpoint, now: datetime | None = None
) -> WebhookEndpoint:
    """A new secret signs from now on; the old one signs beside it for the rotation window,
    so receivers can switch without missing a delivery."""
    now = now or timezone.now()
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_expires_at = now + timedelta(
        hours=settings.FOLIO_WEBHOOK_ROTATION_HOURS
    )
    endpoint.secret = secret_generate()
    endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at"])
    return endpoint


def endpoint_test_send(*, endpoint: WebhookEndpoint) -> None:
    """A signed ``webhook.test`` event for one endpoint, through the same outbox, retries and
    delivery log as real events, so that a receiver can be checked before a job ends."""
    if endpoint.disabled_at is not None:
        raise WebhookError(
            f"this endpoint is disabled ({endpoint.disabled_reason or 'no reason given'}); "
            "enable it first"
        )
    payload = {
        "type": TEST_EVENT,
        "timestamp": _iso(timezone.now()),
        "data": {"endpoint_id": str(endpoint.pk), "message": "A test event sent from Folio."},
    }
    with transaction.atomic():
        _deliveries_create(endpoints=[endpoint], job=None, event=TEST_EVENT, payload=payload)
    logger.info("test event for endpoint %s", endpoint.pk)


def endpoint_for_job_url(*, owner: User, url: str) -> WebhookEndpoint:
    """The endpoint a job's ``webhook_url`` is delivered to: the owner's registered endpoint
    with that URL if there is one, else one kept for job URLs (its secret is listed with the
    owner's endpoints; its secret is shown by rotating it)."""
    url = webhook_url_validate(url=url)
    existing = (
        WebhookEndpoint.objects.filter(owner=owner, url=url)
        .order_by("-for_all_jobs", "created_at")
        .first()
    )
    if existing is not None:
        return existing
    return WebhookEndpoint.objects.create(
        owner=owner,
        url=url,
        events=[str(event) for event in Event if event != Event.PAGE_COMPLETED],
        for_all_jobs=False,
        description="created for a job's webhook_url",
        secret=secret_generate(),
    )


# --- the outbox -------------------------------------------------------------------------------


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
    payload = {"type": event, "timestamp": _iso(timezone.now()), "data": job_event_data(job=job)}
    return _deliveries_create(endpoints=endpoints.values(), job=job, event=event, payload=payload)


def endpoint_for_job_url_existing(*, owner_id: int, url: str) -> WebhookEndpoint | None:
    return (
        WebhookEndpoint.objects.filter(owner_id=owner_id, url=url)
        .order_by("-for_all_jobs", "created_at")
        .first()
    )


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
    payload = {"type": Event.PAGE_COMPLETED, "timestamp": _iso(timezone.now()), "data": data}
    return _deliveries_create(
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
        "created_at": _iso(job.created_at),
        "finished_at": _iso(job.finished_at) if job.finished_at else None,
        "expires_at": _iso(job.expires_at) if job.expires_at else None,
        "links": job_links(job=job),
    }


def _deliveries_create(*, endpoints, job: Job | None, event: str, payload: dict) -> int:
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
    transaction.on_commit(lambda: _send(ids))
    return len(ids)


def _send(ids: list[uuid.UUID], countdown: float = 0) -> None:
    if not deliveries_enqueue(delivery_ids=ids, countdown=countdown):
        WebhookDelivery.objects.filter(pk__in=ids).update(enqueued_at=None)


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
        transaction.on_commit(lambda: _send([copy.pk]))
    return copy


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
        _send(ids)
        logger.info("sent %d due webhook deliveries", len(ids))
    return len(ids)


# --- one attempt ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    error: str
    retry: bool
    retry_after: timedelta | None = None
    gone: bool = False
    excerpt: str = ""


def signature_headers(
    *, endpoint: WebhookEndpoint, message_id: str, body: str, now: datetime
) -> dict[str, str]:
    """Standard Webhooks headers; during a rotation both secrets sign (space-separated)."""
    signed_at = now.astimezone(UTC).replace(microsecond=0)
    secrets_in_use = [endpoint.secret]
    if endpoint.previous_secret and (
        endpoint.previous_secret_expires_at and endpoint.previous_secret_expires_at > now
    ):
        secrets_in_use.append(endpoint.previous_secret)
    signatures = [
        Webhook(secret).sign(msg_id=message_id, timestamp=signed_at, data=body)
        for secret in secrets_in_use
    ]
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(signed_at.timestamp())),
        "webhook-signature": " ".join(signatures),
    }


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
    outcome = _post(url=endpoint.url, body=body, headers=headers)
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


def _post(*, url: str, body: str, headers: dict[str, str]) -> Outcome:
    # One deadline for the whole delivery (connect, send, the answer's head and excerpt),
    # and only the excerpt of the answer is read: a receiver can neither hold a worker by
    # trickling bytes nor fill its memory with a huge answer.
    deadline = time.monotonic() + settings.FOLIO_WEBHOOK_TIMEOUT
    try:
        with (
            guarded_client(
                policy=address_policy(), timeout=settings.FOLIO_WEBHOOK_TIMEOUT, deadline=deadline
            ) as client,
            client.stream(
                "POST",
                url,
                content=body.encode(),
                # Plain bytes, so the excerpt is text and no decompression can multiply it.
                headers={**headers, "Accept-Encoding": "identity"},
            ) as response,
        ):
            excerpt = _excerpt(response)
    except BlockedAddress as exc:
        return Outcome(status_code=None, error=str(exc), retry=False)
    except httpx.TimeoutException:
        return Outcome(
            status_code=None,
            error=f"no answer within {settings.FOLIO_WEBHOOK_TIMEOUT} s",
            retry=True,
        )
    except httpx.HTTPError as exc:
        return Outcome(status_code=None, error=f"{type(exc).__name__}: {exc}", retry=True)
    code = response.status_code
    if 200 <= code < 300:
        return Outcome(status_code=code, error="", retry=False, excerpt=excerpt)
    if code == 410:
        return Outcome(status_code=code, error="410 Gone", retry=False, gone=True, excerpt=excerpt)
    if code == 429 or code >= 500:
        return Outcome(
            status_code=code,
            error=f"HTTP {code}",
            retry=True,
            retry_after=_retry_after(response.headers.get("retry-after")),
            excerpt=excerpt,
        )
    return Outcome(
        status_code=code,
        error=f"HTTP {code}: the endpoint refused the delivery (not retried)",
        retry=False,
        excerpt=excerpt,
    )


# What is kept of a receiver's answer: enough to show why it refused, never its whole body.
RESPONSE_EXCERPT_BYTES = 500


def _excerpt(response: httpx.Response) -> str:
    """The first RESPONSE_EXCERPT_BYTES of the answer; the rest is never read."""
    kept = bytearray()
    for chunk in response.iter_raw():
        kept += chunk
        if len(kept) >= RESPONSE_EXCERPT_BYTES:
            break
    return bytes(kept[:RESPONSE_EXCERPT_BYTES]).decode("utf-8", errors="replace")


def _retry_after(value: str | None) -> timedelta | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(timedelta(seconds=int(value)), MAX_RETRY_AFTER)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max(when - timezone.now(), timedelta(0)), MAX_RETRY_AFTER)


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
        _send([delivery.pk], countdown=delay.total_seconds())
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


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
