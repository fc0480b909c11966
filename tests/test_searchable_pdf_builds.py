"""The searchable PDF is built by a worker, in a child process with a wall-clock limit, and
stored once; the web process only serves what was stored (docs/RELIABILITY.md, "Hostile
input"). The worker's build (``ocr_worker.searchable_pdf``) runs here in the test process, as
a worker would run it; the downloads go through the jobs API, the Reader's poll link and
the UI. Real PDFs, images, PostgreSQL, Redis and storage."""

from __future__ import annotations

import base64
import json
import time

import pymupdf
import pytest
from django.core.files.storage import default_storage
from django.db.models import F
from django.test import override_settings
from django.utils import timezone

from ocr_worker.celery_app import app
from ocr_worker.searchable_pdf import searchable_pdf_make
from tests import documents, hostile
from tests.test_hostile_input import post_jobs
from webapp.jobs.models import Job, Page
from webapp.jobs.services.searchable_pdf import BUILD_SEARCHABLE_PDF

pytestmark = pytest.mark.django_db

NO_WAIT = override_settings(FOLIO_SEARCHABLE_PDF_WAIT=0)


def read_by_worker(job_id: str) -> Job:
    """The job as it stands once a worker has read every page (nothing read: each page keeps
    its picture, without text)."""
    now = timezone.now()
    Page.objects.filter(job_id=job_id).update(status=Page.Status.SUCCEEDED, finished_at=now)
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.SUCCEEDED, finished_at=now, pages_done=F("pages_total")
    )
    return Job.objects.get(pk=job_id)


def build_requests(job: Job) -> list[str]:
    """The fingerprints of the build messages waiting in the job's engine queue."""
    with app.connection_for_write() as conn:
        raw = conn.default_channel.client.lrange("ocr.local", 0, -1)
    found = []
    for message in map(json.loads, raw):
        if message["headers"]["task"] != BUILD_SEARCHABLE_PDF:
            continue
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        if args[0] == str(job.pk):
            found.append(args[1])
    return found


def stored_builds(job: Job) -> list[str]:
    try:
        return sorted(default_storage.listdir(f"results/{job.pk}/searchable")[1])
    except FileNotFoundError:
        return []


def pdf_of(api, job: Job):
    return api.get(f"/v1/jobs/{job.pk}/result", {"format": "pdf"})


@NO_WAIT
def test_the_web_process_never_builds_the_searchable_pdf_it_answers_202_until_a_worker_has(
    api, client
):
    job = read_by_worker(post_jobs(api, documents.png_page(), "scan.png").json()["id"])
    client.force_login(job.owner)

    first, again = pdf_of(api, job), pdf_of(api, job)
    page = client.get(f"/jobs/{job.pk}/searchable.pdf")

    for response in (first, again, page):
        assert response.status_code == 202, response.content
        assert response["Retry-After"] == "2"
    assert "being built by a worker" in first.json()["message"]
    assert b"Preparing the searchable PDF" in page.content
    assert b'http-equiv="refresh"' in page.content  # the page asks again by itself
    # One build asked of a worker of the job's engine, however often it is asked for.
    (fingerprint,) = build_requests(job)
    assert stored_builds(job) == []

    assert searchable_pdf_make(job_id=job.pk, fingerprint=fingerprint) == "built"

    served = pdf_of(api, job)
    assert served.status_code == 200 and served["Content-Type"] == "application/pdf"
    assert 'filename="scan.searchable.pdf"' in served["Content-Disposition"]
    body = served.getvalue()
    assert pymupdf.open(stream=body).page_count == 1
    ui = client.get(f"/jobs/{job.pk}/searchable.pdf")
    assert ui.status_code == 200 and ui.getvalue() == body
    # Stored once: served again as stored, no second build asked for.
    assert pdf_of(api, job).getvalue() == body
    assert build_requests(job) == [fingerprint]
    assert stored_builds(job) == [f"{fingerprint}.pdf"]


@NO_WAIT
def test_a_page_that_lands_after_the_build_makes_a_new_one_and_the_old_is_never_served(api):
    response = post_jobs(api, documents.born_digital_pdf(), "report.pdf", pages="1-2")
    job = read_by_worker(response.json()["id"])
    Page.objects.filter(job=job, number=2).update(status=Page.Status.RUNNING, finished_at=None)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.CANCELLED)
    assert pdf_of(api, job).status_code == 202
    (before,) = build_requests(job)
    assert searchable_pdf_make(job_id=job.pk, fingerprint=before) == "built"
    assert pdf_of(api, job).status_code == 200

    # The page being read when the job was cancelled lands: the stored build is out of date.
    Page.objects.filter(job=job, number=2).update(
        status=Page.Status.SUCCEEDED, finished_at=timezone.now()
    )
    assert pdf_of(api, job).status_code == 202
    (after,) = set(build_requests(job)) - {before}
    # A message for the old pages that arrives now builds nothing.
    assert searchable_pdf_make(job_id=job.pk, fingerprint=before) == "stale"
    assert searchable_pdf_make(job_id=job.pk, fingerprint=after) == "built"
    assert stored_builds(job) == [f"{after}.pdf"]
    assert pymupdf.open(stream=pdf_of(api, job).getvalue()).page_count == 2


@NO_WAIT
def test_a_build_past_its_limit_is_stopped_and_refused_with_the_reason_not_built_again(api):
    """200 frames of a 2,000-frame TIFF, each decoded and re-encoded into the PDF: many
    seconds of work in MuPDF and Pillow, stopped at the one-second limit."""
    response = post_jobs(api, hostile.many_frames_tiff(), "scan.tiff", pages="1-200")
    job = read_by_worker(response.json()["id"])
    assert pdf_of(api, job).status_code == 202
    (fingerprint,) = build_requests(job)

    with override_settings(FOLIO_SEARCHABLE_PDF_TIMEOUT=1):
        # Built to its end, it would be "built": "refused" is the limit stopping it.
        assert searchable_pdf_make(job_id=job.pk, fingerprint=fingerprint) == "refused"

    refused = pdf_of(api, job)
    assert refused.status_code == 422
    message = refused.json()["message"]
    assert "took longer than 1 s" in message and "FOLIO_SEARCHABLE_PDF_TIMEOUT" in message
    assert build_requests(job) == [fingerprint]  # the same pages are not built again


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_readers_pdf_answer_points_an_anonymous_caller_at_its_result_link(worker):
    """A worker reads the page and then builds the PDF; the Reader answers before the build
    (no wait here) with a 202 whose Location, the caller's capability link, gives the PDF."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from rest_framework.test import APIClient

    anonymous = APIClient()
    with NO_WAIT:
        accepted = anonymous.post(
            "/",
            {"file": SimpleUploadedFile("scan.png", documents.png_page())},
            format="multipart",
            HTTP_X_FOLIO_FORMAT="pdf",
        )
    assert accepted.status_code == 202, accepted.content
    assert accepted["Retry-After"] == "2" and accepted["X-Folio-Job"]
    location = accepted["Location"]
    assert "/v1/reader/jobs/" in location and location.endswith("/result?format=pdf")

    deadline = time.monotonic() + 60
    while (pdf := anonymous.get(location)).status_code == 202:
        assert time.monotonic() < deadline, "the worker never built the PDF"
        time.sleep(float(pdf["Retry-After"]))
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert "Marlow" in pymupdf.open(stream=pdf.getvalue())[0].get_text()
