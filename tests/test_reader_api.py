"""Reader's conventions (POST /, GET /<url>, X-* headers, Accept) over real jobs and workers."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.utils import timezone

from model.engines.base import PageResult
from model.engines.registry import engine_spec
from tests import documents
from tests.document_server import document_server
from webapp.jobs import services
from webapp.jobs.models import Job, Page
from webapp.jobs.services import JobOptions
from webapp.reader.options import ReaderOptions
from webapp.reader.sources import Source
from webapp.results.models import CachedPage
from webapp.results.services import engine_version, options_key

with_worker = pytest.mark.django_db(transaction=True)
without_worker = pytest.mark.django_db


@pytest.fixture
def server():
    with document_server() as base_url:
        yield base_url


@pytest.fixture
def local_fetches():
    """The document server is on loopback, which the SSRF policy refuses unless allowed."""
    with override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"]):
        yield


def post_file(client, data: bytes, name: str = "report.pdf", **headers):
    upload = SimpleUploadedFile(name, data)
    return client.post("/", {"file": upload}, format="multipart", **headers)


def sse_frames(response) -> list[tuple[str, dict]]:
    text = b"".join(response.streaming_content).decode()
    frames = []
    for block in text.strip().split("\n\n"):
        event, data = block.split("\n", 1)
        frames.append((event.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return frames


# --- with a worker -------------------------------------------------------------------------------


@pytest.mark.slow
@with_worker
def test_a_posted_pdf_comes_back_in_the_json_envelope(api, worker):
    response = post_file(api, documents.born_digital_pdf(), HTTP_ACCEPT="application/json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["code"], body["status"]) == (200, 20000)
    data = body["data"]
    assert data["numPages"] == 3
    assert data["title"] == documents.BORN_DIGITAL_TITLE
    for marker in documents.BORN_DIGITAL_PAGE_MARKERS:
        assert marker in data["content"]
    assert data["usage"]["tokens"] > 0
    assert body["meta"]["usage"]["tokens"] == data["usage"]["tokens"]


@pytest.mark.slow
@with_worker
def test_a_base64_pdf_in_a_json_body_with_x_page_reads_one_page(api, worker):
    pdf = base64.b64encode(documents.born_digital_pdf()).decode()

    response = api.post(
        "/", {"pdf": pdf}, format="json", HTTP_X_PAGE="2", HTTP_ACCEPT="application/json"
    )

    content = response.json()["data"]["content"]
    assert documents.BORN_DIGITAL_PAGE_MARKERS[1] in content
    assert documents.BORN_DIGITAL_PAGE_MARKERS[0] not in content
    assert documents.BORN_DIGITAL_PAGE_MARKERS[2] not in content


@pytest.mark.slow
@with_worker
def test_get_with_the_url_in_the_path_answers_in_readers_text_layout(
    api, worker, server, local_fetches
):
    response = api.get(f"/{server}/report.pdf%233")

    assert response.status_code == 200, response.content
    text = response.content.decode()
    # The title is the first heading of what was read: page 3's here.
    assert text.startswith(
        f"Title: {documents.BORN_DIGITAL_HEADINGS[2]}\n\nURL Source: {server}/report.pdf\n\n"
    )
    assert "Number of Pages: 3\n\nMarkdown Content:\n" in text
    assert documents.BORN_DIGITAL_PAGE_MARKERS[2] in text
    assert documents.BORN_DIGITAL_PAGE_MARKERS[0] not in text
    assert int(response["X-Usage-Tokens"]) > 0


@pytest.mark.slow
@with_worker
def test_a_posted_url_is_fetched_and_its_real_type_sniffed(api, worker, server, local_fetches):
    response = api.post(
        "/", {"url": f"{server}/mislabelled"}, format="json", HTTP_ACCEPT="application/json"
    )

    assert response.status_code == 200, response.content
    assert documents.BORN_DIGITAL_PAGE_MARKERS[0] in response.json()["data"]["content"]


@pytest.mark.slow
@with_worker
def test_respond_with_text_drops_the_markdown(api, worker):
    response = post_file(
        api, documents.born_digital_pdf(), HTTP_X_RESPOND_WITH="text", HTTP_X_PAGE="1-2"
    )

    # As Reader answers `respondWith: text` in text/plain: the text alone.
    content = response.content.decode()
    assert not content.startswith("Title:")
    assert documents.BORN_DIGITAL_TABLE_ROWS[0][0] in content
    assert "|" not in content
    assert "\n#" not in content and not content.startswith("#")


@pytest.mark.slow
@with_worker
def test_respond_with_text_answers_in_readers_text_field(api, worker):
    pdf = base64.b64encode(documents.born_digital_pdf()).decode()

    response = api.post(
        "/", {"pdf": pdf, "respondWith": "text"}, format="json", HTTP_ACCEPT="application/json"
    )

    data = response.json()["data"]
    assert "content" not in data
    assert documents.BORN_DIGITAL_PAGE_MARKERS[0] in data["text"]
    assert not re.search(r"<[a-z]+[\s>]|^#|\|", data["text"], re.MULTILINE)


@pytest.mark.slow
@with_worker
def test_an_event_stream_sends_a_frame_per_page_in_order_then_the_document(api, worker):
    pdf = documents.born_digital_pdf()

    # The first read goes to the worker; the second is answered from the cache.
    for _ in range(2):
        response = post_file(api, pdf, HTTP_ACCEPT="text/event-stream")

        assert response["Content-Type"] == "text/event-stream"
        frames = sse_frames(response)
        assert [event for event, _ in frames] == ["data"] * 4
        *pages, whole = [data for _, data in frames]
        assert [page["page"] for page in pages] == [1, 2, 3]
        for page, marker in zip(pages, documents.BORN_DIGITAL_PAGE_MARKERS, strict=True):
            assert marker in page["content"]
            assert page["usage"]["tokens"] >= 0
        assert "page" not in whole
        for marker in documents.BORN_DIGITAL_PAGE_MARKERS:
            assert marker in whole["content"]
    assert Page.objects.filter(method="cache").count() == 3


@pytest.mark.slow
@with_worker
@pytest.mark.parametrize("where", ["header", "body"])
def test_a_budget_the_reading_exceeds_is_readers_409(api, worker, where):
    pdf = base64.b64encode(documents.born_digital_pdf()).decode()
    body = {"pdf": pdf, "respondWith": "markdown"}
    headers = {"HTTP_ACCEPT": "application/json"}
    if where == "header":
        headers["HTTP_X_TOKEN_BUDGET"] = "1"
    else:
        body["tokenBudget"] = 1

    response = api.post("/", body, format="json", **headers)

    assert response.status_code == 409, response.content
    error = response.json()
    assert (error["name"], error["status"]) == ("BudgetExceededError", 40904)
    assert re.search(r"budget.*exceeded", error["message"], re.IGNORECASE)
    assert "(1)" in error["message"]


@pytest.mark.slow
@with_worker
def test_the_job_stops_at_its_token_budget(api, worker):
    response = post_file(
        api, documents.born_digital_pdf(), HTTP_X_TOKEN_BUDGET="1", HTTP_ACCEPT="application/json"
    )

    assert response.status_code == 409
    job = Job.objects.get(pk=response["X-Folio-Job"])
    assert job.status == Job.Status.PARTIALLY_FAILED
    stopped = job.pages.filter(status=Page.Status.FAILED)
    assert stopped.exists()
    assert all("token budget of 1" in page.error for page in stopped)
    assert str(job.input_tokens + job.output_tokens) in response.json()["message"]


@pytest.mark.slow
@with_worker
def test_a_url_beside_a_pdf_is_its_source_and_an_upload_is_named_by_its_file(api, worker):
    pdf = documents.born_digital_pdf()
    source = "https://example.com/reports/harbour.pdf"

    beside = api.post(
        "/",
        {"pdf": base64.b64encode(pdf).decode(), "url": source},
        format="json",
        HTTP_ACCEPT="text/plain",
    )
    uploaded = post_file(api, pdf, "harbour-2026.pdf", HTTP_ACCEPT="application/json")

    assert beside.status_code == 200, beside.content
    assert f"URL Source: {source}\n" in beside.content.decode()
    assert uploaded.json()["data"]["url"] == "harbour-2026.pdf"


@pytest.mark.slow
@with_worker
def test_the_title_comes_from_the_metadata_before_the_first_heading(api, worker):
    titled = api.post(
        "/",
        {"pdf": base64.b64encode(documents.titled_pdf("Harbour Annual 2026")).decode()},
        format="json",
        HTTP_ACCEPT="application/json",
    )
    untitled = post_file(api, documents.born_digital_pdf(), HTTP_ACCEPT="application/json")

    assert titled.json()["data"]["title"] == "Harbour Annual 2026"
    assert untitled.json()["data"]["title"] == documents.BORN_DIGITAL_TITLE


# Reader's e2e tests (request-options, crawler-options-misc, cache-control, option-interactions)
# send these; none means anything for a document, and each is accepted and ignored.
READER_ONLY_HEADERS = {
    "HTTP_X_LOCALE": "ja-JP",
    "HTTP_X_ENGINE": "browser",
    "HTTP_X_RETAIN_IMAGES": "none",
    "HTTP_X_WITH_LINKS_SUMMARY": "true",
    "HTTP_X_MD_HEADING_STYLE": "setext",
    "HTTP_DNT": "1",
    "HTTP_X_SET_COOKIE": "session=abc123; Path=/; Domain=example.com",
    "HTTP_X_PROXY_URL": "socks5://proxy.example.com:1080",
    "HTTP_X_WITH_GENERATED_ALT": "true",
    "HTTP_X_REMOVE_OVERLAY": "true",
}
READER_ONLY_BODY = {
    "locale": "en-US",
    "setCookies": ["session=abc123; Path=/"],
    "customHeader": {"X-Custom-Test": "hello"},
    "withGeneratedAlt": True,
    "retainImages": "none",
    "markdown": {"headingStyle": "atx"},
    "engine": "auto",
}


@pytest.mark.slow
@with_worker
def test_readers_body_parameters_work_like_its_headers_and_the_rest_is_ignored(api, worker):
    pdf = base64.b64encode(documents.born_digital_pdf()).decode()
    answers = [
        api.post("/", {"pdf": pdf, **extra}, format="json", HTTP_ACCEPT="application/json")
        for extra in (
            {"noCache": True},
            {"cacheTolerance": 0},
            {"cacheTolerance": 3600},
            {"timeout": 30},
            {"tokenBudget": 100000},
            {"respondWith": "markdown", "page": 2},
            READER_ONLY_BODY,
        )
    ]
    answers += [
        api.post("/", {"pdf": pdf}, format="json", HTTP_ACCEPT="application/json", **headers)
        for headers in ({"HTTP_X_TIMEOUT": "999"}, READER_ONLY_HEADERS)
    ]

    assert [answer.status_code for answer in answers] == [200] * len(answers)
    assert all("Page marker" in answer.json()["data"]["content"] for answer in answers)
    # `page` in the body is X-Page: only page 2 was read.
    assert documents.BORN_DIGITAL_PAGE_MARKERS[0] not in answers[5].json()["data"]["content"]
    # noCache read again; cacheTolerance 0 accepts nothing cached either.
    first, second = (Job.objects.get(pk=a["X-Folio-Job"]) for a in answers[:2])
    assert not first.pages.filter(method="cache").exists()
    assert not second.pages.filter(method="cache").exists()


# --- without a worker ----------------------------------------------------------------------------


def cache_page_one(
    data: bytes, *, markdown: str, age=timedelta(0), output_tokens: int = 0, owner="alice"
):
    """What a worker leaves in the result cache after reading page 1 of ``data`` for the user
    named ``owner`` (the ``api`` fixture's user by default)."""
    CachedPage.objects.create(
        owner=get_user_model().objects.get(username=owner),
        sha256=hashlib.sha256(data).hexdigest(),
        engine="local",
        engine_version=engine_version("local"),
        options_key=options_key(JobOptions().output_options()),
        page_number=1,
        markdown=markdown,
        # A page's layout, as a worker stores it beside the Markdown (entries without one
        # predate layouts and are not reused).
        layout={
            "width": 595.0,
            "height": 842.0,
            "source": "page",
            "blocks": [{"type": "paragraph", "markdown": markdown, "bbox": [0, 0, 595, 842]}],
        },
        output_tokens=output_tokens,
        created_at=timezone.now() - age,
    )


@without_worker
def test_a_cached_result_returns_without_touching_a_worker(api):
    data = documents.png_page()
    cache_page_one(data, markdown="Invoice number 4721 from the cache", output_tokens=7)

    response = post_file(api, data, "page.png", HTTP_ACCEPT="application/json", HTTP_X_TIMEOUT="5")

    assert response.status_code == 200
    assert "from the cache" in response.json()["data"]["content"]
    assert Page.objects.get().method == "cache"
    assert response.json()["data"]["usage"]["tokens"] == 7


@without_worker
@pytest.mark.parametrize("where", ["header", "body"])
def test_a_budget_the_cached_pages_already_exceed_is_refused_before_any_work(api, where):
    data = documents.png_page()
    cache_page_one(data, markdown="Invoice number 4721 from the cache", output_tokens=50)
    body = {"pdf": base64.b64encode(data).decode()}
    headers = {"HTTP_ACCEPT": "application/json"}
    if where == "header":
        headers["HTTP_X_TOKEN_BUDGET"] = "10"
    else:
        body["tokenBudget"] = 10

    response = api.post("/", body, format="json", **headers)

    assert response.status_code == 409, response.content
    error = response.json()
    assert (error["name"], error["status"]) == ("BudgetExceededError", 40904)
    assert "Token budget (10) exceeded, intended charge amount 50" in error["message"]
    assert not Job.objects.exists()


@without_worker
def test_a_budget_below_the_engines_per_page_floor_is_refused_before_any_work(make_user):
    floor = engine_spec("jina-ocr-v1").min_input_tokens_per_page
    assert floor > 0

    with pytest.raises(services.SubmissionError) as refused:
        services.job_submit(
            owner=make_user(),
            data=documents.born_digital_pdf(),
            filename="report.pdf",
            engine="jina-ocr-v1",
            options=JobOptions.parse(token_budget=3 * floor - 1),
        )

    assert refused.value.kind == "over_budget"
    assert f"Token budget ({3 * floor - 1}) exceeded, intended charge amount {3 * floor}" in str(
        refused.value
    )
    assert not Job.objects.exists()


@without_worker
def test_no_cache_and_an_old_cache_entry_both_send_the_page_to_a_worker(api):
    data = documents.png_page()
    cache_page_one(data, markdown="cached", age=timedelta(hours=1))

    no_cache = post_file(api, data, "page.png", HTTP_X_NO_CACHE="true", HTTP_PREFER="respond-async")
    too_old = post_file(
        api, data, "page.png", HTTP_X_CACHE_TOLERANCE="60", HTTP_PREFER="respond-async"
    )

    assert no_cache.status_code == too_old.status_code == 202
    assert not Page.objects.filter(method="cache").exists()


@without_worker
@pytest.mark.parametrize(
    ("headers", "words"),
    [
        ({"HTTP_X_PAGE": "9"}, "3 pages"),
        ({"HTTP_X_PAGE": "-1"}, "page"),
        ({"HTTP_X_PAGE": "7-999999"}, "3 pages"),
        ({"HTTP_X_TIMEOUT": "abc"}, "X-Timeout"),
        ({"HTTP_X_TIMEOUT": "0"}, "at least 1"),
        ({"HTTP_X_RESPOND_WITH": "screenshot"}, "jina-ocr-v1"),
        ({"HTTP_X_TOKEN_BUDGET": "lots"}, "X-Token-Budget"),
        ({"HTTP_X_CACHE_TOLERANCE": "1081236283437919682041691198455808"}, "X-Cache-Tolerance"),
        ({"HTTP_X_RESPOND_WITH": "jina-ocr-v1"}, "not available on this server"),
        ({"HTTP_X_FOLIO_SPEAKER_NOTES": "please"}, "X-Folio-Speaker-Notes 'please' must be true"),
        ({"HTTP_X_FOLIO_COMMENTS": "2"}, "X-Folio-Comments '2' must be true or false"),
    ],
)
def test_bad_headers_are_a_400_with_a_message_and_no_job(api, headers, words):
    response = post_file(api, documents.born_digital_pdf(), **headers)

    assert response.status_code == 400, response.content
    body = response.json()
    assert (body["code"], body["status"], body["data"]) == (400, 40001, None)
    assert words in body["message"]
    assert not Job.objects.exists()


@without_worker
def test_bad_bodies_say_what_is_missing_or_wrong(api):
    nothing = api.post("/", {}, format="json")
    not_base64 = api.post("/", {"pdf": "%%% not base64 %%%"}, format="json")
    broken = post_file(api, documents.corrupt_pdf())

    assert nothing.status_code == 400 and "`url`" in nothing.json()["message"]
    assert not_base64.status_code == 400 and "base64" in not_base64.json()["message"]
    assert broken.status_code == 422 and broken.json()["status"] == 42206
    assert not Job.objects.exists()


@without_worker
@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/report.pdf",
        "http://2130706433:{port}/report.pdf",  # 127.0.0.1 as one decimal number
        "http://[::1]:{port}/report.pdf",
        "http://[::ffff:127.0.0.1]:{port}/report.pdf",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost:{port}/redirect?to=http://127.0.0.1:{port}/report.pdf",
    ],
)
def test_urls_that_reach_internal_addresses_are_refused(api, server, target):
    port = server.rsplit(":", 1)[1]
    with override_settings(FOLIO_SSRF_ALLOW=["localhost"], FOLIO_FETCH_TIMEOUT=3):
        response = api.post("/", {"url": target.format(port=port)}, format="json")

    assert response.status_code == 451, response.content
    assert response.json()["status"] == 45102
    assert not Job.objects.exists()


@pytest.mark.slow
@with_worker
def test_a_web_page_url_is_read_as_its_main_content(api, server, local_fetches, worker):
    response = api.get(f"/{server}/article.html", HTTP_ACCEPT="application/json")

    assert response.status_code == 200, response.content
    content = response.json()["data"]["content"]
    assert "The harbour reopens" in content and "| Monday | 14 |" in content
    assert "Sports" not in content and "alert" not in content
    assert "market hall caf\u00e9" in content, content  # decoded with the declared charset


@without_worker
def test_a_url_that_is_not_found_says_so(api, server, local_fetches):
    response = api.get(f"/{server}/missing.pdf")

    assert response.status_code == 422
    assert "404" in response.json()["message"]


@without_worker
def test_pages_in_a_script_no_model_reads_are_named_by_the_jobs_api_and_the_reader(api):
    from webapp.reader.responses import UNREAD_SCRIPT_HEADER, finished_response

    response = post_file(api, documents.png_page(), "page.png", HTTP_PREFER="respond-async")
    job = Job.objects.get(pk=response.json()["data"]["jobId"])
    page = job.pages.get()
    claim = services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="test:1")
    # What the local engine reports for a page whose script no installed OCR model reads.
    unread = PageResult(markdown="2020.1.1", extra={"unread_script": {"share": 0.42}})
    services.page_complete(claim=claim, result=unread, engine_version="test")
    job.refresh_from_db()

    detail = api.get(f"/v1/jobs/{job.id}").json()
    answer = finished_response(
        job=job,
        source=Source(data=b"", filename="page.png", url=""),
        options=ReaderOptions(response_format="json"),
        result_url="",
    )

    assert detail["review"]["unread_script_pages"] == [1]
    assert answer[UNREAD_SCRIPT_HEADER] == "1"
    assert json.loads(answer.content)["data"]["unreadScriptPages"] == [1]
