"""Which engines the running workers serve, from the heartbeats they publish in the broker.

Each worker node's main process (it answers while its pool is busy with pages) writes a record
every FOLIO_WORKER_HEARTBEAT_SECONDS: its node name, the queues it consumes and its capacity
(pool processes or threads), under ``folio:serving:<node>``, listed in the set
``folio:serving``. A reader counts a worker while its record is younger than
FOLIO_WORKER_SEEN_SECONDS, measured by the broker's own clock (the record's remaining TTL), so
hosts' clocks never enter into it. A worker stopped, starved of CPU or gone counts for that
grace period more; after it, its engine is no longer served.

No worker is asked anything: the earlier broadcast (Celery's remote control, waiting 1 s for
replies) saw no reply when several requests of one process asked at once, or when the
worker's main process was slow to answer, and valid work was refused.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from ocr_worker.celery_app import app
from webapp.core.queues import PLAIN_SUFFIX, engine_queue

logger = logging.getLogger(__name__)

INDEX_KEY = "folio:serving"
RECORD_PREFIX = "folio:serving:"
# A record outlives the grace period, so that a reader with a longer one still finds it, and
# is dropped by Redis itself some time after its worker went silent.
MIN_RETENTION_SECONDS = 600
# A process reads the records at most this often (each submission asks).
_CACHE_SECONDS = 2.0
# Reads and writes give up after this long: a hung broker must not hang a request.
BROKER_TIMEOUT_SECONDS = 2.0

_cache: tuple[float, list[WorkerSeen]] | None = None


@dataclass(frozen=True)
class WorkerSeen:
    """One worker node's last heartbeat."""

    node: str
    queues: tuple[str, ...]
    capacity: int  # pool processes or threads: pages it works on at once
    age: float  # seconds since the heartbeat, by the broker's clock

    def engines(self) -> set[str]:
        """The engine names after ``ocr.`` of the engine queues it consumes (a no-speculation
        queue keeps its ``.plain`` suffix)."""
        prefix = engine_queue("")
        return {q.removeprefix(prefix) for q in self.queues if q.startswith(prefix)}


@dataclass(frozen=True)
class ServedEngine:
    """An engine that live workers serve: how many, and how many pages they take at once."""

    engine: str
    workers: int
    capacity: int


def engines_served(*, fresh: bool = False) -> dict[str, ServedEngine]:
    """The engines served now, each with its workers and their capacity: every engine whose
    queue a worker seen within FOLIO_WORKER_SEEN_SECONDS consumes. A worker on an engine's
    no-speculation queue alone (``queues.plain_queue``) takes only pages handed over to it,
    so it does not make the engine served. Raises when the broker cannot be read; read at
    most every couple of seconds per process unless ``fresh``."""
    served: dict[str, ServedEngine] = {}
    for worker in workers_seen(fresh=fresh):
        for name in worker.engines():
            if name.endswith(PLAIN_SUFFIX):
                continue
            known = served.get(name, ServedEngine(name, 0, 0))
            served[name] = ServedEngine(name, known.workers + 1, known.capacity + worker.capacity)
    return served


def serving_engines(*, fresh: bool = False) -> set[str]:
    """The names of the engines served now (``engines_served``). Raises when the broker
    cannot be read."""
    return set(engines_served(fresh=fresh))


def serves_plain(engine: str, *, fresh: bool = False) -> bool | None:
    """Whether a live worker consumes ``engine``'s no-speculation queue; ``None`` when the
    broker cannot be read."""
    try:
        seen = workers_seen(fresh=fresh)
    except Exception:
        logger.warning("cannot read the workers' heartbeats", exc_info=True)
        return None
    return any(engine + PLAIN_SUFFIX in worker.engines() for worker in seen)


def served_engines_or_none(*, fresh: bool = False) -> set[str] | None:
    """The engines served now, or ``None`` when the broker cannot be read (then nobody can
    tell, and work is accepted: its pages wait in the database, as for a broker outage)."""
    try:
        return serving_engines(fresh=fresh)
    except Exception:
        logger.warning("cannot read the workers' heartbeats", exc_info=True)
        return None


def unserved_engine_refusal(engine: str) -> str | None:
    """Why a job for ``engine`` must be refused now (no worker of it was seen within
    FOLIO_WORKER_SEEN_SECONDS, so it would wait for nothing), or ``None``.
    ``FOLIO_REFUSE_UNSERVED_ENGINES=0`` turns the check off."""
    if not settings.FOLIO_REFUSE_UNSERVED_ENGINES:
        return None
    served = served_engines_or_none()
    if served is None or engine in served:
        return None
    return (
        f"no worker serves the engine {engine!r} now (none seen in the last "
        f"{settings.FOLIO_WORKER_SEEN_SECONDS} s), so its job would wait for nothing; "
        f"engines served now: {', '.join(sorted(served)) or 'none'}"
    )


# --- reading the heartbeats -----------------------------------------------------------------


def workers_seen(*, fresh: bool = False) -> list[WorkerSeen]:
    """Every worker node whose heartbeat is younger than FOLIO_WORKER_SEEN_SECONDS. Raises
    when the broker cannot be read. Cached for a couple of seconds unless ``fresh``."""
    global _cache
    now = time.monotonic()
    if not fresh and _cache is not None and now - _cache[0] < _CACHE_SECONDS:
        return _cache[1]
    grace = settings.FOLIO_WORKER_SEEN_SECONDS
    seen = [worker for worker in _heartbeats_read() if worker.age <= grace]
    _cache = (time.monotonic(), seen)
    return seen


def workers_cache_clear() -> None:
    """Forget what this process read last: the next read asks the broker."""
    global _cache
    _cache = None


def _heartbeats_read() -> list[WorkerSeen]:
    with broker_redis() as redis:
        nodes = sorted(member.decode() for member in redis.smembers(INDEX_KEY))
        if not nodes:
            return []
        pipe = redis.pipeline(transaction=False)
        for node in nodes:
            pipe.get(RECORD_PREFIX + node)
            pipe.pttl(RECORD_PREFIX + node)
        answers = pipe.execute()
        found, gone = [], []
        for node, value, remaining in zip(nodes, answers[::2], answers[1::2], strict=True):
            if value is None or remaining < 0:
                gone.append(node)  # silent for longer than its record lives
                continue
            found.append(_record_parsed(node, value, remaining / 1000))
        if gone:
            # A worker back after that long adds itself again at its next beat.
            redis.srem(INDEX_KEY, *gone)
    return [worker for worker in found if worker is not None]


def _record_parsed(node: str, value: bytes, remaining: float) -> WorkerSeen | None:
    try:
        record = json.loads(value)
        return WorkerSeen(
            node=node,
            queues=tuple(record["queues"]),
            capacity=int(record["capacity"]),
            age=max(0.0, float(record["retention"]) - remaining),
        )
    except (ValueError, KeyError, TypeError):
        logger.warning("worker %s: unreadable heartbeat %r", node, value[:200])
        return None


@contextmanager
def broker_redis() -> Iterator[Any]:
    """A Redis client on the broker (the same URL, TLS and socket options as Celery's), on a
    connection of its own with short timeouts."""
    options = {
        "socket_timeout": BROKER_TIMEOUT_SECONDS,
        "socket_connect_timeout": BROKER_TIMEOUT_SECONDS,
    }
    with app.connection_for_write(transport_options=options) as connection:
        connection.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_SECONDS)
        yield connection.default_channel.client


# --- publishing them (in each worker's main process) ---------------------------------------


def heartbeat_write(*, node: str, queues: Iterable[str], capacity: int) -> None:
    """Record that ``node`` consumes ``queues`` with ``capacity`` now. Raises when the broker
    cannot be written."""
    retention = max(MIN_RETENTION_SECONDS, 2 * settings.FOLIO_WORKER_SEEN_SECONDS)
    record = {"queues": sorted(set(queues)), "capacity": capacity, "retention": retention}
    with broker_redis() as redis:
        pipe = redis.pipeline(transaction=True)
        pipe.set(RECORD_PREFIX + node, json.dumps(record), ex=retention)
        pipe.sadd(INDEX_KEY, node)
        pipe.execute()


class ServingHeartbeat:
    """A daemon thread that writes the worker's record at once and then every ``interval``
    seconds; a failed write is logged and tried again at the next beat."""

    def __init__(self, *, node: str, queues, capacity: int, interval: float):
        self.node = node
        self.queues = queues  # a callable: the worker may start or stop consuming a queue
        self.capacity = capacity
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="folio-serving", daemon=True)
        self._failing = False

    def start(self) -> ServingHeartbeat:
        self.beat()
        self._thread.start()
        return self

    def beat(self) -> None:
        try:
            heartbeat_write(node=self.node, queues=self.queues(), capacity=self.capacity)
        except Exception:
            if not self._failing:  # once per outage, not every few seconds
                logger.warning("worker heartbeat not written (broker unreachable?)", exc_info=True)
            self._failing = True
            return
        if self._failing:
            logger.info("worker heartbeat written again")
        self._failing = False

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def stop(self) -> None:
        self._stop.set()
