"""Secrets and signatures, as the Standard Webhooks specification says: ``whsec_`` secrets,
and the ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` headers (both secrets
sign while a rotated-out one is still in its window)."""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook

from webapp.webhooks.models import WebhookEndpoint

SECRET_PREFIX = "whsec_"


def secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


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
