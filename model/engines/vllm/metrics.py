"""Throughput and speculative-decoding figures: per page (``PageResult.extra``; per job they
are summed by ``model.usage.job_usage``), and for Prometheus (the worker exports the default
registry, where vLLM keeps its own ``vllm:*`` metrics and Folio adds ``folio_*`` ones).

Acceptance rate is accepted draft tokens over proposed draft tokens; mean acceptance length
counts the bonus token too (1 + accepted per verify step), as vLLM reports them.
"""

from __future__ import annotations

import logging
from typing import Any

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


def start_exporter(port: int) -> None:
    """Serve the default Prometheus registry on ``port`` (vLLM's metrics and Folio's), once
    per process however often the worker's start-up signal fires."""
    global _exporter_port
    if _exporter_port is not None:
        return
    try:
        from prometheus_client import start_http_server
    except ImportError:
        logger.warning("prometheus_client is not installed: no metrics on port %s", port)
        return
    _metrics()
    start_http_server(port)
    _exporter_port = port
    logger.info("Prometheus metrics on port %s", port)
