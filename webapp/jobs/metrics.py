"""Prometheus metrics at ``/metrics``.

Request metrics come from django-prometheus (per web process). Everything about the work
itself is read from the database and the broker at scrape time, so any web process answers
for the whole deployment, and a restarted process loses nothing: jobs and pages by status,
queue depth per engine queue, throughput and page latency over the last minutes, tokens,
retries, webhook outcomes and speculative-decoding acceptance.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db.models import Count, Sum
from django.utils import timezone
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

logger = logging.getLogger(__name__)

RECENT = timedelta(minutes=5)
LATENCY_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)


class FolioCollector(Collector):
    def describe(self):
        # Nothing up front: registering must not query a database that may not exist yet.
        return []

    def collect(self):
        # Each source is read whole before anything is yielded: a database or broker that
        # does not answer leaves its gauges out, marked by folio_source_up, and the scrape
        # still answers with the rest (a 500 would hide the request metrics too).
        up = GaugeMetricFamily(
            "folio_source_up",
            "Whether the scrape could read this source (0: its gauges are absent)",
            labels=["source"],
        )
        for source, read in (("database", _database_metrics), ("broker", _queue_depths)):
            try:
                metrics = list(read())
            except Exception:
                logger.warning("metrics: the %s did not answer", source, exc_info=True)
                _connection_reset(source)
                up.add_metric([source], 0)
                continue
            up.add_metric([source], 1)
            yield from metrics
        yield up


def _connection_reset(source: str) -> None:
    """A broken database connection is not reused by this thread's next request."""
    if source == "database":
        from django.db import connection

        connection.close_if_unusable_or_obsolete()


def _database_metrics():
    """Everything read from the database: jobs, pages, throughput, tokens, webhooks."""
    from webapp.jobs.models import Job, Page

    now = timezone.now()
    jobs = GaugeMetricFamily("folio_jobs", "Jobs by status", labels=["status"])
    for row in Job.objects.values("status").annotate(n=Count("pk")):
        jobs.add_metric([row["status"]], row["n"])
    yield jobs

    pages = GaugeMetricFamily(
        "folio_pages", "Pages by engine and status", labels=["engine", "status"]
    )
    for row in Page.objects.values("job__engine", "status").annotate(n=Count("pk")):
        pages.add_metric([row["job__engine"], row["status"]], row["n"])
    yield pages

    recent = Page.objects.filter(finished_at__gte=now - RECENT, status=Page.Status.SUCCEEDED)
    rate = GaugeMetricFamily(
        "folio_pages_per_second",
        "Pages finished per second over the last 5 minutes",
        labels=["engine"],
    )
    for row in recent.values("job__engine").annotate(n=Count("pk")):
        rate.add_metric([row["job__engine"]], row["n"] / RECENT.total_seconds())
    yield rate
    yield _latency_histogram(recent)

    retried = GaugeMetricFamily(
        "folio_pages_retried_recent",
        "Pages of the last 5 minutes that needed more than one attempt",
    )
    retried.add_metric(
        [], Page.objects.filter(finished_at__gte=now - RECENT, attempts__gt=1).count()
    )
    yield retried

    totals = Job.objects.aggregate(input=Sum("input_tokens"), output=Sum("output_tokens"))
    tokens = GaugeMetricFamily("folio_tokens", "Tokens of the jobs on record", labels=["kind"])
    tokens.add_metric(["input"], totals["input"] or 0)
    tokens.add_metric(["output"], totals["output"] or 0)
    yield tokens

    yield from _webhook_outcomes()
    yield from _acceptance(Job.objects.filter(finished_at__gte=now - timedelta(hours=1)))


def _latency_histogram(pages) -> GaugeHistogramMetricFamily:
    """Engine seconds per page over the last minutes (a gauge histogram: a window, not a
    counter that only grows)."""
    seconds = sorted(
        value for value in pages.values_list("engine_seconds", flat=True) if value is not None
    )
    buckets, index = [], 0
    for bound in LATENCY_BUCKETS:
        while index < len(seconds) and seconds[index] <= bound:
            index += 1
        buckets.append((str(float(bound)), index))
    buckets.append(("+Inf", len(seconds)))
    return GaugeHistogramMetricFamily(
        "folio_page_engine_seconds",
        "Engine seconds per page finished in the last 5 minutes",
        buckets=buckets,
        gsum_value=sum(seconds),
    )


def _webhook_outcomes():
    from webapp.webhooks.models import WebhookDelivery

    outcomes = GaugeMetricFamily(
        "folio_webhook_deliveries", "Webhook deliveries by status", labels=["status"]
    )
    for row in WebhookDelivery.objects.values("status").annotate(n=Count("pk")):
        outcomes.add_metric([row["status"]], row["n"])
    yield outcomes


def _acceptance(jobs):
    """Speculative-decoding acceptance over the jobs of the last hour that report it."""
    reports = [
        m
        for m in jobs.exclude(engine_metrics={}).values_list("engine_metrics", flat=True)
        if "acceptance_rate" in m
    ]
    if not reports:
        return
    rate = GaugeMetricFamily("folio_spec_decode_acceptance_rate", "Mean acceptance rate, last hour")
    rate.add_metric([], sum(r["acceptance_rate"] for r in reports) / len(reports))
    yield rate
    length = GaugeMetricFamily(
        "folio_spec_decode_mean_acceptance_length", "Mean acceptance length, last hour"
    )
    length.add_metric([], sum(r.get("mean_acceptance_length", 1.0) for r in reports) / len(reports))
    yield length


def _queue_depths():
    from model.engines.registry import engine_names
    from webapp.core.workers import broker_redis
    from webapp.jobs.queueing import engine_queue

    depth = GaugeMetricFamily(
        "folio_queue_depth", "Messages waiting per engine queue", labels=["queue"]
    )
    with broker_redis() as redis:
        for name in engine_names():
            queue = engine_queue(name)
            depth.add_metric([queue], redis.llen(queue))
    yield depth


_registered = False


def register() -> None:
    global _registered
    if not _registered:
        REGISTRY.register(FolioCollector())
        _registered = True
