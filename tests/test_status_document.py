"""The job status document stays small for a long document: a page summary with counts,
every page's details only on request (``include=pages``) or a page of them at a time
(``GET /v1/jobs/{id}/pages``); the SDK reads both."""

from __future__ import annotations

import json
from datetime import timedelta

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from webapp.jobs.models import Job, Page

pytestmark = pytest.mark.django_db


def pdf_of(pages: int) -> bytes:
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        doc.new_page().insert_text((72, 72), f"Page {number} of a long report.")
    return bytes(doc.tobytes())


def submitted(api, pages: int) -> str:
    upload = SimpleUploadedFile(f"{pages}.pdf", pdf_of(pages))
    response = api.post("/v1/jobs", {"file": upload}, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()["id"]


def finish(job_id: str, numbers: range, status: str, **fields) -> None:
    Page.objects.filter(job_id=job_id, number__in=list(numbers)).update(
        status=status, finished_at=timezone.now(), **fields
    )


def test_a_long_jobs_status_is_as_small_as_a_short_ones_and_counts_its_pages(api):
    short, long = submitted(api, 2), submitted(api, 300)
    finish(long, range(1, 101), Page.Status.SUCCEEDED, quality={"signals": {"x": "y" * 200}})
    finish(long, range(101, 104), Page.Status.FAILED, error="this page could not be read")
    Page.objects.filter(job_id=long, number=104).update(status=Page.Status.RUNNING)
    Job.objects.filter(pk=long).update(pages_needing_review=2)

    sizes = {job: len(api.get(f"/v1/jobs/{job}").content) for job in (short, long)}
    status = api.get(f"/v1/jobs/{long}").json()

    assert "pages" not in status
    assert status["page_summary"] == {
        "total": 300,
        "queued": 196,
        "running": 1,
        "succeeded": 100,
        "failed": 3,
        "cancelled": 0,
        "needs_review": 2,
    }
    assert status["links"]["pages"].endswith(f"/v1/jobs/{long}/pages")
    assert sizes[long] < 3000 and sizes[long] - sizes[short] < 100, sizes
    everything = api.get(f"/v1/jobs/{long}", {"include": "pages"}).json()
    assert [page["number"] for page in everything["pages"]] == list(range(1, 301))
    assert len(json.dumps(everything)) > 50 * sizes[long]  # what every poll used to carry


def test_the_page_list_comes_a_page_at_a_time_filtered_by_state_and_finishing_time(api):
    job = submitted(api, 250)
    before = timezone.now() - timedelta(seconds=1)
    finish(job, range(1, 6), Page.Status.FAILED, error="unreadable")

    first = api.get(f"/v1/jobs/{job}/pages").json()
    second = api.get(first["next"]).json()
    last = api.get(f"/v1/jobs/{job}/pages", {"page": 3}).json()
    failed = api.get(f"/v1/jobs/{job}/pages", {"status": "failed,cancelled"}).json()
    recent = api.get(f"/v1/jobs/{job}/pages", {"finished_after": before.isoformat()}).json()
    none_since = api.get(
        f"/v1/jobs/{job}/pages", {"finished_after": timezone.now().isoformat()}
    ).json()

    assert (first["count"], first["page_size"], first["previous"]) == (250, 100, None)
    assert [p["number"] for p in first["results"]] == list(range(1, 101))
    assert [p["number"] for p in second["results"]] == list(range(101, 201))
    assert [p["number"] for p in last["results"]] == list(range(201, 251))
    assert last["next"] is None
    assert {"quality", "extra", "error", "attempts"} <= set(first["results"][0])
    assert [(p["number"], p["error"]) for p in failed["results"]] == [
        (n, "unreadable") for n in range(1, 6)
    ]
    assert [p["number"] for p in recent["results"]] == [1, 2, 3, 4, 5]
    assert none_since["count"] == 0


def test_a_bad_page_list_query_is_a_400_that_names_the_parameter(api, make_user):
    from tests.conftest import client_for

    job = submitted(api, 1)
    unknown = api.get(f"/v1/jobs/{job}/pages", {"status": "done"})
    too_big = api.get(f"/v1/jobs/{job}/pages", {"page_size": 501})
    include = api.get(f"/v1/jobs/{job}", {"include": "everything"})
    other = client_for(make_user("mallory")).get(f"/v1/jobs/{job}/pages")

    assert unknown.status_code == 400 and "unknown page status done" in unknown.json()["message"]
    assert too_big.status_code == 400 and "page_size" in too_big.json()["message"]
    assert include.status_code == 400 and "include" in include.json()["message"]
    assert other.status_code == 404


def test_the_schema_documents_the_summary_and_the_page_list(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    detail = schema["components"]["schemas"]["JobDetail"]["properties"]
    parameters = {
        p["name"] for p in schema["paths"]["/v1/jobs/{job_id}/pages"]["get"]["parameters"]
    }

    assert "page_summary" in detail and "include=pages" in detail["pages"]["description"]
    assert {"status", "finished_after", "page", "page_size", "sort", "needs_review"} <= parameters
