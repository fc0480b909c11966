"""Quality through the service: pages carry their signals and needs_review in the jobs API
and webhooks, and the output options reach the job, the Reader and the cache key."""

from __future__ import annotations

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests import documents
from tests.conftest import wait_for_job
from webapp.jobs import services
from webapp.jobs.models import Job
from webapp.webhooks import services as webhook_services

with_worker = pytest.mark.django_db(transaction=True)
without_worker = pytest.mark.django_db


def _text_and_ink_pdf() -> bytes:
    """Page 1: ordinary text. Page 2: ink and nothing to read (a black box), which the local
    engine transcribes as nothing: a page a person should look at."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "The river rose four metres in the spring flood.")
    doc.new_page().draw_rect(pymupdf.Rect(100, 100, 500, 700), color=(0, 0, 0), fill=(0, 0, 0))
    return doc.tobytes()


def submit(client, data: bytes, name: str, **fields):
    return client.post(
        "/v1/jobs", {"file": SimpleUploadedFile(name, data), **fields}, format="multipart"
    )


@pytest.mark.slow
@with_worker
def test_a_page_with_ink_and_no_text_needs_review_in_the_api_and_the_webhook(api, worker):
    response = submit(api, _text_and_ink_pdf(), "two.pdf")
    assert response.status_code == 202, response.content
    job = wait_for_job(api, response.json()["id"])

    assert job["status"] == "succeeded"
    assert job["review"] == {"pages_needing_review": 1, "pages": [2], "unread_script_pages": []}
    first, second = job["pages"]
    assert first["needs_review"] is False
    assert first["quality"]["signals"]["empty"]["ok"] is True
    assert second["needs_review"] is True
    assert second["quality"]["reasons"][0].startswith("empty:")
    listed = api.get("/v1/jobs").json()
    summary = next(item for item in listed["results"] if item["id"] == job["id"])
    assert summary["review"] == {"pages_needing_review": 1}
    payload = webhook_services.job_event_data(job=Job.objects.get(pk=job["id"]))
    assert payload["review"] == {"pages_needing_review": 1, "pages": [2]}


@without_worker
def test_output_options_are_stored_on_the_job_and_part_of_the_cache_key(api):
    response = submit(
        api, documents.born_digital_pdf(), "a.pdf", headers="keep", normalize="ligatures"
    )
    assert response.status_code == 202, response.content
    assert (
        response.json()["options"] | {"headers": "keep", "normalize": "ligatures"}
        == (response.json()["options"])
    )
    keys = {
        repr(sorted(services.JobOptions.parse(**kwargs).output_options().items()))
        for kwargs in (
            {},
            {"headers": "keep"},
            {"normalize": "all"},
            {"normalize": "ligatures"},
            {"table_format": "html"},
        )
    }
    assert len(keys) == 5


@without_worker
def test_tables_default_to_auto_in_the_api_the_upload_form_and_the_engine(api):
    # auto measured best (docs/QUALITY.md): pipe tables, HTML only where cells merge.
    from model.engines.base import EngineOptions
    from webapp.ui.forms import UploadForm

    response = submit(api, documents.born_digital_pdf(), "a.pdf")
    assert response.status_code == 202, response.content
    assert response.json()["options"]["table_format"] == "auto"
    form = UploadForm(engines=["local"], default_engine="local")
    assert form["table_format"].initial == "auto"
    assert EngineOptions().table_format == services.JobOptions().table_format == "auto"


@without_worker
def test_the_upload_form_offers_the_servers_table_format(settings):
    from webapp.ui.forms import UploadForm

    settings.FOLIO_TABLE_FORMAT = "html"
    assert UploadForm(engines=["local"], default_engine="local")["table_format"].initial == "html"


@without_worker
def test_a_job_without_output_options_gets_the_server_defaults(api, settings):
    settings.FOLIO_HEADERS = "keep"
    settings.FOLIO_NORMALIZE = "whitespace"
    response = submit(api, documents.born_digital_pdf(), "a.pdf")
    assert response.status_code == 202, response.content
    options = response.json()["options"]
    assert (options["headers"], options["normalize"]) == ("keep", "whitespace")


@without_worker
@pytest.mark.parametrize("fields", [{"normalize": "spelling"}, {"headers": "sometimes"}])
def test_an_unknown_output_option_is_refused(api, fields):
    response = submit(api, documents.born_digital_pdf(), "a.pdf", **fields)
    assert response.status_code == 400


@without_worker
def test_the_reader_refuses_an_unknown_folio_normalize_header(api):
    response = api.post(
        "/",
        {"file": SimpleUploadedFile("a.pdf", documents.born_digital_pdf())},
        format="multipart",
        HTTP_X_FOLIO_NORMALIZE="spelling",
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 400
    assert response.json()["status"] == 40001
