"""The ``auto`` engine end to end, through real worker processes: a ``local`` worker reads every
page; a ``transformers`` worker serves a VLM, the tiny checkpoint in jina-ocr-v1's layout that
the vLLM tier builds (``tests/vllm/tiny_checkpoint.py``: real safetensors, its own remote code,
nothing downloaded). The tiny model writes the same two dozen words whatever the page shows,
so these tests prove the mechanism (which pages go, to which worker, which reading is kept,
what the job counts and caches), not that a VLM reads better: docs/QUALITY.md says what can.

One document of three pages: clean prose (no signal doubts it: it stays local), prose whose
contractions lost their apostrophes (``apostrophes`` doubts it: it goes, and the tiny model's
reading, holding none of the page's text layer, scores worse and loses), and a page of
scribbles with no text layer (``local`` reads nothing from its ink: it goes, and the tiny
model's words are kept).
"""

from __future__ import annotations

import io
import random
from functools import cache

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image, ImageDraw

from tests import FASTMTP_EXTRA
from tests.conftest import wait_for_job
from tests.workers import WorkerProcess, purge_queues
from webapp.core.queues import engine_queue
from webapp.core.workers import serving_engines
from webapp.jobs.models import Page
from webapp.results.models import CachedPage

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

pytest.importorskip("torch", reason=FASTMTP_EXTRA)
pytest.importorskip("transformers", reason=FASTMTP_EXTRA)

from tests.vllm import tiny_checkpoint  # noqa: E402

CLEAN = (
    "The river authority measured the spring flood at four metres above the summer level. "
    "Engineers rebuilt the northern weir with stone taken from the old quarry, and farmers "
    "downstream were warned two days before the crest reached the lower valley."
)
NO_APOSTROPHES = (
    "Heres the plan for the spring. Theyre sure we cant wait for the summer, and thats why "
    "the engineers wont rest until the northern weir is rebuilt with stone from the quarry, "
    "which isnt far from the valley where the farmers live and work."
)


def _scribbles() -> bytes:
    image = Image.new("L", (1240, 1754), 255)
    draw = ImageDraw.Draw(image)
    rng = random.Random(7)
    for _ in range(40):  # loops and blots, as a child's drawing: ink, and no text
        x, y = rng.randrange(100, 1100), rng.randrange(100, 1600)
        r = rng.randrange(30, 120)
        draw.ellipse((x - r, y - r, x + r, y + r), outline=0, width=rng.randrange(6, 14))
    out = pymupdf.open()
    page = out.new_page(width=595, height=842)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    page.insert_image(page.rect, stream=buffer.getvalue())
    return out.tobytes()


@cache  # one document's bytes (PyMuPDF writes a new file id on each save)
def three_pages() -> bytes:
    doc = pymupdf.open()
    for text in (CLEAN, NO_APOSTROPHES):
        page = doc.new_page(width=595, height=842)
        page.insert_textbox(pymupdf.Rect(72, 72, 523, 770), text, fontsize=12)
    doc.insert_pdf(pymupdf.open(stream=_scribbles(), filetype="pdf"))
    return doc.tobytes()


@pytest.fixture(scope="module")
def local_worker(django_db_setup):
    purge_queues(engine_queue("local"), engine_queue("transformers"), "folio")
    with WorkerProcess(queues="ocr.local,folio", env={"FOLIO_AUTO_THRESHOLD": "0.5"}) as worker:
        yield worker


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_checkpoint.write(tmp_path_factory.mktemp("tiny-jina-ocr"))


def submit(api, data: bytes) -> dict:
    upload = SimpleUploadedFile("three.pdf", data, content_type="application/pdf")
    response = api.post("/v1/jobs", {"file": upload, "engine": "auto"}, format="multipart")
    assert response.status_code == 202, response.content
    return wait_for_job(api, response.json()["id"], timeout=300)


def pages_of(job: dict) -> dict[int, dict]:
    return {page["number"]: page for page in job["pages"]}


def test_with_no_vlm_served_auto_reads_like_local_and_says_so(api, local_worker):
    assert "transformers" not in serving_engines(fresh=True)
    job = submit(api, three_pages())
    assert job["status"] == "succeeded", job
    pages = pages_of(job)
    assert all(page["engine"] == "local" for page in pages.values())
    assert pages[1]["escalation"] == {"escalated": False, "score": 0.0, "threshold": 0.5}
    for number in (2, 3):
        assert not pages[number]["escalation"]["escalated"]
        assert "no VLM engine is served" in pages[number]["escalation"]["why"]
    assert "apostrophes" in pages[2]["escalation"]["reasons"][0]
    assert job["auto"]["pages_escalated"] == 0 and job["auto"]["pages_left_local"] == 2
    assert "no VLM engine was served" in job["auto"]["note"]


def test_doubtful_pages_go_to_the_vlm_worker_and_the_better_reading_is_kept(
    api, local_worker, checkpoint
):
    env = {
        "FOLIO_TRANSFORMERS_MODEL_DIR": str(checkpoint),
        "FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE": "1",
        "FOLIO_TRANSFORMERS_DEVICE": "cpu",
        "FOLIO_TRANSFORMERS_DTYPE": "float32",
        "FOLIO_TRANSFORMERS_MAX_NEW_TOKENS": "40",
    }
    with WorkerProcess(queues=engine_queue("transformers"), env=env).start(timeout=240):
        assert "transformers" in serving_engines(fresh=True)
        job = submit(api, three_pages())
        assert job["status"] == "succeeded", job
        pages = pages_of(job)
        # Page 1: nothing doubted it; it never left the local worker.
        assert pages[1]["engine"] == "local" and not pages[1]["escalation"]["escalated"]
        # Page 2: sent on, but the VLM's reading holds none of the text layer: local kept.
        second = pages[2]["escalation"]
        assert second["escalated"] and second["engine"] == "transformers"
        assert second["kept"] == "local" and "scores worse" in second["why"], second
        assert pages[2]["engine"] == "local"
        # Page 3: the local engine read nothing of its ink; the VLM's reading is kept.
        third = pages[3]["escalation"]
        assert third["escalated"] and third["kept"] == "vlm", third
        assert "empty" in third["reasons"][0]
        assert pages[3]["engine"] == "transformers" and pages[3]["method"] == "vlm"
        page3 = Page.objects.get(job_id=job["id"], number=3)
        assert page3.markdown.split() == tiny_checkpoint.expected_text().split()
        assert third["vlm_seconds"] > 0
        # Claimed once by each worker: one attempt each, no more.
        assert page3.attempts == 1 and page3.worker.startswith("test-")
        # The job counts the pages sent on and the VLM's time; both readings' tokens.
        assert job["auto"]["pages_escalated"] == 2
        assert job["auto"]["share_escalated"] == pytest.approx(2 / 3, abs=0.001)
        assert job["auto"]["vlm_seconds"] > 0
        assert page3.output_tokens >= len(tiny_checkpoint.expected_output()) - 1
        # Each reading is cached under the engine that produced it.
        cached = {c.page_number: c.engine for c in CachedPage.objects.all()}
        assert cached.get(1) == "local" and cached.get(3) == "transformers"

        # Submitted again: pages 1 and 3 are answered from the cache, each with the reading
        # of the engine that produced it; page 2 (doubtful, so never cached) is read again.
        again = pages_of(submit(api, three_pages()))
        assert [(again[n]["method"], again[n]["engine"]) for n in (1, 3)] == [
            ("cache", "local"), ("cache", "transformers"),
        ]  # fmt: skip
        assert again[2]["escalation"]["escalated"] and again[2]["engine"] == "local"

        # The Reader's X-Respond-With: auto reads the same way, and says what it sent on.
        response = api.post(
            "/",
            {"file": SimpleUploadedFile("three.pdf", three_pages())},
            format="multipart",
            HTTP_X_RESPOND_WITH="auto",
            HTTP_ACCEPT="application/json",
            HTTP_X_TIMEOUT="240",
        )
        assert response.status_code == 200, response.content
        data = response.json()["data"]
        assert data["auto"]["pages_escalated"] >= 1
        assert tiny_checkpoint.expected_text().split()[0] in data["content"]
