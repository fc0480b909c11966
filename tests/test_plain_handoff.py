"""A page that runs away under speculation goes to a worker started without speculation.

Real worker processes on the real broker and database: one worker serves the engine's queue
with speculation on, another serves only the engine's no-speculation queue, and turns the
engine's speculation off itself (``FOLIO_TEST_SPECULATION=off``, the engine's
``without_speculation``). The engine (``tests/handoff_engines.py``) asks to hand every page over,
as the vLLM engine does for a runaway under speculation; the worker hands it over when a live
worker consumes that queue, and keeps the page as the engine left it when none does.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from model.engines.base import PageResult
from tests import documents
from tests.conftest import wait_for_job
from tests.handoff_engines import ENGINE, PLAIN_TEXT, TRIMMED_TEXT, extra_engines_value
from tests.workers import WorkerProcess, purge_queues
from webapp.core.queues import engine_queue, plain_queue
from webapp.core.workers import serves_plain, serving_engines
from webapp.jobs import services
from webapp.jobs.models import Page
from webapp.jobs.queueing import queue_depth

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module", autouse=True)
def engine_known():
    """The test process validates engine names at submission: it must know this one too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FOLIO_EXTRA_ENGINES", extra_engines_value())
        yield


@pytest.fixture(scope="module")
def speculating_worker(django_db_setup, engine_known):
    purge_queues(engine_queue(ENGINE), plain_queue(ENGINE))
    env = {"FOLIO_EXTRA_ENGINES": extra_engines_value(), "FOLIO_TEST_SPECULATION": "on"}
    with WorkerProcess(queues=engine_queue(ENGINE), env=env) as process:
        yield process


def submit(api) -> str:
    upload = SimpleUploadedFile("page.png", documents.png_page())
    response = api.post("/v1/jobs", {"file": upload, "engine": ENGINE}, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()["id"]


@pytest.mark.slow
def test_without_a_plain_worker_the_page_stays_as_the_engine_left_it(api, speculating_worker):
    assert serves_plain(ENGINE, fresh=True) is False
    job = wait_for_job(api, submit(api), timeout=60)
    assert job["status"] == "succeeded", job
    page = Page.objects.get(job_id=job["id"])
    assert page.markdown.strip() == TRIMMED_TEXT
    assert not page.decode_plain and page.attempts == 1
    assert page.extra["handoff"]["to"] == "decode-without-speculation"


@pytest.mark.slow
def test_a_runaway_page_is_decoded_again_by_the_worker_without_speculation(api, speculating_worker):
    # Not told to decode without speculation: consuming the no-speculation queue is enough.
    env = {"FOLIO_EXTRA_ENGINES": extra_engines_value()}
    with WorkerProcess(queues=plain_queue(ENGINE), env=env) as plain_worker:
        assert serves_plain(ENGINE, fresh=True) is True
        # It takes only handed-over pages: its queue is not an engine of its own.
        assert not any(name.endswith(".plain") for name in serving_engines(fresh=True))
        job = wait_for_job(api, submit(api), timeout=60)
        assert job["status"] == "succeeded", job
        page = Page.objects.get(job_id=job["id"])
        assert page.markdown.strip() == PLAIN_TEXT
        assert page.decode_plain and page.extra.get("speculation") == "off"
        # The hand-over is not a failed attempt; the plain worker's claim is the one that saved.
        assert page.attempts == 1
        assert page.worker.startswith(plain_worker.name + ":")
        assert "handoff" not in page.extra
    # With only the plain worker gone the engine is still served, by the speculating worker.
    assert serves_plain(ENGINE, fresh=True) is False


# --- the service and the reaper, without workers ------------------------------------------------


@pytest.fixture
def page(make_user) -> Page:
    job = services.job_submit(
        owner=make_user("alice"), data=documents.png_page(), filename="page.png"
    )
    purge_queues(engine_queue(job.engine), plain_queue(job.engine))
    return job.pages.get()


def test_a_hand_over_queues_the_page_for_the_plain_worker_without_counting_an_attempt(page):
    claim = services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="test:1")
    assert claim is not None and not claim.decode_plain

    assert services.page_hand_off(claim=claim, reason="runaway repetition (no-eos)")
    page.refresh_from_db()
    assert (page.status, page.decode_plain, page.attempts) == (Page.Status.QUEUED, True, 0)
    assert "runaway repetition" in page.error and page.sent_at is not None
    assert queue_depth(engine=page.job.engine, plain=True) == 1
    assert queue_depth(engine=page.job.engine) == 0
    # The claim is spent: a second hand-over, or a save, with it changes nothing.
    assert not services.page_hand_off(claim=claim, reason="again")
    assert not services.page_complete(
        claim=claim, result=PageResult(markdown="late"), engine_version="x"
    )

    again = services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="test:2")
    assert again is not None and again.decode_plain and again.attempts == 1


def _handed_over_long_ago(page: Page) -> None:
    Page.objects.filter(pk=page.pk).update(
        decode_plain=True, sent_at=timezone.now() - timedelta(minutes=5)
    )


def test_the_reaper_resends_a_lost_handed_over_page_to_the_plain_queue(page):
    _handed_over_long_ago(page)
    reaped = services.pages_reap(
        stuck_after=timedelta(hours=1),
        unsent_after=timedelta(minutes=1),
        serves_plain=lambda engine: True,
    )
    assert reaped == 1
    page.refresh_from_db()
    assert page.decode_plain and page.status == Page.Status.QUEUED
    assert queue_depth(engine=page.job.engine, plain=True) == 1
    assert queue_depth(engine=page.job.engine) == 0


def test_the_reaper_sends_a_handed_over_page_home_once_no_plain_worker_is_left(page):
    _handed_over_long_ago(page)
    # Its message still waits on the plain queue, but nobody will take it.
    services.pages_send(engine=page.job.engine, pages=[(page.pk, page.task_id)], plain=True)
    Page.objects.filter(pk=page.pk).update(sent_at=timezone.now() - timedelta(minutes=5))
    old_task = page.task_id

    reaped = services.pages_reap(
        stuck_after=timedelta(hours=1),
        unsent_after=timedelta(minutes=1),
        serves_plain=lambda engine: False,
    )
    assert reaped == 1
    page.refresh_from_db()
    assert not page.decode_plain and page.task_id != old_task
    assert queue_depth(engine=page.job.engine) == 1
