"""Throughput and speculative-decoding figures: per page (``PageResult.extra``; per job they
are summed by ``model.usage.job_usage``), and for Prometheus (the worker exports the default
registry, where vLLM keeps its own ``vllm:*`` metrics and Folio adds ``folio_*`` ones).

Acceptance rate is accepted draft tokens over proposed draft tokens; mean acceptance length
counts the bonus token too (1 + accepted per verify step), as vLLM reports them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

logger = logging.getLogger(__name__)

SPEC_COUNTERS = (
    "vllm:spec_decode_num_drafts",
    "vllm:spec_decode_num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens",
)

_prometheus: dict[str, Any] | None = None
_exporter_port: int | None = None


def _metrics() -> dict[str, Any]:
    """Folio's own collectors, made on first use (prometheus_client comes with vLLM)."""
    global _prometheus
    if _prometheus is None:
        try:
            from prometheus_client import Counter, Histogram, Info
        except ImportError:  # a worker without prometheus_client just records nothing
            _prometheus = {}
            return _prometheus
        _prometheus = {
            "pages": Counter("folio_engine_pages", "Pages transcribed", ["engine"]),
            "tokens": Counter("folio_engine_output_tokens", "Output tokens kept", ["engine"]),
            "retries": Counter(
                "folio_engine_repetition_retries", "Pages decoded again without speculation"
            ),
            "ttft": Histogram(
                "folio_engine_time_to_first_token_seconds",
                "Time to first token of a page",
                buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
            ),
            "info": Info("folio_engine", "The loaded engine and its speculative decoding"),
        }
    return _prometheus


def engine_info(status: dict[str, Any]) -> None:
    if info := _metrics().get("info"):
        info.info({k: str(v) for k, v in status.items()})


def page_done(extra: dict[str, Any], *, output_tokens: int) -> None:
    collectors = _metrics()
    if not collectors:
        return
    engine = str(extra.get("engine", ""))
    collectors["pages"].labels(engine).inc()
    collectors["tokens"].labels(engine).inc(output_tokens)
    if extra.get("ttft_seconds"):
        collectors["ttft"].observe(extra["ttft_seconds"])


def repetition_retry() -> None:
    if retries := _metrics().get("retries"):
        retries.inc()


def spec_decode_totals() -> dict[str, float]:
    """vLLM's process-wide speculative-decoding counters, with the rates they give."""
    try:
        from vllm.v1.metrics.reader import Counter, get_metrics_snapshot
    except ImportError:
        return {}
    totals = dict.fromkeys(SPEC_COUNTERS, 0.0)
    for metric in get_metrics_snapshot():
        if metric.name in totals and isinstance(metric, Counter):
            totals[metric.name] += metric.value
    drafts, draft_tokens, accepted = (totals[name] for name in SPEC_COUNTERS)
    return {
        "drafts": drafts,
        "draft_tokens": draft_tokens,
        "accepted_tokens": accepted,
        "acceptance_rate": accepted / draft_tokens if draft_tokens else 0.0,
        "mean_acceptance_length": 1 + accepted / drafts if drafts else 1.0,
    }


def start_exporter(port: int, *, allowed: Callable[[dict[str, Any]], bool], refusal: str) -> None:
    """Serve the default Prometheus registry on ``port`` (vLLM's metrics and Folio's), once
    per process however often the worker's start-up signal fires; see ``serve_registry``."""
    global _exporter_port
    if _exporter_port is not None:
        return
    if serve_registry(port, allowed=allowed, refusal=refusal) is None:
        return
    _exporter_port = port
    logger.info("Prometheus metrics on port %s", port)


def serve_registry(
    port: int, *, allowed: Callable[[dict[str, Any]], bool], refusal: str, address: str = "0.0.0.0"
) -> WSGIServer | None:
    """The default registry over HTTP on ``port``, from a daemon thread, to the scrapers
    ``allowed`` (called with each request's WSGI environ) and a 403 saying ``refusal`` to
    everyone else; ``None`` without prometheus_client. prometheus_client's own
    ``start_http_server`` answers anyone who can reach the port."""
    try:
        from prometheus_client import make_wsgi_app
        from prometheus_client.exposition import ThreadingWSGIServer
    except ImportError:
        logger.warning("prometheus_client is not installed: no metrics on port %s", port)
        return None
    _metrics()
    exposition = make_wsgi_app()

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not allowed(environ):
            start_response("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
            return [refusal.encode()]
        return exposition(environ, start_response)  # type: ignore[no-any-return]

    server = make_server(address, port, guarded, ThreadingWSGIServer, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


class _Quiet(WSGIRequestHandler):
    """No line on stderr per scrape."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass
