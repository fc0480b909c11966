"""Queue honesty: no job waits for an engine that no live worker serves.

The workers are real (or really absent): which engines are served is read from the heartbeats
they write in the broker, as the service reads it. The suite runs with
FOLIO_REFUSE_UNSERVED_ENGINES=0 (most tests submit with no worker running); these tests turn
the check on.
"""

from __future__ import annotations

import base64
import time
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.utils import timezone

from folio_client.cli import main
from ocr_worker.tasks import reap_pages
from tests import documents
from tests.conftest import wait_for_job
from tests.workers import WorkerProcess, forget_heartbeats, purge_queues
from webapp.core.workers import serving_engines
from webapp.jobs import engine_waits
from webapp.jobs.models import Job, Page

refusing = override_settings(FOLIO_REFUSE_UNSERVED_ENGINES=True)
LIMIT = timedelta(seconds=900)


def upload(data: bytes | None = None, name: str = "report.pdf") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data or documents.born_digital_pdf())


def chat_body(model: str) -> dict:
    pdf = base64.b64encode(documents.born_digital_pdf()).decode()
    part = {"type": "image_url", "image_url": {"url": f"data:application/pdf;base64,{pdf}"}}
    return {"model": model, "messages": [{"role": "user", "content": [part]}]}


@pytest.mark.django_db
def test_a_job_for_an_engine_no_worker_serves_is_refused_on_every_api(api):
    assert serving_engines(fresh=True) == set()  # no worker runs in this test

    with refusing:
        named = api.post("/v1/jobs", {"file": upload(), "engine": "jina-ocr-v1"})
        default = api.post("/v1/jobs", {"file": upload()})
        reader = api.post("/", {"file": upload()}, format="multipart")
        chat = api.post("/v1/chat/completions", chat_body("local"), format="json")

    for answer in (named, default, reader):
        assert answer.status_code == 400, answer.content
        assert "no worker serves the engine" in answer.json()["message"]
        assert "engines served now: none" in answer.json()["message"]
    assert "'jina-ocr-v1'" in named.json()["message"]
    assert chat.status_code == 404
    assert chat.json()["error"]["code"] == "model_not_found"
    assert "engines served now: none" in chat.json()["error"]["message"]
    assert not Job.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_cli_exits_with_the_reason_instead_of_waiting(live_server, make_user, tmp_path, capsys):
    from webapp.accounts.services import api_key_create

    key = api_key_create(user=make_user("alice")).secret
    (tmp_path / "paper.pdf").write_bytes(documents.born_digital_pdf())
    serving_engines(fresh=True)

    with refusing:
        code = main(
            ["convert", str(tmp_path / "paper.pdf"), "--engine", "jina-ocr-v1"]
            + ["--url", live_server.url, "--api-key", key]
        )

    assert code == 1
    out, err = capsys.readouterr()
    assert "no worker serves the engine 'jina-ocr-v1'" in out + err
    assert not Job.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_served_engine_is_taken_and_refused_once_its_workers_left(api):
    purge_queues("ocr.local", "folio")
    grace = 5  # FOLIO_WORKER_SEEN_SECONDS here; the worker beats every half second
    worker = WorkerProcess(concurrency=1, env={"FOLIO_WORKER_HEARTBEAT_SECONDS": "0.5"})
    with override_settings(FOLIO_WORKER_SEEN_SECONDS=grace), refusing:
        worker.start()
        try:
            assert "local" in serving_engines(fresh=True)
            accepted = api.post("/v1/jobs", {"file": upload(), "pages": "1"})
            assert accepted.status_code == 202, accepted.content
            assert wait_for_job(api, accepted.json()["id"])["status"] == "succeeded"
        finally:
            worker.stop(forget=False)

        # Gone a moment ago: within the grace period it still counts (a restart refuses
        # nothing); once the period has passed with no heartbeat, its engine is refused.
        left = time.monotonic()
        still = api.post("/v1/jobs", {"file": upload(documents.one_page_pdf()), "pages": "1"})
        if time.monotonic() - left < grace:  # a busy host may have taken longer than that
            assert still.status_code == 202, still.content
        time.sleep(max(0.0, grace + 0.5 - (time.monotonic() - left)))
        assert "local" not in serving_engines(fresh=True)
        refused = api.post("/v1/jobs", {"file": upload(), "pages": "1"})
    assert refused.status_code == 400
    assert (
        "no worker serves the engine 'local' now (none seen in the last 5 s)"
        in (refused.json()["message"])
    )
    forget_heartbeats(worker.name)


@pytest.mark.django_db
def test_a_job_whose_workers_left_says_so_and_fails_after_the_limit(api, client, make_user):
    # Queued while a worker served `local` (the check is off in this test); none runs now.
    response = api.post("/v1/jobs", {"file": upload()})
    job_id = response.json()["id"]
    assert response.json()["waiting_for"] is None

    with override_settings(FOLIO_ENGINE_WAIT_LIMIT=int(LIMIT.total_seconds())):
        reap_pages()  # what beat runs every minute: asks the workers, finds none for `local`
        waiting = api.get(f"/v1/jobs/{job_id}").json()
        assert waiting["status"] == "queued"
        assert waiting["waiting_for"]["engine"] == "local"
        fails_at = Job.objects.get(pk=job_id).waiting_since + LIMIT
        assert waiting["waiting_for"]["fails_at"].startswith(fails_at.strftime("%Y-%m-%dT%H:%M"))
        client.force_login(Job.objects.get(pk=job_id).owner)
        page = client.get(f"/jobs/{job_id}/").content.decode()
        assert "Waiting for a worker that serves local" in page

        # A worker for it comes back: the job no longer says it waits.
        engine_waits.jobs_waiting_for_engines(served={"local"}, limit=LIMIT)
        assert api.get(f"/v1/jobs/{job_id}").json()["waiting_for"] is None

        # It leaves again, and stays away past the limit.
        left = timezone.now()
        engine_waits.jobs_waiting_for_engines(served=set(), limit=LIMIT, now=left)
        before = engine_waits.jobs_waiting_for_engines(
            served=set(), limit=LIMIT, now=left + LIMIT - timedelta(seconds=1)
        )
        given_up = engine_waits.jobs_waiting_for_engines(
            served=set(), limit=LIMIT, now=left + LIMIT
        )

    assert (before, given_up) == (0, 1)
    failed = api.get(f"/v1/jobs/{job_id}").json()
    assert failed["status"] == "failed"
    assert "no worker served the engine 'local' for 900 s" in failed["error"]
    assert failed["waiting_for"] is None
    pages = Page.objects.filter(job_id=job_id)
    assert all(page.status == Page.Status.FAILED for page in pages)
    assert all("FOLIO_ENGINE_WAIT_LIMIT" in page.error for page in pages)


@pytest.mark.django_db
def test_the_workers_cannot_be_asked_and_nothing_changes(api):
    job_id = api.post("/v1/jobs", {"file": upload()}).json()["id"]

    assert engine_waits.jobs_waiting_for_engines(served=None, limit=timedelta(0)) == 0

    assert Job.objects.get(pk=job_id).waiting_for == ""


@pytest.mark.django_db
def test_the_readmes_first_example_runs_on_a_one_page_pdf(api):
    # `-F pages=1-3` on a one-page paper: the range is clamped to the last page.
    response = api.post("/v1/jobs", {"file": upload(documents.one_page_pdf()), "pages": "1-3"})

    assert response.status_code == 202, response.content
    assert response.json()["progress"]["total"] == 1
    assert response.json()["page_selection"] == "1-3"
