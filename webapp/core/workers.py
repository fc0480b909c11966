"""What the running workers serve, asked of them over the broker."""

from __future__ import annotations

import time

from ocr_worker.celery_app import app
from webapp.core.queues import engine_queue

_CACHE_SECONDS = 5.0
_cache: tuple[float, set[str]] | None = None


def serving_engines(*, timeout: float = 1.0) -> set[str]:
    """Engine names with at least one live worker on their queue. Raises when the broker is
    unreachable. Cached briefly: a broadcast waits ``timeout`` for replies."""
    global _cache
    now = time.monotonic()
    if _cache is not None and now - _cache[0] < _CACHE_SECONDS:
        return _cache[1]
    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, timeout=timeout)
        replies = app.control.inspect(timeout=timeout, connection=connection).active_queues() or {}
    prefix = engine_queue("")
    engines = {
        queue["name"].removeprefix(prefix)
        for queues in replies.values()
        for queue in queues
        if queue["name"].startswith(prefix)
    }
    _cache = (now, engines)
    return engines
