"""Workers that die in the middle of a page: nothing is lost, nothing lands twice."""

from __future__ import annotations

import time

import psutil
import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import wait_for_job
from tests.workers import WorkerProcess, forget_heartbeats, purge_queues
from webapp.jobs.models import Page

pytestmark = pytest.mark.django_db(transaction=True)

PAGE_WORDS = ("Ardent", "Bramble", "Cobalt", "Dapple")


def scanned_pages_pdf() -> bytes:
    """One scanned page (an image, no text layer) per word, so OCR takes a moment per page
    and each page's text can be counted in the result."""
    scans = pymupdf.open()
    for word in PAGE_WORDS:
        text = pymupdf.open()
        page = text.new_page(width=595, height=842)
        for line in range(4):
            page.insert_text((60, 120 + 60 * line), f"{word} line {line + 1}", fontsize=26)
        pixmap = page.get_pixmap(dpi=110)
        scan = scans.new_page(width=595, height=842)
        scan.insert_image(scan.rect, stream=pixmap.tobytes("png"))
    return scans.tobytes()


def wait_for_a_running_page(job_id: str, *, timeout: float = 60) -> Page:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = Page.objects.filter(job_id=job_id, status=Page.Status.RUNNING).first()
        if page is not None:
            return page
        time.sleep(0.02)
    raise TimeoutError("no page started")


def submit(client) -> str:
    upload = SimpleUploadedFile("scans.pdf", scanned_pages_pdf())
    response = client.post("/v1/jobs", {"file": upload}, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()["id"]


def assert_each_page_once(client, job_id: str) -> None:
    markdown = client.get(f"/v1/jobs/{job_id}/result").content.decode()
    for word in PAGE_WORDS:
        assert markdown.count(f"{word} line 1") == 1, markdown


@pytest.fixture(autouse=True)
def empty_queues():
    purge_queues("ocr.local", "folio")


@pytest.mark.slow
def test_a_worker_process_killed_mid_page_is_replaced_and_the_page_redone(api):
    with WorkerProcess(concurrency=1) as worker:
        job_id = submit(api)
        page = wait_for_a_running_page(job_id)
        worker.kill_process(int(page.worker.rsplit(":", 1)[1]))

        job = wait_for_job(api, job_id)

    assert job["status"] == "succeeded"
    attempts = {p["number"]: p["attempts"] for p in job["pages"]}
    assert attempts[page.number] == 2
    assert all(count == 1 for number, count in attempts.items() if number != page.number)
    assert_each_page_once(api, job_id)


@pytest.mark.slow
def test_a_whole_worker_killed_mid_page_leaves_its_page_to_the_next_worker(api):
    # The unacknowledged message comes back once its visibility timeout has passed.
    fast_redelivery = {"FOLIO_BROKER_VISIBILITY_TIMEOUT": "3"}
    first = WorkerProcess(concurrency=1, env=fast_redelivery).start()
    try:
        job_id = submit(api)
        page = wait_for_a_running_page(job_id)
        first.kill_group()
    finally:
        first.stop()

    with WorkerProcess(concurrency=1, env=fast_redelivery):
        job = wait_for_job(api, job_id, timeout=180)

    assert job["status"] == "succeeded"
    assert {p["number"]: p["attempts"] for p in job["pages"]}[page.number] == 2
    assert_each_page_once(api, job_id)


@pytest.mark.slow
def test_pages_whose_messages_an_emptied_broker_lost_are_sent_again(api):
    from datetime import timedelta

    from ocr_worker.celery_app import app
    from webapp.jobs import services

    job_id = submit(api)  # sent to the queue; no worker is running yet
    with app.connection_for_write() as connection:
        connection.default_channel.client.flushdb()  # Redis comes back with nothing

    reaped = services.pages_reap(
        stuck_after=timedelta(hours=1), unsent_after=timedelta(minutes=1), lost_after=timedelta(0)
    )

    assert reaped == len(PAGE_WORDS)
    with WorkerProcess(concurrency=1):
        job = wait_for_job(api, job_id)
    assert job["status"] == "succeeded"
    assert_each_page_once(api, job_id)


def test_nothing_is_sent_again_while_the_queue_still_holds_messages(api):
    from datetime import timedelta

    from webapp.jobs import services

    submit(api)  # four messages wait in the queue

    reaped = services.pages_reap(
        stuck_after=timedelta(hours=1), unsent_after=timedelta(minutes=1), lost_after=timedelta(0)
    )

    assert reaped == 0


@pytest.mark.slow
def test_a_worker_that_misses_its_start_deadline_is_ended_with_its_pool():
    # Pinged under another name it never answers, so `start` times out with the worker (and,
    # once its pool has forked, the pool's processes) running: `start` must end them all,
    # since `with worker.start()` never reaches __exit__.
    worker = WorkerProcess(queues="ocr.local", concurrency=1)
    node = worker.name
    worker.name = "nobody-" + node
    with pytest.raises(TimeoutError):
        worker.start(timeout=30)
    forget_heartbeats(node)  # stop() forgot the name it was pinged under
    assert worker.process.poll() is not None

    def ours() -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter(["cmdline"]):
            if node in (process.info["cmdline"] or []):
                found.append(process)
        return found

    _gone, alive = psutil.wait_procs(ours(), timeout=10)
    assert not alive, alive
