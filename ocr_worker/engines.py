"""Which engines a worker serves, and loading them once per worker process at start.

- prefork pool (the CPU engines): each child loads after the fork (``worker_process_init``),
  so no child inherits a half-initialised runtime.
- threads or solo pool (the GPU engine): one process serves every page, so it loads once, in
  the worker's own process, before the pool starts (``worker_init``; ``worker_process_init``
  never fires for these pools). vLLM starts its engine-core process itself; a prefork child
  is daemonic and may not, which is why an exclusive engine refuses the prefork pool.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager

from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_init, worker_process_init

from model import steps
from model.engines import engine_names, engine_spec, load_engine
from ocr_worker.celery_app import app
from webapp.core.queues import plain_queue
from webapp.jobs.queueing import engine_queue

logger = logging.getLogger(__name__)

IN_PROCESS_POOLS = ("threads", "solo")

# The soft time limit is raised inside whatever runs when it fires: a page step must let it
# through to the task, which fails the page saying so, instead of taking it for its own bug.
steps.let_through(SoftTimeLimitExceeded)


class WorkerConfigurationError(RuntimeError):
    """The worker was started in a way its engines cannot run in."""


def consumed_engines(celery_app: Celery) -> list[str]:
    """The engines whose queues this worker was told to consume (``-Q``): an engine's own
    queue, or its no-speculation queue (pages handed over, ``model.engines.handoff``)."""
    queues = set(celery_app.amqp.queues.consume_from or {})
    return [
        name
        for name in engine_names()
        if engine_queue(name) in queues or plain_queue(name) in queues
    ]


def pool_name(pool_cls: object) -> str:
    """``prefork``, ``threads``, ``solo``, ... from a pool alias or class."""
    if isinstance(pool_cls, str):
        return pool_cls.rsplit(":", 1)[-1].lower().removesuffix("pool") or "prefork"
    module = (getattr(pool_cls, "__module__", "") or "").rsplit(".", 1)[-1]
    return {"thread": "threads"}.get(module, module) or "prefork"


def check_worker_layout(*, engines: list[str], queues: set[str], pool: str) -> None:
    """An exclusive (GPU) engine gets a worker of its own, in a threads or solo pool: one
    that consumes its queue, or one (started without speculation) that consumes its
    no-speculation queue."""
    for name in engines:
        if not engine_spec(name).exclusive_worker:
            continue
        own = engine_queue(name) if engine_queue(name) in queues else plain_queue(name)
        others = sorted(queues - {own})
        if others:
            raise WorkerConfigurationError(
                f"engine {name} holds an accelerator: its worker consumes only "
                f"{own}, not also {', '.join(others)}"
            )
        if pool not in IN_PROCESS_POOLS:
            raise WorkerConfigurationError(
                f"engine {name} runs in a threads or solo pool (-P threads -c N), not {pool}"
            )


def settle_no_speculation(
    *, engines: list[str], queues: set[str], environ: MutableMapping[str, str]
) -> None:
    """A worker on an engine's no-speculation queue decodes without speculation: the engine's
    ``without_speculation`` setting is set before it loads, where it is unset. Pages come to
    that queue because they ran away under speculation; decoding them again the same way would
    only repeat the runaway. A value that says otherwise stops the worker, naming it, rather
    than being overridden in silence."""
    for name in engines:
        queue = plain_queue(name)
        if queue not in queues:
            continue
        setting = engine_spec(name).without_speculation
        if setting is None:
            raise WorkerConfigurationError(
                f"engine {name} never hands pages over to {queue}: consume "
                f"{engine_queue(name)} instead"
            )
        current = environ.get(setting.variable, "").strip()
        if current and current not in setting.values:
            raise WorkerConfigurationError(
                f"this worker consumes {queue}, whose pages are decoded without speculation, "
                f"but {setting.variable}={current}: set it to {' or '.join(setting.values)}, "
                "or unset it"
            )
        environ[setting.variable] = current or setting.values[0]


def _load(names: list[str]) -> None:
    for name in names:
        started = time.perf_counter()
        load_engine(name).load()
        logger.info("engine %s loaded in %.1f s", name, time.perf_counter() - started)


@contextmanager
def _stop_on_failure() -> Iterator[None]:
    """Celery logs and swallows exceptions raised by signal handlers, and would go on to take
    pages with an engine half loaded (or in a pool it cannot run in). SystemExit is not
    swallowed: the process stops, saying why."""
    try:
        yield
    except Exception as exc:
        logger.critical("this worker cannot serve its engines: %s", exc, exc_info=True)
        raise SystemExit(f"folio worker stopped: {exc}") from exc


@worker_init.connect
def load_engines_in_the_worker_process(sender=None, **kwargs) -> None:
    with _stop_on_failure():
        pool = pool_name(getattr(sender, "pool_cls", "prefork"))
        engines = consumed_engines(app)
        queues = set(app.amqp.queues.consume_from or {})
        check_worker_layout(engines=engines, queues=queues, pool=pool)
        # In the worker's own process, before the pool starts: prefork children inherit them.
        settle_no_speculation(engines=engines, queues=queues, environ=os.environ)
        if pool not in IN_PROCESS_POOLS:
            return  # prefork: each child loads after the fork, below
        _start_metrics_exporter()
        _load(engines)


@worker_process_init.connect
def load_engines_in_this_process(**kwargs) -> None:
    # Runs in each prefork child after the fork: models are never loaded in the parent, so
    # no child inherits a half-initialised runtime (and a GPU is never touched pre-fork).
    with _stop_on_failure():
        _load(consumed_engines(app))


def _start_metrics_exporter() -> None:
    port = os.environ.get("FOLIO_METRICS_PORT", "").strip()
    if not port:
        return
    if not port.isdigit():
        raise WorkerConfigurationError(f"FOLIO_METRICS_PORT must be a port number, not {port!r}")
    from model.engines.vllm.metrics import start_exporter
    from ocr_worker.metrics_port import METRICS_REFUSAL, scraper_allowed

    start_exporter(int(port), allowed=scraper_allowed, refusal=METRICS_REFUSAL)
