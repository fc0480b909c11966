"""Engines that fail, a worker told to stop mid-job, a database that goes away during a
submission: every job still reaches a final state, and what failed says why.

The misbehaving engines are real engines (``tests/fault_engines.py``) loaded by real worker
processes through the registry's ``FOLIO_EXTRA_ENGINES`` hook; the time limit, the claim
and the saving are the production code.
"""

from __future__ import annotations

import os
import signal

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from tests import documents
from tests.conftest import wait_for_job
from tests.fault_engines import FAULT_ENGINES, extra_engines_value
from tests.test_worker_faults import (
    PAGE_WORDS,
    assert_each_page_once,
    submit,
    wait_for_a_running_page,
)
from tests.workers import WorkerProcess, purge_queues
from webapp.jobs.models import Document, Job, Page
from webapp.jobs.queueing import engine_queue

pytestmark = pytest.mark.django_db(transaction=True)

# Room for the page's drawing (a child process: about a second, more on a busy host) before
# the engine's misbehaviour begins.
SOFT_TIME_LIMIT = 5
HARD_TIME_LIMIT = SOFT_TIME_LIMIT + 5


@pytest.fixture(scope="module", autouse=True)
def fault_engines_known():
    """The test process validates engine names at submission: it must know them too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FOLIO_EXTRA_ENGINES", extra_engines_value())
        yield


@pytest.fixture(scope="module")
def fault_worker(django_db_setup, fault_engines_known):
    queues = ",".join(engine_queue(name) for name in FAULT_ENGINES)
    purge_queues(*queues.split(","))
    env = {
        "FOLIO_EXTRA_ENGINES": extra_engines_value(),
        "FOLIO_PAGE_SOFT_TIME_LIMIT": str(SOFT_TIME_LIMIT),
        "FOLIO_PAGE_TIME_LIMIT": str(HARD_TIME_LIMIT),
    }
    with WorkerProcess(queues=queues, concurrency=2, env=env) as process:
        yield process


def submit_to(client, engine: str, *, pages: int = 1) -> str:
    data = documents.png_page() if pages == 1 else _blank_pdf(pages)
    upload = SimpleUploadedFile("page.pdf" if pages > 1 else "page.png", data)
    response = client.post("/v1/jobs", {"file": upload, "engine": engine}, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()["id"]


def _blank_pdf(pages: int) -> bytes:
    doc = pymupdf.open()
    for number in range(pages):
        doc.new_page().insert_text((72, 72), f"page {number + 1}")
    return doc.tobytes()


# --- engines that fail -----------------------------------------------------------------------


@pytest.mark.slow
def test_an_engine_that_crashes_fails_the_page_with_a_reason_and_the_job_ends(api, fault_worker):
    job = wait_for_job(api, submit_to(api, "fault-crash", pages=2), timeout=60)

    assert job["status"] == "failed"
    for page in job["pages"]:
        assert page["status"] == "failed"
        assert page["error"] == "the engine failed on this page (an internal error)"
        assert page["attempts"] == 1  # a bug is not retried into a loop


@pytest.mark.slow
def test_an_engine_that_refuses_a_page_passes_its_reason_on(api, fault_worker):
    job = wait_for_job(api, submit_to(api, "fault-refuse"), timeout=60)

    assert job["status"] == "failed"
    assert job["pages"][0]["error"] == "page 1: the model cannot read this script"


@pytest.mark.slow
def test_an_engine_that_hangs_is_stopped_at_the_page_time_limit_saying_so(api, fault_worker):
    job = wait_for_job(api, submit_to(api, "fault-hang"), timeout=60)

    assert job["status"] == "failed"
    page = job["pages"][0]
    assert page["error"] == f"the page took longer than {SOFT_TIME_LIMIT} s, the limit"
    # Stopped by the soft limit on its first attempt, not by a retry or the reaper.
    assert Page.objects.get(job_id=job["id"]).attempts == 1
    # The worker process survived the interruption and takes the next page.
    assert wait_for_job(api, submit_to(api, "fault-refuse"), timeout=60)["status"] == "failed"


@pytest.mark.slow
def test_a_page_killed_at_the_hard_time_limit_fails_at_once_and_is_not_retried(api, fault_worker):
    """Past the soft limit in code that does not hear it, the pool kills the process at the
    hard limit: the page fails then, saying so, after its one attempt (it used to stay
    running until the reaper sent it again, to be killed again, three times)."""
    job = wait_for_job(api, submit_to(api, "fault-stuck"), timeout=60)

    assert job["status"] == "failed"
    page = Page.objects.get(job_id=job["id"])
    assert page.error == (
        f"the page was stopped at the hard time limit ({HARD_TIME_LIMIT} s); not retried"
    )
    assert page.attempts == 1
    # The pool replaced the killed process, and the next page is read.
    assert wait_for_job(api, submit_to(api, "fault-refuse"), timeout=60)["status"] == "failed"


@pytest.mark.slow
def test_a_page_of_runaway_repetition_is_flagged_for_review_not_silently_accepted(
    api, fault_worker
):
    job = wait_for_job(api, submit_to(api, "fault-repeat"), timeout=60)

    page = job["pages"][0]
    assert page["needs_review"] is True, page
    assert any(reason.startswith("repetition") for reason in page["quality"]["reasons"]), page


# --- a worker told to stop -------------------------------------------------------------------


@pytest.mark.slow
def test_a_worker_stopped_gracefully_mid_job_finishes_its_page_and_the_job_completes(api):
    purge_queues("ocr.local", "folio")
    first = WorkerProcess(concurrency=1).start()
    try:
        job_id = submit(api)
        running = wait_for_a_running_page(job_id)
        # What `docker stop` and systemd do: SIGTERM to the worker's main process only.
        os.kill(first.process.pid, signal.SIGTERM)
        first.process.wait(timeout=60)
    finally:
        first.stop()

    running.refresh_from_db()
    assert running.status == Page.Status.SUCCEEDED  # warm shutdown: the page was finished
    assert Page.objects.filter(job_id=job_id, status=Page.Status.QUEUED).exists()

    with WorkerProcess(concurrency=1):
        job = wait_for_job(api, job_id, timeout=120)

    assert job["status"] == "succeeded"
    assert all(page["attempts"] == 1 for page in job["pages"]), job["pages"]
    assert len(job["pages"]) == len(PAGE_WORDS)
    assert_each_page_once(api, job_id)


# --- the database goes away ------------------------------------------------------------------


def test_a_database_lost_during_a_submission_is_a_clean_503_and_nothing_half_written(api):
    def drop_the_connection_at_the_job_insert(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith("INSERT") and Job._meta.db_table in sql:
            # The server goes away under the open transaction, as in a restart or failover.
            context["connection"].connection.close()
        return execute(sql, params, many, context)

    documents_before = Document.objects.count()
    with connection.execute_wrapper(drop_the_connection_at_the_job_insert):
        upload = SimpleUploadedFile("page.png", documents.png_page())
        response = api.post("/v1/jobs", {"file": upload}, format="multipart")

    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    body = response.json()
    assert body["status"] == 50302 and body["data"] is None
    assert "database is unreachable" in body["message"]
    connection.close()  # the broken connection is replaced on next use
    assert Job.objects.count() == 0
    assert Page.objects.count() == 0
    assert Document.objects.count() == documents_before

    # The database is back: the same request, sent again, is accepted.
    upload = SimpleUploadedFile("page.png", documents.png_page())
    again = api.post("/v1/jobs", {"file": upload}, format="multipart")
    assert again.status_code == 202, again.content


@pytest.mark.slow
def test_a_worker_whose_engine_cannot_load_stops_instead_of_taking_pages():
    env = {"FOLIO_EXTRA_ENGINES": "fault-broken-load=tests.fault_engines:BrokenLoadEngine"}
    worker = WorkerProcess(queues=engine_queue("fault-broken-load"), pool="threads", env=env)

    with pytest.raises(RuntimeError, match="exited at start"):
        worker.start(timeout=90)

    assert "cannot serve its engines" in worker.log_path.read_text()
