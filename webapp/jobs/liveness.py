"""Which worker nodes are gone, so that the reaper can hand their pages to the others at once
instead of waiting for the broker's visibility timeout (FOLIO_BROKER_VISIBILITY_TIMEOUT, ten
minutes by default) or the page time limit.

A page records the node that claimed it (``worker@host:pid``). Each reaper round pings every
node; a node that holds running pages and answered no ping for FOLIO_WORKER_LOST_SECONDS (two
rounds at least: one missed ping is not a lost host) is taken for lost. Handing a page out
again is safe even when the node was only slow: the new claim turns the old one stale, and a
stale claim saves nothing.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import cache

from webapp.jobs.models import Job, Page

logger = logging.getLogger(__name__)

PING_TIMEOUT_SECONDS = 2.0
_MISSING_KEY = "node-missing:{}"


def node_of(worker: str) -> str:
    """``worker@host`` from a page's ``worker@host:pid``."""
    return worker.rsplit(":", 1)[0]


def live_nodes(*, timeout: float = PING_TIMEOUT_SECONDS) -> set[str]:
    from ocr_worker.celery_app import app

    replies = app.control.ping(timeout=timeout) or []
    return {name for reply in replies for name in reply}


def lost_nodes(*, live: set[str] | None = None, now: float | None = None) -> set[str]:
    """Nodes that hold running pages and have been missing for FOLIO_WORKER_LOST_SECONDS.

    ``live``: the nodes that answer, pinged only when some node holds pages (a ping waits
    PING_TIMEOUT_SECONDS for replies). No answer at all says more about the broker than about
    the workers: nothing is declared lost then."""
    now = time.time() if now is None else now
    holding = {
        node_of(worker)
        for worker in Page.objects.filter(status=Page.Status.RUNNING, job__status__in=Job.ACTIVE)
        .order_by()
        .values_list("worker", flat=True)
        .distinct()
        if "@" in worker  # a node name; older rows carry only the host name
    }
    if not holding:
        return set()
    live = live_nodes() if live is None else live
    if not live:
        return set()
    lost = set()
    for node in holding:
        key = _MISSING_KEY.format(node)
        if node in live:
            cache.delete(key)
            continue
        # Expires a few rounds after the node is declared lost (and so holds no more pages),
        # so a host name that comes back later starts with a clean slate.
        expiry = settings.FOLIO_WORKER_LOST_SECONDS + 3 * settings.FOLIO_REAP_SECONDS
        first_missed: float = cache.get_or_set(key, now, timeout=expiry) or now
        if now - first_missed >= settings.FOLIO_WORKER_LOST_SECONDS:
            lost.add(node)
    if lost:
        logger.warning("worker nodes lost (no answer to pings): %s", ", ".join(sorted(lost)))
    return lost
