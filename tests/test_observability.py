"""/metrics, JSON logs with job and page ids."""

from __future__ import annotations

import json
import logging

import pytest

from model.engines.base import PageResult
from tests import documents
from webapp.core.logcontext import log_context
from webapp.jobs import services


@pytest.mark.django_db
def test_metrics_report_jobs_pages_queues_latency_and_acceptance(client, make_user):
    job = services.job_submit(owner=make_user("alice"), data=documents.png_page(), filename="p.png")
    page = job.pages.get()
    claim = services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="test:1")
    result = PageResult(
        markdown="text",
        output_tokens=12,
        engine_seconds=0.8,
        extra={
            "spec_decode": {
                "num_spec_steps": 4,
                "num_draft_tokens": 12,
                "num_accepted_draft_tokens": 9,
            }
        },
    )
    services.page_complete(claim=claim, result=result, engine_version="test-1")

    text = client.get("/metrics").content.decode()

    assert 'folio_jobs{status="succeeded"} 1.0' in text
    assert 'folio_pages{engine="local",status="succeeded"} 1.0' in text
    assert 'folio_queue_depth{queue="ocr.local"}' in text
    assert 'folio_page_engine_seconds_bucket{le="1.0"} 1.0' in text
    assert 'folio_tokens{kind="output"} 12.0' in text
    assert "folio_spec_decode_acceptance_rate 0.75" in text
    assert "django_http_requests_total_by_method_total" in text


def test_json_logs_carry_the_job_and_page_being_worked_on(caplog):
    from pythonjsonlogger.json import JsonFormatter

    from webapp.core.logcontext import ContextFilter

    handler = logging.StreamHandler()
    handler.addFilter(ContextFilter())
    records = []
    handler.emit = lambda record: records.append(JsonFormatter().format(record))
    logger = logging.getLogger("folio.test")
    logger.addHandler(handler)
    try:
        with log_context(job_id="j-1", page=4):
            logger.warning("reading")
        logger.warning("outside")
    finally:
        logger.removeHandler(handler)

    inside, outside = (json.loads(line) for line in records)
    assert (inside["job_id"], inside["page"], inside["message"]) == ("j-1", "4", "reading")
    assert "job_id" not in outside
