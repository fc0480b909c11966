"""The hostile corpus (``tests/hostile.py``) through the jobs and Reader APIs: each document
gets a 4xx with a clear message or a sanitized result, nothing half-written is left behind,
and the service answers its health check afterwards."""

from __future__ import annotations

import io
import json
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from tests import documents, hostile, hostile_office, office
from tests.conftest import wait_for_job
from webapp.jobs.models import Document, Job, Page
from webapp.jobs.services import figure_storage_name

pytestmark = pytest.mark.django_db


@pytest.fixture
def decoded(monkeypatch):
    """The images the web process decodes and the pages it draws: every refusal is decided
    from headers and page trees, so a hostile file costs it next to nothing."""
    import pymupdf
    from PIL import ImageFile

    seen: list[str] = []
    real_load, real_pixmap = ImageFile.ImageFile.load, pymupdf.Page.get_pixmap
    monkeypatch.setattr(
        ImageFile.ImageFile, "load", lambda image: seen.append("image") or real_load(image)
    )
    monkeypatch.setattr(
        pymupdf.Page,
        "get_pixmap",
        lambda page, *a, **k: seen.append("page") or real_pixmap(page, *a, **k),
    )
    return seen


REFUSED = {
    "zero bytes": (hostile.zero_bytes, "empty.pdf", 400, 40001, "empty"),
    "a pdf cut after its header": (hostile.header_only_pdf, "cut.pdf", 422, 42206, "damaged"),
    "a corrupt pdf": (hostile.corrupt_pdf, "broken.pdf", 422, 42206, "damaged"),
    "an encrypted pdf": (hostile.encrypted_pdf, "locked.pdf", 422, 42206, "password"),
    "a program named .pdf": (documents.non_document, "report.pdf", 400, 40001, "PDF, PNG"),
    "a zip bomb in a docx": (office.zip_bomb_docx, "bomb.docx", 413, 41302, "zip bomb"),
    "entity expansion in a docx": (office.entity_expansion_docx, "lol.docx", 422, 42206, "DTD"),
    "a remote template": (office.remote_template_docx, "t.docx", 422, 42206, "template"),
    "an external workbook": (office.ole_link_xlsx, "l.xlsx", 422, 42206, "outside workbook"),
    "an absurd sheet": (office.absurd_sheet_xlsx, "s.xlsx", 413, 41302, "cells a sheet"),
    "a 20,000 x 20,000 px page": (hostile.huge_page_png, "big.png", 413, 41302, "megapixels"),
    "a decompression bomb": (hostile.decompression_bomb_png, "bomb.png", 413, 41302, "megapixels"),
    "a 10,000-page pdf": (hostile.many_pages_pdf, "many.pdf", 413, 41302, "10000 pages selected"),
}


def post_jobs(client, data: bytes, name: str, **fields):
    upload = SimpleUploadedFile(name, data)
    return client.post("/v1/jobs", {"file": upload, **fields}, format="multipart")


def post_reader(client, data: bytes, name: str, **fields):
    upload = SimpleUploadedFile(name, data)
    return client.post(
        "/", {"file": upload, **fields}, format="multipart", HTTP_ACCEPT="application/json"
    )


ENDPOINTS = {"jobs API": post_jobs, "Reader API": post_reader}


def assert_healthy(client) -> None:
    assert client.get("/healthz").status_code == 200
    assert post_jobs(client, documents.png_page(), "fine.png").status_code == 202


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("case", REFUSED)
def test_a_hostile_document_is_refused_with_a_clear_4xx_and_nothing_is_left(
    api, case, endpoint, decoded
):
    make, name, status, detail, words = REFUSED[case]
    data = make()

    response = ENDPOINTS[endpoint](api, data, name)

    assert response.status_code == status, response.content
    body = response.json()
    assert (body["code"], body["status"], body["data"]) == (status, detail, None)
    assert words in body["message"], body["message"]
    assert decoded == []  # no pixel decoded, no page drawn
    assert not Job.objects.exists() and not Document.objects.exists()
    assert_healthy(api)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_workbook_past_the_pages_a_job_may_take_is_a_413_naming_them(api, endpoint):
    """The count of a sheet stops where it passes FOLIO_MAX_PAGES (here 4, so 1,000 rows):
    a sheet of any length costs the web process that many rows."""
    data = hostile_office.xlsx_rows_without_references(2_000)

    with override_settings(FOLIO_MAX_PAGES=4):
        response = ENDPOINTS[endpoint](api, data, "long.xlsx")

    assert response.status_code == 413, response.content
    assert response.json()["status"] == 41302
    assert "past row 1,000" in response.json()["message"]
    assert not Job.objects.exists() and not Document.objects.exists()


def test_a_ten_thousand_page_pdf_is_taken_when_pages_selects_a_few(api):
    response = post_jobs(api, hostile.many_pages_pdf(), "many.pdf", pages="1,5000,9998-10000")

    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.document.page_count == 10_000
    assert sorted(job.pages.values_list("number", flat=True)) == [1, 5000, 9998, 9999, 10000]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_an_upload_over_the_size_limit_is_a_413_saying_the_limit(api, endpoint):
    with override_settings(FOLIO_MAX_UPLOAD_BYTES=10_000):
        response = ENDPOINTS[endpoint](api, documents.png_page(), "page.png")

    assert response.status_code == 413, response.content
    assert response.json()["status"] == 41302
    assert "10,000" in response.json()["message"]
    assert not Document.objects.exists()
    assert_healthy(api)


def test_a_json_body_over_the_request_size_limit_is_a_413_in_the_api_shape(api):
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10_000):
        response = api.post(
            "/",
            {"file": "A" * 20_000},
            format="json",
            HTTP_ACCEPT="application/json",
        )

    assert response.status_code == 413, response.content
    assert response.json()["status"] == 41302
    assert "multipart" in response.json()["message"]
    assert_healthy(api)


@pytest.mark.parametrize(
    "name", hostile.HOSTILE_FILENAMES, ids=range(len(hostile.HOSTILE_FILENAMES))
)
def test_a_hostile_file_name_is_stored_sanitized_and_never_used_as_a_path(api, name):
    # Built by hand: Django's test client would take the base name itself, and the point is
    # what the server does with the name a client really sends.
    body, content_type = multipart_with_name(name)

    response = api.post("/v1/jobs", body, content_type=content_type)

    assert response.status_code == 202, response.content
    shown = response.json()["document"]["name"]
    assert shown and len(shown) <= 200
    assert not set(shown) & set("/\\\x00\r\n\x1b\x07")
    assert not shown.startswith(".")
    document = Document.objects.get()
    stored = Path(settings.MEDIA_ROOT, document.file.name).resolve()
    assert stored.is_relative_to(Path(settings.MEDIA_ROOT).resolve() / "documents")
    assert stored.stem == document.sha256  # the content decides where it lives, not the name


def multipart_with_name(name: str) -> tuple[bytes, str]:
    """A multipart body whose file part carries ``name`` exactly as given, and its type."""
    boundary = uuid.uuid4().hex
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    )
    tail = f"\r\n--{boundary}--\r\n"
    body = head.encode() + documents.png_page() + tail.encode()
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize("name", hostile.UNREADABLE_FILENAMES, ids=["5,000 characters", "empty"])
def test_a_file_name_the_parser_cannot_take_is_a_clear_400(api, name):
    body, content_type = multipart_with_name(name)

    response = api.post("/v1/jobs", body, content_type=content_type)

    assert response.status_code == 400, response.content
    assert response.json()["status"] == 40001
    assert response.json()["message"]
    assert not Document.objects.exists()


@pytest.mark.parametrize(
    ("make", "name", "mime_type"),
    [
        (hostile.polyglot_png_html, "page.html", "image/png"),
        (lambda: hostile.png_named_exe()[1], "setup.exe", "image/png"),
        (lambda: hostile.html_named_pdf()[1], "report.pdf", "text/html"),
    ],
    ids=["a png that is also html", "a png named .exe", "html named .pdf"],
)
def test_a_polyglot_or_a_lying_extension_is_read_as_what_its_bytes_are(api, make, name, mime_type):
    response = post_jobs(api, make(), name)

    assert response.status_code == 202, response.content
    assert response.json()["document"]["mime_type"] == mime_type
    assert response.json()["document"]["page_count"] == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_markup_in_a_document_comes_back_as_inert_markdown_text(api, worker):
    job_id = post_jobs(api, hostile.markup_pdf(), "markup.pdf").json()["id"]
    assert wait_for_job(api, job_id)["status"] == "succeeded"

    result = api.get(f"/v1/jobs/{job_id}/result", HTTP_ACCEPT="text/markdown")

    assert result["Content-Type"] == "text/markdown; charset=utf-8"
    assert result["X-Content-Type-Options"] == "nosniff"
    assert "Injected text follows" in result.content.decode()
    # As JSON the same text is a string value, never markup a browser would render.
    pages = api.get(f"/v1/jobs/{job_id}/result", HTTP_ACCEPT="application/json")
    assert pages["Content-Type"].startswith("application/json")
    assert pages["X-Content-Type-Options"] == "nosniff"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_truncated_pdf_reaches_a_final_state_and_each_failed_page_says_why(api, worker):
    response = post_jobs(api, hostile.truncated_pdf(), "truncated.pdf")
    assert response.status_code in (202, 422), response.content
    if response.status_code == 422:
        return  # refused outright is also a clear answer

    job = wait_for_job(api, response.json()["id"])

    assert job["status"] in ("succeeded", "partially_failed", "failed")
    assert all(page["error"] for page in job["pages"] if page["status"] == "failed")
    assert Page.objects.filter(job_id=job["id"], status__in=("queued", "running")).count() == 0


class CountingStream(io.RawIOBase):
    """A request body that counts what the server reads of it."""

    def __init__(self, data: bytes):
        self.data, self.position = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self.data[self.position : self.position + len(buffer)]
        buffer[: len(chunk)] = chunk
        self.position += len(chunk)
        return len(chunk)


def wsgi_post(path: str, body: io.RawIOBase, *, length: int, content_type: str, key: str = ""):
    """A POST through the test client's WSGI handler with an environ of our own: the test
    client would set Content-Length from the body it holds, and here the header is the point."""
    from django.test.client import ClientHandler

    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
        "SERVER_NAME": "testserver", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": content_type, "CONTENT_LENGTH": str(length),
        "HTTP_ACCEPT": "application/json", "wsgi.input": io.BufferedReader(body),
        "wsgi.url_scheme": "http", "wsgi.errors": io.StringIO(), "wsgi.version": (1, 0),
        "wsgi.multithread": False, "wsgi.multiprocess": False, "wsgi.run_once": False,
    }  # fmt: skip
    if key:
        environ["HTTP_AUTHORIZATION"] = key
    response = ClientHandler()(environ)
    return response.status_code, response.content


@pytest.mark.parametrize("path", ["/v1/jobs", "/", "/jobs/new/"])
def test_an_upload_whose_length_is_over_the_limit_is_refused_before_its_body_is_read(api, path):
    body = CountingStream(b"x" * 1000)
    status, content = wsgi_post(
        path,
        body,
        length=600 * 1024 * 1024,
        content_type="multipart/form-data; boundary=x",
        key=api._credentials["HTTP_AUTHORIZATION"],
    )

    assert status == 413, content
    assert body.position == 0
    assert f"{settings.FOLIO_MAX_UPLOAD_BYTES:,}".encode() in content
    assert not Document.objects.exists()


def test_a_file_part_over_the_limit_stops_the_upload_where_it_passes_the_limit(api):
    """A body inside the header's bound may still carry a file over the limit: the parse
    stops at the limit (and one chunk), it does not store the rest first."""
    boundary = uuid.uuid4().hex
    data = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + documents.png_page()
        + b"\x00" * 800_000
        + f"\r\n--{boundary}--\r\n".encode()
    )
    body = CountingStream(data)

    with override_settings(FOLIO_MAX_UPLOAD_BYTES=100_000):
        status, content = wsgi_post(
            "/v1/jobs",
            body,
            length=len(data),
            content_type=f"multipart/form-data; boundary={boundary}",
            key=api._credentials["HTTP_AUTHORIZATION"],
        )

    assert status == 413, content
    assert json.loads(content)["status"] == 41302
    assert b"100,000" in content
    assert body.position < 100_000 + 2 * 64 * 1024  # the limit, and the parser's chunks
    assert not Document.objects.exists()


# --- malformed requests: a clear 4xx, never a 500 -------------------------------------------

UNFETCHABLE_URLS = {
    "octal address": "http://0177.0.0.1/a.pdf",
    "leading zeros": "http://127.000.000.001/a.pdf",
    "full-width digits": "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/a.pdf",
    "a 100 KB url": "http://example.com/" + "a" * 100_000,
    "broken brackets": "http://[::1/a.pdf",
}


@pytest.mark.parametrize("url", UNFETCHABLE_URLS.values(), ids=UNFETCHABLE_URLS)
def test_a_url_the_http_client_rejects_is_a_4xx_saying_why(api, url):
    response = api.post("/", {"url": url}, format="json", HTTP_ACCEPT="application/json")

    assert 400 <= response.status_code < 500, response.content
    assert response.json()["message"]
    assert not Job.objects.exists()


def test_a_job_list_page_past_any_integer_is_a_400(api):
    response = api.get("/v1/jobs", {"page": "99999999999999999999"})

    assert response.status_code == 400, response.content
    assert "page" in response.json()["message"]


@pytest.mark.parametrize("name", [".", "..", ".hidden"])
def test_a_figure_name_that_is_a_folder_is_a_404(api, name):
    job_id = post_jobs(api, documents.png_page(), "p.png").json()["id"]
    # A job with a figure: its folder, and the folder above it, exist.
    default_storage.save(
        figure_storage_name(job_id=uuid.UUID(job_id), name="figure-1.png"),
        ContentFile(documents.png_page()),
    )

    response = api.get(f"/v1/jobs/{job_id}/figures/{name}")

    assert response.status_code == 404, response.content


# --- a page whose drawing never ends -----------------------------------------------------
# docs/RELIABILITY.md: the web process never draws a page; workers draw in a child process
# with a wall-clock limit; a page stopped by a limit fails at once, unretried.


def test_the_fan_out_pdf_is_small_and_its_drawing_fans_out():
    data = hostile.fan_out_pdf()
    assert len(data) < 2500
    assert data.count(b"/F Do") == 7 * 10 + 1  # 10^8 rectangles from 71 calls


def test_the_web_process_never_draws_a_page_image_it_answers_202_until_a_worker_has(
    api, client, decoded
):
    response = post_jobs(api, hostile.fan_out_pdf(), "fan-out.pdf")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    client.force_login(job.owner)

    image = client.get(f"/jobs/{job.pk}/pages/1/image")
    listed = api.get("/v1/jobs")

    assert (image.status_code, listed.status_code) == (202, 200)
    assert image["Retry-After"] and b"Not drawn yet" in image.content
    assert decoded == []  # the page whose drawing never ends was never drawn here


def test_a_page_image_is_served_as_the_worker_stored_it_and_a_failed_page_has_none(api, client):
    from model.page_images import PageImage
    from webapp.jobs import services as job_services

    job = Job.objects.get(pk=post_jobs(api, documents.png_page(), "p.png").json()["id"])
    client.force_login(job.owner)
    job_services.page_images_save(job_id=job.pk, number=1, image=PageImage(webp=b"page-webp"))

    image = client.get(f"/jobs/{job.pk}/pages/1/image")
    assert (image.status_code, image["Content-Type"]) == (200, "image/webp")
    assert b"".join(image.streaming_content) == b"page-webp"

    other = Job.objects.get(pk=post_jobs(api, hostile.fan_out_pdf(), "f.pdf").json()["id"])
    Page.objects.filter(job=other).update(status=Page.Status.FAILED, error="too complex")
    assert client.get(f"/jobs/{other.pk}/pages/1/image").status_code == 404


# --- long synchronous work on the web threads -----------------------------------------------


def test_a_two_thousand_frame_tiff_is_counted_from_its_headers_never_decoded(
    api, monkeypatch, decoded
):
    """The web process counts the frames and checks each one's size; decoding a frame is a
    worker's job, one page at a time under its time limit."""
    from PIL import TiffImagePlugin

    sized = []
    real_seek = TiffImagePlugin.TiffImageFile.seek
    monkeypatch.setattr(
        TiffImagePlugin.TiffImageFile,
        "seek",
        lambda image, frame: sized.append(frame) or real_seek(image, frame),
    )

    response = post_jobs(api, hostile.many_frames_tiff(), "scan.tiff", pages="1-3")

    assert response.status_code == 202, response.content
    assert response.json()["document"]["page_count"] == 2000
    assert decoded == []  # no frame decoded
    assert set(range(2000)) <= set(sized)  # each frame's header read, for its size


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
# The jobs go to an engine whose queue no worker reads: this module's worker (started by an
# earlier test) would otherwise finish the first job before its time is out.
@override_settings(FOLIO_READER_WAITERS=1, FOLIO_DEFAULT_ENGINE="fault-stuck")
def test_a_reader_request_beyond_the_waiters_cap_answers_at_once_with_its_poll_link(
    api, monkeypatch
):
    """Waiting holds a web thread: past FOLIO_READER_WAITERS waiters a request answers as if
    its time had run out, a 202 with its poll link, and the threads left answer everyone."""

    from tests.fault_engines import extra_engines_value

    monkeypatch.setenv("FOLIO_EXTRA_ENGINES", extra_engines_value())

    from django.contrib.auth.models import User
    from django.db import connection

    from tests.conftest import client_for

    waiter, first = client_for(User.objects.get(username="alice")), {}

    def wait_for_a_job_no_worker_reads():
        first["response"] = waiter.post(
            "/",
            {"file": SimpleUploadedFile("a.png", documents.png_page())},
            format="multipart",
            HTTP_ACCEPT="application/json",
            HTTP_X_TIMEOUT="4",
        )
        connection.close()

    thread = threading.Thread(target=wait_for_a_job_no_worker_reads)
    thread.start()
    deadline = time.monotonic() + 10
    while not Job.objects.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # past its submission: it is waiting now

    second = api.post(
        "/",
        {"file": SimpleUploadedFile("b.png", documents.png_page())},
        format="multipart",
        HTTP_ACCEPT="application/json",
        HTTP_X_TIMEOUT="4",
    )
    listed = api.get("/v1/jobs")
    first_answered = "response" in first
    thread.join(timeout=20)

    assert second.status_code == 202, second.content
    assert listed.status_code == 200
    # The second answered while the first, which came before it and waits as long, still
    # waited: it did not wait its time. The first had the slot and waited its own out.
    assert not first_answered, "the second request waited for its time out"
    assert first["response"].status_code == 202


@override_settings(FOLIO_READER_WAITERS=1)
def test_an_event_stream_holds_its_waiting_slot_until_it_is_closed(api):
    from webapp.jobs.waiting import WaiterSlot

    stream = api.post(
        "/",
        {"file": SimpleUploadedFile("a.png", documents.png_page())},
        format="multipart",
        HTTP_ACCEPT="text/event-stream",
    )
    assert stream.status_code == 200 and stream.streaming
    with WaiterSlot() as meanwhile:
        assert not meanwhile.taken

    stream.close()  # the client went away before the first frame

    with WaiterSlot() as afterwards:
        assert afterwards.taken


def test_a_finished_page_without_an_image_is_drawn_by_a_worker_on_request(api, client):
    """A page answered from the result cache never reached a worker: the viewer's request
    asks one to draw it (once a minute at most), and the image is then served as stored."""
    from ocr_worker.tasks import render_page_image

    job = Job.objects.get(pk=post_jobs(api, documents.born_digital_pdf(), "r.pdf").json()["id"])
    Page.objects.filter(job=job, number=1).update(status=Page.Status.SUCCEEDED)
    client.force_login(job.owner)

    asked = client.get(f"/jobs/{job.pk}/pages/1/image")
    assert asked.status_code == 202 and b"being drawn" in asked.content

    assert render_page_image(str(job.pk), 1) == "drawn"  # what the worker runs
    image = client.get(f"/jobs/{job.pk}/pages/1/image")

    assert image.status_code == 200
    webp = b"".join(image.streaming_content)
    assert webp[:4] == b"RIFF" and webp[8:12] == b"WEBP"
