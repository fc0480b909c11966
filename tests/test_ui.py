"""The browser interface, in a real browser (Playwright driving Debian's chromium) against a
live server and real worker processes; plus the HTML renderer and routing without a browser."""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from django.test import override_settings

from tests import documents
from tests.receiver import Receiver
from tests.workers import WorkerProcess, purge_queues
from webapp.jobs import services as job_services
from webapp.jobs.models import Job
from webapp.ui.markdown import markdown_html

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[1] / "test-output" / "ui"
PASSWORD = "a long and unusual passphrase 7"
DESKTOP = {"width": 1280, "height": 900}
NARROW = {"width": 390, "height": 844}
LOCAL = override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"])

# The live server and the worker processes must see what the test commits.
with_live_server = pytest.mark.django_db(transaction=True)
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is missing")


# --- without a browser ---------------------------------------------------------------------


def test_a_documents_html_is_shown_as_text_and_its_tables_and_formulas_are_kept():
    html = markdown_html(
        "# Title\n\n<script>alert(1)</script>\n\nSee <img src=x onerror=alert(2)> here.\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n<table><tr><td onclick=x>3</td></tr></table>\n\n"
        "Energy $E=mc^2$ and\n\n\\[ x^2 \\]\n\n![chart](figures/p1.png) [bad](javascript:alert(3))"
    )

    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "<script" not in html and "<img" not in html and "onclick" not in html
    assert "<td>1</td>" in html and "<td>3</td>" in html
    assert '<span class="math inline">E=mc^2</span>' in html
    assert '<div class="math block">x^2</div>' in html
    assert "[figure: chart]" in html
    assert "javascript:" not in html.replace("(javascript:alert(3))", "")


@pytest.mark.django_db
def test_a_browser_asking_for_the_root_gets_the_home_page_and_programs_still_get_the_reader(
    client,
):
    page = client.get("/", HTTP_ACCEPT="text/html,application/xhtml+xml")
    program = client.get("/")

    assert page.status_code == 200 and b"Log in" in page.content
    assert "script-src 'self'" in page["Content-Security-Policy"]
    assert b"X-Respond-With" in program.content


@pytest.mark.django_db
def test_another_users_job_its_page_images_and_downloads_are_not_found(client, make_user):
    owner, other = make_user("olga"), make_user("mallory")
    job = job_services.job_submit(
        owner=owner, data=documents.png_page(), filename="page.png", engine="openai"
    )
    client.force_login(other)

    for path in ("", "pages/1/", "pages/1/image", "result.md", "result.zip"):
        response = client.get(f"/jobs/{job.id}/{path}", HTTP_ACCEPT="text/html")
        assert response.status_code == 404, path
    assert client.post(f"/jobs/{job.id}/cancel/").status_code == 404
    assert Job.objects.get(pk=job.id).status == Job.Status.QUEUED


# --- in a browser --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def worker(django_db_setup):
    """The shared fixture's two workers, also allowed to deliver webhooks to this machine."""
    purge_queues("ocr.local", "folio")
    with WorkerProcess(concurrency=2, env={"FOLIO_SSRF_ALLOW": "127.0.0.1"}) as process:
        yield process


@pytest.fixture(scope="module")
def browser():
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
    # still plain synchronous code.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    from tests.workers import refuse_in_the_fast_tier

    refuse_in_the_fast_tier("drives a browser")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def open_page(browser, live_server, django_user_model):
    """A logged-in browser page for a new user (a fresh context each: its own cookies)."""
    contexts = []

    def open_as(username: str, *, viewport=DESKTOP):
        django_user_model.objects.create_user(username=username, password=PASSWORD)
        context = browser.new_context(viewport=viewport, accept_downloads=True)
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.goto(f"{live_server.url}/account/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(re.compile(r"/jobs/new/$"))
        return page

    yield open_as
    for context in contexts:
        context.close()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def wait_until_finished(page) -> None:
    page.wait_for_selector("#job[data-final=true]", timeout=90_000)


@pytest.mark.slow
@with_live_server
@needs_chromium
def test_a_person_creates_a_key_uploads_a_two_page_pdf_and_reads_both_pages(
    open_page, live_server, worker
):
    page = open_page("alice")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])

    page.get_by_role("link", name="Account").click()
    page.get_by_role("link", name="API keys", exact=True).click()
    page.get_by_label("Name").fill("laptop")
    page.get_by_role("button", name="Create key").click()
    key = page.locator("[data-new-key]").inner_text()
    page.locator("[data-secret-box]").get_by_role("button", name="Copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == key
    shot(page, "keys")
    page.goto(page.url)  # shown once: a later visit lists the key by its prefix only
    assert key not in page.content()
    assert page.locator("tr[data-key]").count() == 1

    page.get_by_role("link", name="New job").click()
    page.get_by_label("Pages", exact=True).fill("1-2")
    page.locator("input[type=file]").set_input_files(
        files=[{"name": "harbour.pdf", "mimeType": "application/pdf",
                "buffer": documents.born_digital_pdf()}]
    )  # fmt: skip
    page.wait_for_selector(".file-list li.ok")
    shot(page, "upload")
    page.get_by_role("button", name="Start reading").click()
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f-]{36}/$"))
    wait_until_finished(page)

    assert page.locator("[data-percent]").inner_text() == "100%"
    assert page.locator("[data-status-badge]").inner_text() == "Done"
    first, second = page.locator("#page-1 .markdown"), page.locator("#page-2 .markdown")
    assert documents.BORN_DIGITAL_TITLE in first.inner_text()
    assert "Page marker beta" in second.inner_text()
    table = page.locator("#page-2 .markdown table")
    assert table.locator("td", has_text="North Quay").count() == 1
    assert page.locator("#page-1 img").evaluate("image => image.naturalWidth") > 500
    page.locator("#page-1").get_by_role("tab", name="Markdown").click()
    assert "# " in page.locator("#page-1-source").inner_text()
    page.locator("#page-1").get_by_role("tab", name="Rendered").click()
    page.locator("#page-2 img").scroll_into_view_if_needed()  # images load lazily
    page.wait_for_function("document.querySelector('#page-2 img').complete")
    shot(page, "job")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download Markdown").click()
    markdown = Path(download.value.path()).read_text()
    assert "Page marker alpha" in markdown and "Page marker beta" in markdown
    assert "Page marker gamma" not in markdown
    with page.expect_download() as download:
        page.get_by_role("link", name="Download zip (per page)").click()
    names = zipfile.ZipFile(io.BytesIO(Path(download.value.path()).read_bytes())).namelist()
    assert {"harbour.md", "pages/page-0001.md", "pages/page-0002.md"} <= set(names)

    page.set_viewport_size(NARROW)
    shot(page, "job-narrow")
    page.set_viewport_size(DESKTOP)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Jobs").click()
    row = page.locator("tr[data-job]").first
    assert row.locator("[data-status-badge]").inner_text() == "Done"
    assert "2 / 2 pages" in row.inner_text()
    shot(page, "jobs")


@pytest.mark.slow
@with_live_server
@needs_chromium
def test_files_are_checked_before_sending_and_the_servers_reason_is_shown_after(
    open_page, live_server, worker
):
    page = open_page("bruno")
    posts = []
    page.on("request", lambda request: posts.append(request) if request.method == "POST" else None)
    page.locator("input[type=file]").set_input_files(
        files=[
            {"name": "song.mp3", "mimeType": "audio/mpeg", "buffer": b"ID3\x03\x00\x00\x00 sound"},
            {"name": "empty.pdf", "mimeType": "application/pdf", "buffer": b""},
        ]
    )
    page.wait_for_selector(".file-list li.bad >> nth=1")
    page.get_by_role("button", name="Start reading").click()

    notes = page.locator(".file-list li").all_inner_texts()
    assert "not a document Folio reads" in notes[0] and "empty" in notes[1]
    assert posts == []
    page.get_by_label("Pages", exact=True).fill("two")
    assert "numbers and ranges" in page.locator("[data-pages-error]").inner_text()

    page.get_by_label("Pages", exact=True).fill("3-1")
    page.locator("input[type=file]").set_input_files(
        files=[
            {"name": "report.pdf", "mimeType": "application/pdf",
             "buffer": documents.born_digital_pdf()},
            {"name": "broken.pdf", "mimeType": "application/pdf",
             "buffer": documents.corrupt_pdf()},
        ]
    )  # fmt: skip
    page.wait_for_selector(".file-list li.ok >> nth=1")
    page.get_by_role("button", name="Start reading").click()
    page.wait_for_selector(".file-list li.bad >> nth=1")

    notes = page.locator(".file-list li").all_inner_texts()
    assert "runs backwards" in notes[0]
    assert "broken.pdf" in notes[1] and len(notes[1].strip()) > len("broken.pdf") + 10
    shot(page, "upload-errors")
    assert Job.objects.count() == 0


@pytest.mark.slow
@with_live_server
@needs_chromium
def test_a_queued_job_can_be_cancelled_and_another_user_gets_a_404_for_it(
    open_page, live_server, django_user_model
):
    page = open_page("carla")
    # No worker serves this engine here, so the job stays queued until it is cancelled.
    job = job_services.job_submit(
        owner=django_user_model.objects.get(username="carla"),
        data=documents.born_digital_pdf(),
        filename="waiting.pdf",
        engine="openai",
    )
    page.goto(f"{live_server.url}/jobs/{job.id}/")
    assert page.locator("[data-status-badge]").inner_text() == "Queued"
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Cancel job").click()

    page.wait_for_selector("text=Job cancelled")
    assert page.locator("[data-status-badge]").inner_text() == "Cancelled"
    assert Job.objects.get(pk=job.id).status == Job.Status.CANCELLED

    other = open_page("dmitri")
    response = other.goto(f"{live_server.url}/jobs/{job.id}/")
    assert response.status == 404
    assert "couldn't find" in other.locator("h1").inner_text()
    shot(other, "not-found")
    assert other.request.get(f"{live_server.url}/jobs/{job.id}/result.md").status == 404


def hostile_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 100), "Hostile report", fontsize=20)
    page.insert_text((72, 150), "<script>alert(1)</script>", fontsize=12)
    page.insert_text((72, 180), "<img src=x onerror=alert(2)>", fontsize=12)
    data = doc.tobytes()
    doc.close()
    return data


@pytest.mark.slow
@with_live_server
@needs_chromium
def test_a_hostile_document_renders_as_text_with_no_dialog_and_no_request(
    open_page, live_server, worker
):
    page = open_page("eve")
    dialogs, requests = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url))
    page.locator("input[type=file]").set_input_files(
        files=[{"name": "hostile.pdf", "mimeType": "application/pdf", "buffer": hostile_pdf()}]
    )
    page.wait_for_selector(".file-list li.ok")
    page.get_by_role("button", name="Start reading").click()
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f-]{36}/$"))
    wait_until_finished(page)

    text = page.locator("#page-1 .markdown").inner_text()
    assert "<script>alert(1)</script>" in text
    assert "<img src=x onerror=alert(2)>" in text
    assert page.locator("#page-1 .markdown script, #page-1 .markdown img").count() == 0
    page.wait_for_timeout(500)
    assert dialogs == []
    strays = [url for url in requests if not url.startswith(live_server.url) or url.endswith("/x")]
    assert strays == []
    shot(page, "hostile")


@pytest.mark.slow
@with_live_server
@needs_chromium
@LOCAL
def test_a_webhook_endpoint_is_added_rotated_and_tested_with_its_delivery_logged(
    open_page, live_server, worker
):
    page = open_page("frank")
    with Receiver() as receiver:
        page.goto(f"{live_server.url}/account/webhooks/")
        page.get_by_label("URL").fill(receiver.url)
        page.get_by_role("button", name="Add endpoint").click()
        secret = page.locator("[data-new-secret]").inner_text()
        assert secret.startswith("whsec_")

        page.get_by_role("link", name="Refresh").click()
        assert secret not in page.content()
        page.on("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name="Rotate secret").click()
        rotated = page.locator("[data-new-secret]").inner_text()
        assert rotated.startswith("whsec_") and rotated != secret

        page.get_by_role("button", name="Send test event").click()
        page.wait_for_selector("text=A test event is on its way")
        (received,) = receiver.wait_for(1, timeout=30)
        assert b'"type":"webhook.test"' in received.body
        assert len(received.headers["webhook-signature"].split()) == 2  # both secrets sign
        for _ in range(50):
            page.get_by_role("link", name="Refresh").click()
            if page.locator("tr[data-delivery-status=succeeded]").count():
                break
            page.wait_for_timeout(200)
        row = page.locator("tr[data-delivery]").first
        assert "webhook.test" in row.inner_text() and "HTTP 200" in row.inner_text()
        shot(page, "webhook")


@pytest.mark.slow
@with_live_server
@needs_chromium
def test_the_viewer_lights_a_blocks_box_on_the_page_zooms_and_links_back_to_the_text(
    open_page, live_server, worker, django_user_model
):
    page = open_page("vera")
    data = documents.born_digital_pdf()
    owner = django_user_model.objects.get(username="vera")
    job = job_services.job_submit(
        owner=owner, data=data, filename="harbour.pdf", page_selection="1"
    )
    page.goto(f"{live_server.url}/jobs/{job.id}/")
    wait_until_finished(page)
    page.wait_for_function("document.querySelector('#page-1 img').complete")
    layout = Job.objects.get(pk=job.id).pages.get(number=1).layout
    index, block = next(
        (i, b) for i, b in enumerate(layout["blocks"]) if "Dredging" in b["markdown"]
    )
    block_id = f"p1-b{index}"

    def expected_box() -> dict:
        """Where the block's box must be drawn: its bbox scaled from points to the image."""
        image = page.locator("#page-1 img").bounding_box()
        sx, sy = image["width"] / layout["width"], image["height"] / layout["height"]
        x0, y0, x1, y1 = block["bbox"]
        return {"x": image["x"] + x0 * sx, "y": image["y"] + y0 * sy,
                "width": (x1 - x0) * sx, "height": (y1 - y0) * sy}  # fmt: skip

    def assert_drawn_at(box: dict, want: dict) -> None:
        for key in ("x", "y", "width", "height"):
            assert abs(box[key] - want[key]) < 2, (key, box, want)

    # Hovering the paragraph in the text lights its box over the page image, where the
    # paragraph's words are on the page (the text layer says where).
    text_block = page.locator(f'#page-1 [data-block="{block_id}"]')
    text_block.hover()
    box = page.locator(f'#page-1 [data-box="{block_id}"]')
    assert "active" in box.get_attribute("class")
    drawn = box.bounding_box()
    assert_drawn_at(drawn, expected_box())
    words = [w for w in pymupdf.open(stream=data)[0].get_text("words") if w[4] == "Dredging"]
    image = page.locator("#page-1 img").bounding_box()
    scale = image["width"] / layout["width"]
    word_x, word_y = image["x"] + words[0][0] * scale, image["y"] + words[0][1] * scale
    assert drawn["x"] - 2 <= word_x <= drawn["x"] + drawn["width"]
    assert drawn["y"] - 2 <= word_y <= drawn["y"] + drawn["height"]
    # ... and the screenshot shows it: the highlight's orange edge and yellow tint.
    shot(page, "viewer-highlight")
    pixels = page.screenshot(clip=drawn)
    from PIL import Image

    picture = Image.open(io.BytesIO(pixels)).convert("RGB")
    edge = picture.getpixel((0, picture.height // 2))
    assert edge[0] > 180 and edge[2] < 120, edge  # the #d9480f border
    # Paper under the highlight is tinted yellow (white is (255, 255, 255)).
    rgb = np.asarray(picture, dtype=int)
    red, green, blue = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    tinted = int(((red > 230) & (green > 200) & (blue < red - 40)).sum())
    assert tinted > 0.3 * picture.width * picture.height, tinted
    text_block.blur()
    page.mouse.move(0, 0)
    assert "active" not in (box.get_attribute("class") or "")

    # Clicking a box on the page scrolls the text to its block and lights both.
    last = len(layout["blocks"]) - 1
    page.locator(f'#page-1 [data-box="p1-b{last}"]').click()
    target = page.locator(f'#page-1 [data-block="p1-b{last}"]')
    assert "active" in target.get_attribute("class")
    assert page.evaluate("document.activeElement.dataset.block") == f"p1-b{last}"

    # 200 %: the page at twice its printed size, from the one image drawn for it (no second
    # download), boxes still on their words; Fit brings it back.
    source = page.locator("#page-1 img").get_attribute("src")
    page.locator("#page-1").get_by_role("button", name="200 %").click()
    canvas = page.locator("#page-1 [data-page-canvas]").bounding_box()
    assert abs(canvas["width"] - layout["width"] * 96 / 72 * 2) < 2
    assert page.locator("#page-1 img").get_attribute("src") == source
    # Polled from here: the page's CSP refuses wait_for_function's eval.
    for _ in range(100):
        if page.locator("#page-1 img").evaluate("i => i.complete && i.naturalWidth") > 1500:
            break
        page.wait_for_timeout(200)
    else:
        raise AssertionError("the page image, drawn for 200 %, never loaded")
    page.locator(f'#page-1 [data-box="{block_id}"]').scroll_into_view_if_needed()
    text_block.hover()
    assert_drawn_at(box.bounding_box(), expected_box())
    shot(page, "viewer-zoomed")
    page.locator("#page-1").get_by_role("button", name="Fit").click()
    assert page.locator("#page-1 [data-page-canvas]").bounding_box()["width"] < canvas["width"]

    # The downloads: blocks, chunks and the searchable PDF.
    with page.expect_download() as download:
        page.get_by_role("link", name="Download blocks (JSON)").click()
    blocks = json.loads(Path(download.value.path()).read_text())
    assert blocks["pages"][0]["blocks"][index]["id"] == block_id
    with page.expect_download() as download:
        page.get_by_role("link", name="Download chunks (JSON)").click()
    assert json.loads(Path(download.value.path()).read_text())["chunks"]
    with page.expect_download() as download:
        page.get_by_role("link", name="Download searchable PDF").click()
    assert download.value.suggested_filename == "harbour.searchable.pdf"
    assert Path(download.value.path()).read_bytes().startswith(b"%PDF")


@pytest.mark.slow
@with_live_server
@needs_chromium
def test_the_upload_forms_boxes_ask_for_speaker_notes_and_comments(open_page, live_server, worker):
    from tests import office

    if not office.CORPUS.is_dir():
        pytest.skip(office.CORPUS_MISSING)
    page = open_page("nora")
    deck = office.corpus("pptx/sources/powerpoint_sample.pptx")
    commented = office.corpus("docx/sources/docx_comments.docx")

    def upload(name: str, data: bytes, *, ticked: tuple[str, ...]) -> None:
        page.goto(f"{live_server.url}/jobs/new/")
        for label in ticked:
            page.get_by_label(label).check()
        page.locator("input[type=file]").set_input_files(
            files=[{"name": name, "mimeType": "application/octet-stream", "buffer": data}]
        )
        page.wait_for_selector(".file-list li.ok")
        page.get_by_role("button", name="Start reading").click()
        page.wait_for_url(re.compile(r"/jobs/[0-9a-f-]{36}/$"))
        # A worker imports docling on its first structured page: seconds on a busy host.
        page.wait_for_selector("#job[data-final=true]", timeout=240_000)

    upload("deck.pptx", deck, ticked=("Speaker notes",))
    shot(page, "office-speaker-notes")
    assert "Speaker notes: Some notes on the second slide." in (
        page.locator("#page-2 .markdown").inner_text()
    )
    upload("commented.docx", commented, ticked=("Reviewers' comments",))
    assert "author: John Reviewer (JR)" in page.locator("#page-1 .markdown").inner_text()
    upload("deck-again.pptx", deck, ticked=())
    assert "Speaker notes" not in page.locator("#page-2 .markdown").inner_text()

    options = [job.options for job in Job.objects.order_by("created_at")]
    assert [(o.get("speaker_notes", False), o.get("comments", False)) for o in options] == [
        (True, False),
        (False, True),
        (False, False),
    ]
