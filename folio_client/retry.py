"""When to send a request again, and after how long; shared by the sync and async clients.

- 429 and 503 wait what ``Retry-After`` asks (seconds or an HTTP date), and every request of
  the same client waits too (see ``Pause``): a client with many files in flight backs off
  as a whole instead of having each request find out on its own.
- 502/504 and connection errors back off exponentially with full jitter.
- Every request of this client can be sent again safely: reads are reads, and submissions
  carry an ``Idempotency-Key``, so a retried upload answers the first job.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

RATE_LIMIT_STATUSES = frozenset({429, 503})
TRANSIENT_STATUSES = frozenset({502, 504})


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5  # connection errors and 5xx without Retry-After
    rate_limit_retries: int = 20  # 429/503 answers waited out, per request
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    # A longer Retry-After (a daily quota) is raised as RateLimitedError instead of sleeping.
    max_retry_after: float = 300.0

    def backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(max, base * 2^attempt)]."""
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2**attempt))


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class Attempts:
    """The retry state of one request."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.failures = 0
        self.rate_limited = 0

    def after_response(self, response: httpx.Response) -> float | None:
        """Seconds to wait before sending again, or None to give the answer to the caller."""
        code = response.status_code
        if code in RATE_LIMIT_STATUSES:
            wait = retry_after_seconds(response.headers.get("Retry-After"))
            if wait is not None:
                if wait > self.policy.max_retry_after:
                    return None
                self.rate_limited += 1
                return wait if self.rate_limited <= self.policy.rate_limit_retries else None
        if code in RATE_LIMIT_STATUSES or code in TRANSIENT_STATUSES:
            return self._backoff()
        return None

    def after_error(self, error: httpx.TransportError) -> float | None:
        return self._backoff()

    def _backoff(self) -> float | None:
        if self.failures >= self.policy.max_retries:
            return None
        delay = self.policy.backoff(self.failures)
        self.failures += 1
        return delay


class Pause:
    """A moment before which no request of this client is sent (the latest Retry-After)."""

    def __init__(self) -> None:
        self._until = 0.0

    def extend(self, seconds: float) -> None:
        self._until = max(self._until, time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self._until - time.monotonic())
