"""One POST to a receiver, through the SSRF guard, within one deadline for the whole
exchange, reading at most an excerpt of the answer; what came of it (``Outcome``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, timedelta
from email.utils import parsedate_to_datetime

import httpx
from django.conf import settings
from django.utils import timezone

from webapp.core.fetch import address_policy
from webapp.core.ssrf import BlockedAddress, guarded_client

USER_AGENT = "Folio-Webhooks/1"
MAX_RETRY_AFTER = timedelta(days=1)
# What is kept of a receiver's answer: enough to show why it refused, never its whole body.
RESPONSE_EXCERPT_BYTES = 500


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    error: str
    retry: bool
    retry_after: timedelta | None = None
    gone: bool = False
    excerpt: str = ""


def delivery_post(*, url: str, body: str, headers: dict[str, str]) -> Outcome:
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
