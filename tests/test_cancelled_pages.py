"""A cancelled job's pages stop costing the queue (issue 26): a new job queued behind a
cancelled 2,000-page one finishes, and the worker drops every cancelled message unrun, before
any database work (Celery's revoke), instead of claiming each one to find it cancelled."""

from __future__ import annotations

import re
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ocr_worker.celery_app import app
from tests import documents, hostile
from tests.conftest import wait_for_job
from tests.workers import WorkerProcess, purge_queues
from webapp.jobs.models import Page

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_new_job_behind_a_cancelled_two_thousand_page_job_finishes_its_messages_dropped_unrun(
    api,
):
    purge_queues("ocr.local", "folio")
    with WorkerProcess(queues="ocr.local", concurrency=1) as worker:
        # The worker stops taking messages, so that the new job's message is queued behind
        # every one of the cancelled job's, as on a busy service.
        app.control.cancel_consumer("ocr.local", destination=[worker.name], reply=True)
        big = api.post(
            "/v1/jobs",
            {"file": SimpleUploadedFile("big.pdf", hostile.many_pages_pdf(2000))},
            format="multipart",
        ).json()
        # Every message out (the last ones leave from a thread beside the request).
        deadline = time.monotonic() + 120
        while Page.objects.filter(job_id=big["id"], sent_at__isnull=True).exists():
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert api.post(f"/v1/jobs/{big['id']}/cancel").status_code == 200
        small = api.post(
            "/v1/jobs",
            {"file": SimpleUploadedFile("small.pdf", documents.born_digital_pdf())},
            format="multipart",
        ).json()
        cancelled = {
            str(task)
            for task in Page.objects.filter(job_id=big["id"]).values_list("task_id", flat=True)
        }
        app.control.add_consumer("ocr.local", destination=[worker.name], reply=True)

        assert wait_for_job(api, small["id"], timeout=300)["status"] == "succeeded"
        assert "Failed to mark task" not in worker.log_path.read_text(errors="replace")
        log = worker.log_path.read_text(errors="replace")

    dropped = set(
        re.findall(r"Discarding revoked task: folio\.transcribe_page\[([0-9a-f-]+)\]", log)
    )
    claimed = set(re.findall(r"folio\.transcribe_page\[([0-9a-f-]+)\] succeeded", log))
    assert dropped == cancelled  # all 2,000, each before any database work
    assert not claimed & cancelled  # none was claimed to be found cancelled
    assert Page.objects.filter(job_id=big["id"], status=Page.Status.CANCELLED).count() == 2000
