"""The page state machine in webapp.jobs.services.page_lifecycle, against the real database."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from model.engines.base import PageResult
from tests import documents
from webapp.jobs import heartbeat, services
from webapp.jobs.models import Job, Page
from webapp.jobs.services import page_lifecycle


@pytest.fixture
def job(make_user) -> Job:
    return services.job_submit(
        owner=make_user("alice"), data=documents.born_digital_pdf(), filename="report.pdf"
    )


def claim(page: Page, *, task_id=None) -> services.PageClaim | None:
    return services.page_claim(
        page_id=page.pk, task_id=str(task_id or page.task_id), worker="test:1"
    )


def result(text: str = "# Hello") -> PageResult:
    return PageResult(markdown=text, output_tokens=3, engine_seconds=0.5)


@pytest.mark.django_db
def test_a_message_for_an_older_task_id_is_a_no_op(job):
    page = job.pages.first()

    assert claim(page, task_id=uuid.uuid4()) is None
    page.refresh_from_db()
    assert (page.status, page.attempts) == (Page.Status.QUEUED, 0)


@pytest.mark.django_db
def test_the_first_claim_starts_the_job_and_records_the_queue_wait(job):
    page_claim = claim(job.pages.first())

    job.refresh_from_db()
    assert page_claim.attempts == 1
    assert job.status == Job.Status.RUNNING
    assert job.started_at is not None
    assert job.pages.first().queue_wait_seconds is not None


@pytest.mark.django_db
def test_a_redelivered_message_takes_the_page_over_and_the_dead_claim_cannot_save(job):
    page = job.pages.first()
    dead = claim(page)
    redelivered = claim(page)

    assert redelivered.attempts == 2
    assert (
        services.page_complete(claim=dead, result=result("stale"), engine_version="test-1") is False
    )
    assert (
        services.page_complete(claim=redelivered, result=result("fresh"), engine_version="test-1")
        is True
    )
    page.refresh_from_db()
    assert page.markdown == "fresh"
    job.refresh_from_db()
    assert job.pages_done == 1


@pytest.mark.django_db
def test_a_finished_page_is_never_claimed_again(job):
    page = job.pages.first()
    services.page_complete(claim=claim(page), result=result(), engine_version="test-1")

    assert claim(page) is None


@pytest.mark.django_db
@override_settings(FOLIO_PAGE_MAX_ATTEMPTS=2)
def test_a_page_that_keeps_killing_its_worker_is_failed_with_the_reason(job):
    page = job.pages.first()
    claim(page)
    claim(page)

    assert claim(page) is None
    page.refresh_from_db()
    assert page.status == Page.Status.FAILED
    assert "2 times" in page.error


@pytest.mark.django_db
def test_the_last_page_closes_the_job_with_the_right_status(job):
    pages = list(job.pages.all())
    services.page_complete(claim=claim(pages[0]), result=result(), engine_version="test-1")
    services.page_fail(claim=claim(pages[1]), error="unreadable")
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING

    services.page_complete(claim=claim(pages[2]), result=result(), engine_version="test-1")

    job.refresh_from_db()
    assert job.status == Job.Status.PARTIALLY_FAILED
    assert (job.pages_done, job.pages_failed) == (2, 1)
    assert job.output_tokens == 6
    assert job.finished_at is not None


@pytest.mark.django_db
def test_a_job_whose_every_page_failed_is_failed(job):
    for page in job.pages.all():
        services.page_fail(claim=claim(page), error="unreadable")

    job.refresh_from_db()
    assert job.status == Job.Status.FAILED


@pytest.mark.django_db(transaction=True)
def test_pages_finishing_at_the_same_moment_close_the_job_exactly_once(job, monkeypatch):
    finalized = []
    original = page_lifecycle.job_finalize_if_complete

    def counting(**kwargs):
        won = original(**kwargs)
        if won:
            finalized.append(kwargs["job_id"])
        return won

    monkeypatch.setattr(page_lifecycle, "job_finalize_if_complete", counting)
    claims = [claim(page) for page in job.pages.all()]
    barrier = threading.Barrier(len(claims))

    def finish(page_claim):
        barrier.wait()
        try:
            services.page_complete(claim=page_claim, result=result(), engine_version="test-1")
        finally:
            connection.close()

    threads = [threading.Thread(target=finish, args=(c,)) for c in claims]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    job.refresh_from_db()
    assert finalized == [job.id]
    assert job.status == Job.Status.SUCCEEDED
    assert job.pages_done == 3


@pytest.mark.django_db
def test_a_transient_error_puts_the_page_back_for_the_same_message(job):
    page = job.pages.first()
    first = claim(page)

    assert services.page_retry_later(claim=first, error="endpoint busy") is True
    page.refresh_from_db()
    assert page.status == Page.Status.QUEUED
    assert claim(page).attempts == 2


@pytest.mark.django_db
def test_the_reaper_hands_out_pages_whose_worker_vanished_under_a_new_task_id(job):
    page = job.pages.first()
    claim(page)
    Page.objects.filter(pk=page.pk).update(started_at=timezone.now() - timedelta(hours=2))

    reaped = services.pages_reap(stuck_after=timedelta(hours=1), unsent_after=timedelta(minutes=1))

    assert reaped == 1
    old_task_id = page.task_id
    page.refresh_from_db()
    assert page.status == Page.Status.QUEUED
    assert page.task_id != old_task_id
    assert claim(page, task_id=old_task_id) is None


def reap() -> int:
    return services.pages_reap(stuck_after=timedelta(hours=1), unsent_after=timedelta(minutes=1))


@pytest.fixture
def heartbeats():
    """The real heartbeat of a worker named ``test:1`` (``claim`` uses that name), in the
    broker's Redis; removed afterwards."""
    beats = []

    def make(worker="test:1"):
        beat = heartbeat.Heartbeat(worker)
        beats.append(beat)
        return beat

    yield make
    from ocr_worker.celery_app import app

    with app.connection_for_write() as connection:
        for beat in beats:
            beat.stop()
            connection.default_channel.client.delete(heartbeat.key(beat.worker))


@pytest.mark.django_db
def test_a_page_its_live_worker_still_holds_is_never_sent_again(job, heartbeats):
    # A GPU page three hours in, far past any time limit, still decoding.
    page = job.pages.first()
    claim(page)
    Page.objects.filter(pk=page.pk).update(started_at=timezone.now() - timedelta(hours=3))
    with heartbeats().holding(page.pk):
        reaped = services.pages_reap(
            stuck_after=timedelta(hours=1), unsent_after=timedelta(minutes=1)
        )
        assert reaped == 0
        page.refresh_from_db()
        assert page.status == Page.Status.RUNNING and page.attempts == 1
    # Let go of (the task ended without a result): sent again.
    assert services.pages_reap(stuck_after=timedelta(hours=1), unsent_after=timedelta(minutes=1))
    page.refresh_from_db()
    assert page.status == Page.Status.QUEUED


@pytest.mark.django_db
def test_without_heartbeats_to_read_the_reaper_goes_by_time_alone(job, monkeypatch):
    monkeypatch.setattr(heartbeat, "pages_in_hand", lambda workers: None)  # Redis unreadable
    page = job.pages.first()
    claim(page)
    Page.objects.filter(pk=page.pk).update(started_at=timezone.now() - timedelta(minutes=5))
    assert (
        services.pages_reap(stuck_after=timedelta(hours=1), unsent_after=timedelta(minutes=1)) == 0
    )
    Page.objects.filter(pk=page.pk).update(started_at=timezone.now() - timedelta(hours=2))
    assert (
        services.pages_reap(stuck_after=timedelta(hours=1), unsent_after=timedelta(minutes=1)) == 1
    )


def test_a_heartbeat_lists_the_pages_in_hand_and_expires(heartbeats):
    beat = heartbeats("test:heartbeat")
    with beat.holding(41), beat.holding(42):
        assert heartbeat.pages_in_hand(["test:heartbeat", "test:nobody"]) == {
            "test:heartbeat": {41, 42},
            "test:nobody": None,
        }
        from ocr_worker.celery_app import app

        with app.connection_for_write() as connection:
            ttl = connection.default_channel.client.ttl(heartbeat.key("test:heartbeat"))
        assert 0 < ttl <= heartbeat.TTL_SECONDS
    assert heartbeat.pages_in_hand(["test:heartbeat"]) == {"test:heartbeat": set()}


@pytest.mark.django_db
def test_the_reaper_sends_pages_that_never_reached_the_broker(job):
    Page.objects.filter(job=job).update(enqueued_at=timezone.now() - timedelta(minutes=5))

    reaped = services.pages_reap(stuck_after=timedelta(hours=1), unsent_after=timedelta(minutes=1))

    assert reaped == 3
