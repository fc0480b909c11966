"""The review score through the service: every page carries it, the jobs API lists pages by
it and filters on the verdict, the verdict follows the job's threshold (or the server's), and
a cache hit keeps the first reading's quality report."""

from __future__ import annotations

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import wait_for_job
from webapp.jobs.models import Page

with_worker = pytest.mark.django_db(transaction=True)
without_worker = pytest.mark.django_db

PROSE = (
    "The river authority measured the spring flood at four metres above the summer level. "
    "Engineers rebuilt the northern weir with stone taken from the old quarry."
)
# A text layer that holds letters but no words: what a bad OCR pass leaves in a PDF.
GARBLE = (
    "Tbc rivcr authorlty mcasurcd thc sprlng flaad ot faur mctrcs abovc tbc summcr lcvcl. "
    "Englnccrs rcbullt tbc northcrn wclr wltb stanc takcn fram thc ald quarry, ond formcrs "
    "dawnstrcam wcrc wornad twa doys bcfarc thc crcst rcocbcd tbc lawcr vollcy."
)


def _pdf(*pages: str | None) -> bytes:
    """A page per argument: its text, or None for a black box (ink, nothing to read)."""
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        if text is None:
            page.draw_rect(pymupdf.Rect(100, 100, 500, 700), color=(0, 0, 0), fill=(0, 0, 0))
        else:
            page.insert_textbox(pymupdf.Rect(72, 72, 520, 770), text, fontsize=11)
    return doc.tobytes()


def submit(client, data: bytes, name: str, **fields):
    response = client.post(
        "/v1/jobs", {"file": SimpleUploadedFile(name, data), **fields}, format="multipart"
    )
    assert response.status_code == 202, response.content
    return response.json()


@pytest.mark.slow
@with_worker
def test_pages_carry_a_score_and_the_api_lists_them_most_doubtful_first(api, worker):
    job = wait_for_job(api, submit(api, _pdf(PROSE, None, GARBLE), "three.pdf")["id"])
    assert job["status"] == "succeeded", job
    scores = {page["number"]: page["review_score"] for page in job["pages"]}
    assert scores[1] == 0.0
    assert scores[2] == 1.0  # ink and no text: certainly wrong
    assert 0.5 <= scores[3] < 1.0, job["pages"][2]["quality"]
    third = job["pages"][2]
    assert third["needs_review"] is True
    assert third["quality"]["reasons"][0].startswith("plausibility:")
    assert job["review"] == {
        "pages_needing_review": 2,
        "pages": [2, 3],
        "unread_script_pages": [],
    }

    # The page list, and the status document with every page in it (the test client's query
    # replaces one written in the path, so ``include`` goes with the others).
    for listing, extra in (
        (f"/v1/jobs/{job['id']}/pages", {}),
        (f"/v1/jobs/{job['id']}", {"include": "pages"}),
    ):
        by_score = api.get(listing, {"sort": "review", **extra}).json()
        flagged = api.get(listing, {"needs_review": "true", **extra}).json()
        fine = api.get(listing, {"needs_review": "false", **extra}).json()
        key = "results" if "results" in by_score else "pages"
        assert [page["number"] for page in by_score[key]] == [2, 3, 1]
        assert [page["number"] for page in flagged[key]] == [2, 3]
        assert [page["number"] for page in fine[key]] == [1]


@pytest.mark.slow
@with_worker
def test_the_threshold_decides_and_a_cache_hit_keeps_the_quality_report(api, worker):
    data = _pdf(GARBLE + " Second copy.")
    lenient = wait_for_job(api, submit(api, data, "garble.pdf", review_threshold="0.95")["id"])
    page = lenient["pages"][0]
    assert page["needs_review"] is False and page["review_score"] >= 0.5, page
    assert page["quality"]["threshold"] == 0.95

    # The same bytes again, at the server's threshold: answered from the cache (a page that
    # did not need review at its own threshold is cached), and judged again.
    strict = submit(api, data, "garble.pdf")
    assert strict["status"] == "succeeded", strict
    detail = api.get(f"/v1/jobs/{strict['id']}", {"include": "pages"}).json()
    hit = detail["pages"][0]
    assert hit["method"] == "cache"
    assert hit["review_score"] == page["review_score"]
    assert hit["quality"]["signals"] == page["quality"]["signals"]
    assert hit["needs_review"] is True and hit["quality"]["reasons"], hit
    assert detail["review"]["pages_needing_review"] == 1


@without_worker
@pytest.mark.parametrize("value", ["0", "1.5", "many"])
def test_a_review_threshold_out_of_range_is_refused_and_nothing_is_written(api, value):
    response = api.post(
        "/v1/jobs",
        {"file": SimpleUploadedFile("a.pdf", _pdf(PROSE)), "review_threshold": value},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    assert "review_threshold" in response.json()["message"]
    assert not Page.objects.exists()


@without_worker
def test_an_unknown_sort_is_a_clear_400(api):
    job = submit(api, _pdf(PROSE), "a.pdf")
    response = api.get(f"/v1/jobs/{job['id']}", {"sort": "colour"})
    assert response.status_code == 400
    assert "sort" in response.json()["message"]
