"""What the running workers serve, asked of them over the broker."""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings

from ocr_worker.celery_app import app
from webapp.core.queues import PLAIN_SUFFIX, engine_queue

logger = logging.getLogger(__name__)

_CACHE_SECONDS = 5.0
_cache: tuple[float, set[str]] | None = None
_refreshing = threading.Lock()


def serving_engines(*, timeout: float = 1.0, fresh: bool = False) -> set[str]:
    """Engine names with at least one live worker on their queue. Raises when the broker is
    unreachable. Cached briefly (unless ``fresh``): a broadcast waits ``timeout`` for replies.
    A worker on an engine's no-speculation queue alone (``queues.plain_queue``) takes only
    pages handed over to it, so it does not make the engine served."""
    return {name for name in _served_queues(timeout, fresh) if not name.endswith(PLAIN_SUFFIX)}


def serves_plain(engine: str, *, timeout: float = 1.0, fresh: bool = False) -> bool | None:
    """Whether a live worker consumes ``engine``'s no-speculation queue; ``None`` when the
    broker cannot be asked."""
    try:
        return engine + PLAIN_SUFFIX in _served_queues(timeout, fresh)
    except Exception:
        logger.warning("cannot ask the workers which queues they serve", exc_info=True)
        return None


def _served_queues(timeout: float, fresh: bool) -> set[str]:
    """The names after ``ocr.`` of the engine queues live workers consume."""
    global _cache
    now = time.monotonic()
    if not fresh and _cache is not None and now - _cache[0] < _CACHE_SECONDS:
        return _cache[1]
    # Every submission asks this: while one thread of the process broadcasts, the others
    # answer with what was known a moment ago instead of each waiting `timeout` themselves.
    known = None if fresh or _cache is None else _cache[1]
    if known is None:
        _refreshing.acquire()
    elif not _refreshing.acquire(blocking=False):
        return known
    try:
        engines = _ask_workers(timeout=timeout)
    finally:
        _refreshing.release()
    _cache = (time.monotonic(), engines)
    return engines


def _ask_workers(*, timeout: float) -> set[str]:
    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, timeout=timeout)
        replies = app.control.inspect(timeout=timeout, connection=connection).active_queues() or {}
    prefix = engine_queue("")
    return {
        queue["name"].removeprefix(prefix)
        for queues in replies.values()
        for queue in queues
        if queue["name"].startswith(prefix)
    }


def served_engines_or_none(*, fresh: bool = False) -> set[str] | None:
    """The engines served now, or ``None`` when the broker cannot be asked (then nobody can
    tell, and work is accepted: its pages wait in the database, as for a broker outage)."""
    try:
        return serving_engines(fresh=fresh)
    except Exception:
        logger.warning("cannot ask the workers which engines they serve", exc_info=True)
        return None


def unserved_engine_refusal(engine: str) -> str | None:
    """Why a job for ``engine`` must be refused now (no live worker serves it, so it would
    wait for nothing), or ``None``. ``FOLIO_REFUSE_UNSERVED_ENGINES=0`` turns the check off
    (for brokers that cannot broadcast to workers)."""
    if not settings.FOLIO_REFUSE_UNSERVED_ENGINES:
        return None
    served = served_engines_or_none()
    if served is None or engine in served:
        return None
    return (
        f"no worker serves the engine {engine!r} now, so its job would wait for nothing; "
        f"engines served now: {', '.join(sorted(served)) or 'none'}"
    )
