"""Which pages each live worker process is working on right now, kept in the broker's Redis.

The reaper re-sends every page claimed longer ago than the page time limit plus a minute. A GPU
page can legitimately run longer than that (a long page at the token cap, queued behind 31
others in vLLM's batch), and was then decoded twice. So each worker process publishes the ids of
the pages in its hands under ``folio:worker:<worker@host>:<pid>``, refreshed every
``HEARTBEAT_SECONDS`` and expiring after ``TTL_SECONDS``: a key that is there says the process
lives, and what it is doing. The reaper never re-sends a page its worker still lists. (Lost
hosts are found by ping, ``webapp.jobs.liveness``; a dead process's key expires by itself.)

When Redis cannot be read the reaper falls back to elapsed time alone, as before.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15
# Generous: a prefork child in a long C call may hold the GIL past a beat or two.
TTL_SECONDS = 120
PREFIX = "folio:worker:"


def key(worker: str) -> str:
    return f"{PREFIX}{worker}"


def _client():
    from ocr_worker.celery_app import app

    return app.connection_for_write()


class Heartbeat:
    """One per worker process: the pages in hand, published now and then by a daemon thread
    (started on first use, so a prefork child starts its own after the fork)."""

    def __init__(self, worker: str, *, interval: float = HEARTBEAT_SECONDS):
        self.worker = worker
        self.interval = interval
        self._pages: dict[int, int] = {}  # page id → how many tasks hold it (threads pools)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @contextmanager
    def holding(self, page_id: int) -> Iterator[None]:
        with self._lock:
            self._pages[page_id] = self._pages.get(page_id, 0) + 1
            self._start()
        self.publish()  # at once: the reaper may look before the next beat
        try:
            yield
        finally:
            with self._lock:
                if self._pages.get(page_id, 0) <= 1:
                    self._pages.pop(page_id, None)
                else:
                    self._pages[page_id] -= 1
            self.publish()

    def pages(self) -> list[int]:
        with self._lock:
            return sorted(self._pages)

    def publish(self) -> None:
        try:
            with _client() as connection:
                connection.default_channel.client.set(
                    key(self.worker), json.dumps(self.pages()), ex=TTL_SECONDS
                )
        except Exception:  # the broker is down: the page goes on; the reaper falls back
            logger.warning("worker heartbeat not published", exc_info=True)

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._beat, name="folio-heartbeat", daemon=True)
            self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            self.publish()

    def stop(self) -> None:
        self._stop.set()


def pages_in_hand(workers: Iterable[str]) -> dict[str, set[int] | None] | None:
    """For each worker, the pages its live process lists (``None``: no live process under that
    name). ``None`` overall when Redis cannot be read."""
    names = sorted({w for w in workers if w})
    if not names:
        return {}
    try:
        with _client() as connection:
            values = connection.default_channel.client.mget([key(w) for w in names])
    except Exception:
        logger.warning("worker heartbeats unavailable; the reaper goes by time", exc_info=True)
        return None
    found: dict[str, set[int] | None] = {}
    for name, value in zip(names, values, strict=True):
        found[name] = None if value is None else set(json.loads(value))
    return found


_heartbeat: Heartbeat | None = None
_heartbeat_lock = threading.Lock()


def process_heartbeat(worker: str) -> Heartbeat:
    """This process's heartbeat (a prefork child gets its own: ``worker`` carries the pid)."""
    global _heartbeat
    with _heartbeat_lock:
        if _heartbeat is None or _heartbeat.worker != worker:
            _heartbeat = Heartbeat(worker)
        return _heartbeat
