"""The fan-out PDF (``tests/hostile.py``) through a real worker: one bounded attempt, and the
API answers all along (docs/RELIABILITY.md). A module of its own, so that no other module's
worker, with the default drawing limit, can take the page instead of this test's."""

from __future__ import annotations

import time

import pytest

from tests import documents, hostile
from tests.conftest import wait_for_job
from tests.test_hostile_input import post_jobs
from webapp.jobs.models import Job, Page

pytestmark = pytest.mark.django_db


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
# The threads pool (the GPU engines') has no hard time limit at all: the drawing's own limit
# is all that stops such a page there.
@pytest.mark.parametrize("pool", ["prefork", "threads"])
def test_the_fan_out_pdf_costs_one_bounded_attempt_and_the_api_keeps_answering(api, pool):
    from tests.workers import WorkerProcess, purge_queues

    purge_queues("ocr.local", "folio")
    render_limit = 10  # seconds; a plain page takes about one, more on a busy host
    env = {"FOLIO_PAGE_RENDER_TIMEOUT": str(render_limit)}
    with WorkerProcess(concurrency=1, pool=pool, env=env):
        started = time.monotonic()
        job_id = post_jobs(api, hostile.fan_out_pdf(), "fan-out.pdf").json()["id"]
        answered_while_drawn = 0  # answers to the job list while a worker drew the page
        while Job.objects.get(pk=job_id).status in Job.ACTIVE:
            assert time.monotonic() - started < 60, "the fan-out page was not stopped"
            drawing = Page.objects.get(job_id=job_id).status == Page.Status.RUNNING
            assert api.get("/v1/jobs").status_code == 200
            answered_while_drawn += drawing
            time.sleep(0.2)
        # The worker takes the next document straight away: nothing of it is stuck.
        fine = post_jobs(api, documents.png_page(), "fine.png").json()["id"]
        assert wait_for_job(api, fine, timeout=60)["status"] == "succeeded"

    page = Page.objects.get(job_id=job_id)
    assert page.status == Page.Status.FAILED
    assert page.attempts == 1
    assert f"took longer than {render_limit} s" in page.error and "not retried" in page.error
    # The web process drew nothing itself: it answered while the worker was stuck drawing.
    assert answered_while_drawn >= 1
