"""Webhook endpoints: registration (the URL checked against the SSRF policy, the optional
verification handshake), changes, secret rotation, the test event, and the endpoint a job's
``webhook_url`` is delivered to."""

from __future__ import annotations

import json
import logging
import secrets
import uuid
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from webapp.core.fetch import address_policy
from webapp.core.ssrf import AddressPolicy, BlockedAddress, resolve
from webapp.webhooks.models import Event, WebhookEndpoint
from webapp.webhooks.selectors import endpoint_for_job_url_existing
from webapp.webhooks.services.outbox import deliveries_create, iso_time
from webapp.webhooks.services.signing import secret_generate, signature_headers
from webapp.webhooks.services.transport import USER_AGENT, delivery_post

logger = logging.getLogger(__name__)

# The event the browser interface sends to check a receiver.
TEST_EVENT = "webhook.test"
VERIFICATION_EVENT = "webhook.verification"


class WebhookError(ValueError):
    """A request about webhooks refused before anything was written; the message says why."""


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
        {"type": VERIFICATION_EVENT, "timestamp": iso_time(now), "data": {"challenge": challenge}}
    )
    headers = signature_headers(
        endpoint=WebhookEndpoint(secret=secret),
        message_id=f"msg_verify_{uuid.uuid4().hex}",
        body=body,
        now=now,
    )
    outcome = delivery_post(
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
        "timestamp": iso_time(timezone.now()),
        "data": {"endpoint_id": str(endpoint.pk), "message": "A test event sent from Folio."},
    }
    with transaction.atomic():
        deliveries_create(endpoints=[endpoint], job=None, event=TEST_EVENT, payload=payload)
    logger.info("test event for endpoint %s", endpoint.pk)


def endpoint_for_job_url(*, owner: User, url: str) -> WebhookEndpoint:
    """The endpoint a job's ``webhook_url`` is delivered to: the owner's registered endpoint
    with that URL if there is one, else one kept for job URLs (its secret is listed with the
    owner's endpoints; its secret is shown by rotating it)."""
    url = webhook_url_validate(url=url)
    existing = endpoint_for_job_url_existing(owner_id=owner.pk, url=url)
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
