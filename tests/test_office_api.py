"""Office, OpenDocument, web, text and e-book documents end to end: through the jobs API, the
Reader endpoint and the OpenAI endpoint, real Redis and real worker processes; every unit (a
slide, a sheet, a part of the text, an e-book page) is a page row and a task."""

from __future__ import annotations

import base64
import io
import shutil
import time
from pathlib import Path

import openai
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from tests import office
from tests.conftest import wait_for_job
from webapp.accounts.services import api_key_create
from webapp.jobs.models import Page

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not office.CORPUS.is_dir(), reason=office.CORPUS_MISSING),
]


def submit(client, data: bytes, name: str, **fields):
    upload = SimpleUploadedFile(name, data)
    return client.post("/v1/jobs", {"file": upload, **fields}, format="multipart")


def finished(client, data: bytes, name: str, **fields) -> tuple[dict, list[dict]]:
    response = submit(client, data, name, **fields)
    assert response.status_code == 202, response.content
    # Each worker process imports docling on its first structured page: seconds on a busy host.
    job = wait_for_job(client, response.json()["id"], timeout=300)
    pages = client.get(f"/v1/jobs/{job['id']}/result", HTTP_ACCEPT="application/json")
    return job, pages.json()["pages"]


def test_each_slide_of_a_deck_is_a_page_read_from_its_structure(api, worker):
    job, pages = finished(api, office.corpus("pptx/sources/powerpoint_sample.pptx"), "deck.pptx")

    assert job["status"] == "succeeded"
    assert job["document"]["page_count"] == 3 == len(pages)
    assert Page.objects.filter(job_id=job["id"]).count() == 3
    assert pages[0]["markdown"].startswith("# Test Table Slide")
    assert pages[1]["markdown"].startswith("# Second slide title")
    assert {page["method"] for page in job["pages"]} == {"structure"}


def test_a_selected_sheet_of_a_workbook_is_read_alone(api, worker):
    job, pages = finished(api, office.corpus("xlsx/sources/xlsx_01.xlsx"), "book.xlsx", pages="2")

    assert job["status"] == "succeeded"
    assert len(pages) == 1 and pages[0]["number"] == 2
    assert "col-1" in pages[0]["markdown"]


def test_a_word_file_with_macros_is_read_as_data(api, worker):
    job, pages = finished(api, office.macro_docm(), "macros.docm")

    assert job["status"] == "succeeded", job["pages"]
    assert job["document"]["mime_type"] == "application/vnd.ms-word.document.macroEnabled.12"
    assert "Lorem ipsum" in pages[0]["markdown"]
    assert "AutoOpen" not in pages[0]["markdown"]
    assert not Path("/tmp/x").exists()


def test_an_epub_is_laid_out_into_pages_the_engine_reads(api, worker):
    job, pages = finished(api, office.epub(chapters=2), "book.epub")

    assert job["status"] == "succeeded", job["pages"]
    assert len(pages) == 2
    assert "Chapter 2" in pages[1]["markdown"]


def test_markdown_sent_to_the_reader_comes_back_normalized(api, worker):
    upload = SimpleUploadedFile("notes.md", b"# Notes\r\n\r\n\r\n- one\r\n- two   \r\n")
    response = api.post("/", {"file": upload}, format="multipart", HTTP_ACCEPT="application/json")

    assert response.status_code == 200, response.content
    assert response.json()["data"]["content"].strip() == "# Notes\n\n- one\n- two"


def test_the_reader_adds_speaker_notes_and_comments_when_its_headers_or_body_ask(api, worker):
    deck = office.corpus("pptx/sources/powerpoint_sample.pptx")
    commented = office.corpus("docx/sources/docx_comments.docx")

    def read(data: bytes, name: str, **headers) -> str:
        upload = SimpleUploadedFile(name, data)
        response = api.post(
            "/", {"file": upload}, format="multipart", HTTP_ACCEPT="application/json", **headers
        )
        assert response.status_code == 200, response.content
        return response.json()["data"]["content"]

    noted = read(deck, "deck.pptx", HTTP_X_FOLIO_SPEAKER_NOTES="true", HTTP_X_TIMEOUT="180")
    plain = read(deck, "deck.pptx", HTTP_X_TIMEOUT="180")
    with_comments = read(commented, "commented.docx", HTTP_X_FOLIO_COMMENTS="true")
    body = api.post(
        "/",
        {"pdf": base64.b64encode(commented).decode(), "comments": True, "timeout": 180},
        format="json",
        HTTP_ACCEPT="application/json",
    )

    assert "*Speaker notes:* Some notes on the second slide." in noted
    assert "Speaker notes" not in plain
    assert "[author: John Reviewer (JR)" in with_comments
    assert body.status_code == 200, body.content
    assert "[author: John Reviewer (JR)" in body.json()["data"]["content"]


def test_a_hostile_office_file_is_refused_by_the_reader_too(api):
    upload = SimpleUploadedFile("lol.docx", office.entity_expansion_docx())
    response = api.post("/", {"file": upload}, format="multipart", HTTP_ACCEPT="application/json")

    assert response.status_code == 422
    assert "DTD" in response.json()["message"]


def test_a_word_file_in_a_chat_data_url_is_read(live_server, make_user, worker):
    key = api_key_create(user=make_user("alice")).secret
    client = openai.OpenAI(
        base_url=f"{live_server.url}/v1", api_key=key, max_retries=0, timeout=120
    )
    data = base64.b64encode(office.corpus("docx/sources/word_tables.docx")).decode()
    url = f"data:application/octet-stream;base64,{data}"  # the bytes decide, not the label

    completion = client.chat.completions.create(
        model="local",
        messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}],
    )

    text = completion.choices[0].message.content
    assert "## Test with tables" in text and "| Header 0.0 |" in text


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is not installed")
def test_a_slide_is_shown_beside_its_text_as_drawn_by_libreoffice_in_the_worker(
    api, worker, client, django_user_model
):
    job, pages = finished(api, office.corpus("pptx/sources/powerpoint_sample.pptx"), "deck.pptx")
    assert job["status"] == "succeeded"
    client.force_login(django_user_model.objects.get(username="alice"))

    image = wait_for_image(client, f"/jobs/{job['id']}/pages/2/image")
    detail = client.get(f"/jobs/{job['id']}/")

    with Image.open(io.BytesIO(image)) as drawn:
        assert abs(drawn.width / drawn.height - 16 / 9) < 0.02  # the slide, not an A4 page
    assert f"/jobs/{job['id']}/pages/2/image" in detail.content.decode()
    # The page's box is the slide as drawn (16:9 at 960 x 540 points), not the nominal A4
    # page a structured page is saved with; its one block covers it.
    blocks = api.get(f"/v1/jobs/{job['id']}/result?format=blocks").json()["pages"][1]
    assert (blocks["width"], blocks["height"]) == pytest.approx((960, 540), abs=0.1)
    assert blocks["source"] == "page"
    assert blocks["blocks"][0]["bbox"] == [0.0, 0.0, blocks["width"], blocks["height"]]


def wait_for_image(client, url: str, timeout: float = 120) -> bytes:
    """The page image once drawn: the worker draws an Office page after saving its text, and
    the viewer's URL answers 202 until then."""
    deadline = time.monotonic() + timeout
    while (answer := client.get(url)).status_code == 202 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert answer.status_code == 200 and answer["Content-Type"] == "image/webp", answer
    return b"".join(answer.streaming_content)


def test_speaker_notes_are_an_option_off_by_default_and_not_served_from_the_cache(api, worker):
    deck = office.corpus("pptx/sources/powerpoint_sample.pptx")

    job, with_notes = finished(api, deck, "deck.pptx", speaker_notes="true")
    again, without = finished(api, deck, "deck.pptx")

    assert job["status"] == again["status"] == "succeeded"
    assert "*Speaker notes:* Some notes on the second slide." in with_notes[1]["markdown"]
    assert "Speaker notes" not in without[1]["markdown"]
    assert without[1]["markdown"].startswith("# Second slide title")


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is not installed")
def test_an_office_page_answered_from_the_cache_is_drawn_when_the_viewer_asks(
    api, worker, client, django_user_model
):
    deck = office.corpus("pptx/sources/powerpoint_comments.pptx")
    finished(api, deck, "deck.pptx")
    again, _ = finished(api, deck, "deck.pptx")
    assert {page["method"] for page in again["pages"]} == {"cache"}  # no worker read them
    client.force_login(django_user_model.objects.get(username="alice"))
    url = f"/jobs/{again['id']}/pages/2/image"

    assert client.get(url).status_code == 202  # asked for; a worker draws it
    with Image.open(io.BytesIO(wait_for_image(client, url))) as drawn:
        assert abs(drawn.width / drawn.height - 4 / 3) < 0.02  # this deck's 4:3 slides

    drawn_layout = Page.objects.get(job_id=again["id"], number=2).layout
    assert (drawn_layout["width"], drawn_layout["height"]) == pytest.approx((720, 540), abs=0.1)
    # The cached copy takes the drawn size too: the next job answered from it has it at once.
    third, _ = finished(api, deck, "deck.pptx")
    assert Page.objects.get(job_id=third["id"], number=2).layout == drawn_layout
