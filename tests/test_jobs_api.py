"""The jobs API end to end: HTTP in, real Redis, real worker processes, Markdown out."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests import documents
from tests.conftest import client_for, wait_for_job
from webapp.jobs.models import Document, Job, Page

# Tests with a worker commit for real, so the worker processes see their rows; the others
# run inside a transaction that is rolled back, where nothing is ever sent to a queue.
with_worker = pytest.mark.django_db(transaction=True)
without_worker = pytest.mark.django_db


def submit(client, data: bytes, name: str, **fields):
    upload = SimpleUploadedFile(name, data)
    return client.post("/v1/jobs", {"file": upload, **fields}, format="multipart")


def finished_markdown(client, data: bytes, name: str, **fields) -> tuple[dict, str]:
    response = submit(client, data, name, **fields)
    assert response.status_code == 202, response.content
    job = wait_for_job(client, response.json()["id"])
    result = client.get(f"/v1/jobs/{job['id']}/result")
    assert result.status_code == 200
    assert result["Content-Type"].startswith("text/markdown")
    return job, result.content.decode()


def assert_in_order(text: str, fragments) -> None:
    position = 0
    for fragment in fragments:
        found = text.find(fragment, position)
        assert found >= 0, f"{fragment!r} missing (or out of order) in:\n{text}"
        position = found + len(fragment)


@pytest.mark.slow
@with_worker
def test_a_born_digital_pdf_comes_back_as_markdown_with_its_table_in_order(api, worker):
    job, markdown = finished_markdown(api, documents.born_digital_pdf(), "report.pdf")

    assert job["status"] == "succeeded"
    assert job["progress"] | {"total": 3, "done": 3, "failed": 0} == job["progress"]
    assert_in_order(markdown, documents.BORN_DIGITAL_PAGE_MARKERS)
    for heading in documents.BORN_DIGITAL_HEADINGS:
        assert heading in markdown
    cells = [cell for row in documents.BORN_DIGITAL_TABLE_ROWS for cell in row]
    assert_in_order(markdown, [*documents.BORN_DIGITAL_TABLE_HEADER, *cells])
    assert documents.BORN_DIGITAL_FOOTNOTE in " ".join(markdown.split())
    assert job["usage"]["output_tokens"] > 0


@pytest.mark.slow
@with_worker
@pytest.mark.parametrize(
    ("make", "name"),
    [
        (documents.scanned_pdf, "scan.pdf"),
        (documents.png_page, "page.png"),
        (documents.rotated_scan_pdf, "rotated.pdf"),
    ],
)
def test_a_scanned_page_is_read_by_ocr(api, worker, make, name):
    job, markdown = finished_markdown(api, make(), name)

    assert job["status"] == "succeeded"
    for word in documents.SCAN_WORDS:
        assert word.lower() in markdown.lower()


@pytest.mark.slow
@with_worker
def test_a_page_selection_picks_pages_of_a_multi_page_tiff(api, worker):
    job, markdown = finished_markdown(api, documents.multipage_tiff(2), "bundle.tiff", pages="2")

    assert [page["number"] for page in job["pages"]] == [2]
    for word in documents.TIFF_PAGE_2_WORDS:
        assert word.lower() in markdown.lower()
    assert "invoice" not in markdown.lower()


@pytest.mark.slow
@with_worker
def test_the_json_result_has_each_page_with_tokens_and_timings(api, worker):
    response = submit(
        api, documents.born_digital_pdf(), "report.pdf", pages="1-2", table_format="html"
    )
    job = wait_for_job(api, response.json()["id"])

    body = api.get(f"/v1/jobs/{job['id']}/result", HTTP_ACCEPT="application/json").json()

    assert [page["number"] for page in body["pages"]] == [1, 2]
    for page in body["pages"]:
        assert page["status"] == "succeeded"
        assert page["output_tokens"] > 0
        assert page["engine_seconds"] > 0
        assert page["queue_wait_seconds"] is not None
        assert page["attempts"] == 1
    assert "<table" in "".join(page["markdown"] for page in body["pages"])
    assert body["usage"]["output_tokens"] == sum(page["output_tokens"] for page in body["pages"])


@pytest.mark.slow
@with_worker
def test_a_submission_answers_202_with_the_job_and_its_links(api, worker):
    response = submit(api, documents.png_page(), "page.png")

    assert response.status_code == 202
    body = response.json()
    assert body["status"] in ("queued", "running", "succeeded")
    assert body["document"]["mime_type"] == "image/png"
    assert body["document"]["name"] == "page.png"
    assert body["links"]["self"].endswith(f"/v1/jobs/{body['id']}")
    assert response["Location"] == body["links"]["self"]
    wait_for_job(api, body["id"])


@without_worker
def test_the_result_of_an_unfinished_job_is_a_409_that_says_how_far_it_got(api):
    # Inside the test's transaction nothing is sent: the job stays queued.
    response = submit(api, documents.png_page(), "page.png")

    result = api.get(f"/v1/jobs/{response.json()['id']}/result")

    assert result.status_code == 409
    assert "queued" in result.json()["message"]


@without_worker
@pytest.mark.parametrize(
    ("data", "name", "status", "words"),
    [
        (b"", "empty.pdf", 400, "empty"),
        (documents.non_document(), "notes.pdf", 400, "PDF"),
        (documents.corrupt_pdf(), "broken.pdf", 422, "damaged"),
        (documents.encrypted_pdf(), "locked.pdf", 422, "password"),
    ],
)
def test_bad_documents_are_refused_with_a_clear_message_and_nothing_is_left(
    api, data, name, status, words
):
    response = submit(api, data, name)

    assert response.status_code == status, response.content
    body = response.json()
    assert body["code"] == status
    assert words.lower() in body["message"].lower()
    assert not Job.objects.exists()
    assert not Document.objects.exists()
    assert not Page.objects.exists()


@without_worker
def test_a_page_selection_past_the_end_says_how_many_pages_there_are(api):
    response = submit(api, documents.born_digital_pdf(), "report.pdf", pages="5-9")

    assert response.status_code == 400
    assert response.json()["status"] == 40001
    assert "3 pages" in response.json()["message"]
    assert not Job.objects.exists()


@without_worker
def test_a_range_that_runs_past_the_end_is_clamped_to_the_last_page(api):
    response = submit(api, documents.born_digital_pdf(), "report.pdf", pages="2-9")

    assert response.status_code == 202, response.content
    assert response.json()["progress"]["total"] == 2
    assert sorted(Page.objects.values_list("number", flat=True)) == [2, 3]


@without_worker
def test_an_unknown_engine_is_refused_with_the_list_of_engines(api):
    response = submit(api, documents.png_page(), "page.png", engine="tesseract-9000")

    assert response.status_code == 400
    assert "local" in response.json()["message"]
    assert not Job.objects.exists()


@without_worker
def test_an_ocr_language_is_tesseracts_codes_or_a_400_that_says_what_it_takes(api):
    refused = submit(api, documents.png_page(), "page.png", ocr_language="Korean; DROP")
    taken = submit(api, documents.png_page(), "page.png", ocr_language="FAS+ara")

    assert refused.status_code == 400
    assert "Tesseract language codes" in refused.json()["message"]
    assert taken.status_code == 202, taken.content
    # what the engine is given, and part of the result cache's key
    assert Job.objects.get().options["ocr_language"] == "fas+ara"


@without_worker
def test_a_request_without_a_file_says_so(api):
    response = api.post("/v1/jobs", {"pages": "1"}, format="multipart")

    assert response.status_code == 400
    assert "file" in response.json()["message"]


def test_the_api_wants_a_key_and_says_how_to_send_one(client):
    response = client.get("/v1/jobs/00000000-0000-0000-0000-000000000000")

    assert response.status_code == 401
    assert response.json()["status"] == 40103
    assert_says_how_to_send_a_key(response.json()["message"])


def assert_says_how_to_send_a_key(message: str) -> None:
    assert "Authorization: Bearer <key>" in message, message
    assert "FOLIO_API_KEY" in message and "/account/keys/" in message, message


@without_worker
def test_a_revoked_or_unknown_key_is_refused(api):
    api.credentials(HTTP_AUTHORIZATION="Bearer folio_not-a-real-key")

    response = api.get("/v1/jobs/00000000-0000-0000-0000-000000000000")

    assert response.status_code == 401
    assert "unknown or has been revoked" in response.json()["message"]
    assert_says_how_to_send_a_key(response.json()["message"])


def test_a_key_sent_without_the_bearer_prefix_is_told_so(client, make_user):
    from webapp.accounts.services import api_key_create

    key = api_key_create(user=make_user("kim")).secret
    bare = client.get("/v1/jobs", HTTP_AUTHORIZATION=key)
    chat = client.post(
        "/v1/chat/completions", {}, content_type="application/json", HTTP_AUTHORIZATION=key
    )
    proxy = client.get("/v1/jobs", HTTP_AUTHORIZATION="Basic a2ltOnNlY3JldA==")

    assert bare.status_code == 401
    assert "without the `Bearer ` prefix" in bare.json()["message"]
    assert_says_how_to_send_a_key(bare.json()["message"])
    assert chat.status_code == 401  # OpenAI's shape, the same words
    assert_says_how_to_send_a_key(chat.json()["error"]["message"])
    # Another scheme (a proxy's own credentials) is not taken for a key: no key was sent.
    assert proxy.status_code == 401
    assert proxy.json()["message"].startswith("No API key in the request")


@without_worker
def test_another_users_job_is_not_found(api, make_user):
    job_id = submit(api, documents.png_page(), "page.png").json()["id"]
    mallory = client_for(make_user("mallory"))

    assert mallory.get(f"/v1/jobs/{job_id}").status_code == 404
    assert mallory.get(f"/v1/jobs/{job_id}/result").status_code == 404


@without_worker
def test_the_same_file_uploaded_twice_is_stored_once(api):
    first = submit(api, documents.png_page(), "a.png").json()
    second = submit(api, documents.png_page(), "b.png").json()

    assert first["document"]["id"] == second["document"]["id"]
    assert Document.objects.count() == 1
    assert Job.objects.count() == 2
