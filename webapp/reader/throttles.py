from __future__ import annotations

import logging

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle

logger = logging.getLogger(__name__)


class AnonymousReaderThrottle(AnonRateThrottle):
    """A strict per-address limit for Reader requests without a key (users with a key have
    their own quotas). Counted in the shared cache, so every web process sees the same count."""

    scope = "reader-anonymous"

    def get_rate(self) -> str:
        return settings.FOLIO_READER_ANON_RATE

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except Exception:  # the cache is down: serving beats refusing everyone
            logger.exception("rate-limit cache unavailable; letting the request through")
            return True
