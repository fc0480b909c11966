"""The Reader endpoint's access and waiting, without a worker: anonymous use and its rate
limit, a server that requires a key, the signed capability URLs of anonymous 202s and their
expiry, X-Timeout, the index page, and the event stream's disconnect option."""

from __future__ import annotations

import uuid

import pytest
import time_machine
from django.test import override_settings
from django.utils import timezone

from model.engines.base import PageResult
from tests import documents
from tests.conftest import client_for
from tests.test_reader_api import post_file, without_worker
from webapp.jobs import services
from webapp.jobs.models import Job, Page
from webapp.reader.options import ReaderOptions, reader_options
from webapp.reader.responses import event_frames
from webapp.reader.sources import Source


def test_x_timeout_above_the_maximum_is_clamped_as_reader_clamps():
    from django.test import RequestFactory

    def timeout(value: str) -> int:
        request = RequestFactory().post("/", HTTP_X_TIMEOUT=value)
        return reader_options(request, body={}, url=None).timeout

    assert [timeout(v) for v in ("30", "180", "181", "999", "9" * 5000)] == [30, 180, 180, 180, 180]


@without_worker
def test_an_anonymous_202_links_to_a_capability_url_that_works_without_a_key(client):
    response = post_file(client, documents.png_page(), "page.png", HTTP_PREFER="respond-async")

    assert response.status_code == 202
    poll = response.json()["data"]["poll"]
    assert response["Location"] == poll
    job_id = response.json()["data"]["jobId"]
    assert "/v1/reader/jobs/" in poll and job_id not in poll
    status = client.get(poll)
    assert status.status_code == 200, status.content
    assert (status.json()["id"], status.json()["status"]) == (job_id, "queued")
    result = client.get(status.json()["links"]["result"])
    assert result.status_code == 409 and "queued" in result.json()["message"]
    # The link is the permission for that job only: altered, it opens nothing.
    token = poll.rstrip("/").rsplit("/", 1)[1]
    for forged in (token[:-1] + ("A" if token[-1] != "A" else "B"), uuid.uuid4().hex):
        assert client.get(f"/v1/reader/jobs/{forged}").status_code == 404
    assert client.get(f"/v1/jobs/{job_id}").status_code == 401


@without_worker
def test_a_capability_url_expires(client):
    with time_machine.travel(timezone.now(), tick=False) as clock:
        response = post_file(client, documents.png_page(), "page.png", HTTP_PREFER="respond-async")
        poll = response.json()["data"]["poll"]
        with override_settings(FOLIO_READER_POLL_SECONDS=60):
            clock.shift(59)
            assert client.get(poll).status_code == 200
            clock.shift(2)
            assert client.get(poll).status_code == 404


@without_worker
def test_a_capability_url_serves_the_finished_result(client):
    response = post_file(client, documents.png_page(), "page.png", HTTP_PREFER="respond-async")
    page = Page.objects.get(job_id=response.json()["data"]["jobId"])
    # What a worker does with the page's message.
    claim = services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="test:1")
    services.page_complete(
        claim=claim, result=PageResult(markdown="Invoice number 4721"), engine_version="test"
    )

    result = client.get(client.get(response.json()["data"]["poll"]).json()["links"]["result"])

    assert result.status_code == 200
    assert "Invoice number 4721" in result.content.decode()


@without_worker
def test_a_job_not_done_within_x_timeout_answers_202_with_its_link(api):
    # Inside the test's transaction nothing is sent to a queue: the job cannot finish.
    response = post_file(api, documents.png_page(), "page.png", HTTP_X_TIMEOUT="1")

    assert response.status_code == 202
    body = response.json()
    job_id = body["data"]["jobId"]
    assert body["data"]["poll"].endswith(f"/v1/jobs/{job_id}")
    assert api.get(f"/v1/jobs/{job_id}").status_code == 200


@without_worker
@pytest.mark.usefixtures("one_rate_window")
def test_anonymous_use_is_allowed_but_strictly_rate_limited(client):
    address = f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.7"
    with override_settings(FOLIO_READER_ANON_REQUESTS_PER_MINUTE=2):
        answers = [
            post_file(
                client,
                documents.png_page(),
                "page.png",
                HTTP_PREFER="respond-async",
                REMOTE_ADDR=address,
            )
            for _ in range(3)
        ]

    assert [answer.status_code for answer in answers] == [202, 202, 429]
    assert answers[2].json()["status"] == 42903
    assert int(answers[2]["Retry-After"]) > 0


@without_worker
def test_a_server_can_require_a_key(client):
    with override_settings(FOLIO_READER_REQUIRE_KEY=True):
        response = post_file(client, documents.png_page(), "page.png")

    assert response.status_code == 401
    assert response.json()["status"] == 40103


@without_worker
def test_the_index_answers_each_kind_of_client(client):
    text = client.get("/")
    as_json = client.get("/", HTTP_ACCEPT="application/json")
    page = client.get("/", HTTP_ACCEPT="text/html,application/xhtml+xml")

    assert "X-Respond-With" in text.content.decode()
    assert "X-Page" in as_json.json()["data"]["headers"]
    assert page["Content-Type"].startswith("text/html")


@without_worker
def test_another_users_reader_job_is_not_theirs_to_poll(api, make_user):
    response = post_file(api, documents.png_page(), "page.png", HTTP_PREFER="respond-async")

    other = client_for(make_user("mallory"))
    assert other.get(f"/v1/jobs/{response.json()['data']['jobId']}").status_code == 404


@without_worker
@pytest.mark.parametrize(
    ("asked", "status"), [(True, Job.Status.CANCELLED), (False, Job.Status.QUEUED)]
)
def test_a_stream_client_that_leaves_cancels_the_job_only_if_it_asked_to(make_user, asked, status):
    # Inside the test's transaction nothing is sent to a queue: the job stays unfinished.
    job = services.job_submit(owner=make_user(), data=documents.png_page(), filename="page.png")
    options = ReaderOptions(timeout=1, response_format="sse", cancel_on_disconnect=asked)
    frames = event_frames(
        job=job, source=Source(data=b"", filename="page.png", url=""), options=options
    )

    next(frames)  # the stream has started…
    frames.close()  # …and the client hangs up (the server closes the response's iterator)

    job.refresh_from_db()
    assert job.status == status


def test_the_disconnect_option_is_read_from_its_header():
    from django.test import RequestFactory

    request = RequestFactory().post("/", HTTP_X_CANCEL_ON_DISCONNECT="true")

    assert reader_options(request, body={}, url=None).cancel_on_disconnect
