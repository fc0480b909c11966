"""The result's other formats through the jobs API, with real worker processes: layout
blocks, chunks, the searchable PDF and page markers; and the refusals around them."""

from __future__ import annotations

import io
import re
import unicodedata

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests import documents
from tests.conftest import wait_for_job
from webapp.jobs.models import Page

with_worker = pytest.mark.django_db(transaction=True)


def finished(client, data: bytes, name: str, **fields) -> dict:
    upload = SimpleUploadedFile(name, data)
    response = client.post("/v1/jobs", {"file": upload, **fields}, format="multipart")
    assert response.status_code == 202, response.content
    job = wait_for_job(client, response.json()["id"])
    assert job["status"] == "succeeded", job
    return job


def result(client, job: dict, **query):
    return client.get(f"/v1/jobs/{job['id']}/result", query, HTTP_ACCEPT="application/json")


@pytest.mark.slow
@with_worker
def test_blocks_chunks_markers_and_pdf_of_a_born_digital_pdf(api, worker):
    data = documents.born_digital_pdf()
    job = finished(api, data, "report.pdf")

    blocks = result(api, job, format="blocks")
    assert blocks.status_code == 200 and blocks["Content-Type"] == "application/json"
    body = blocks.json()
    assert (body["unit"], body["origin"]) == ("pt", "top-left")
    assert [p["page"] for p in body["pages"]] == [1, 2, 3]
    source = pymupdf.open(stream=data)
    for page in body["pages"]:
        assert page["source"] == "text-layer"
        assert (page["width"], page["height"]) == (595, 842)
        ids = [block["id"] for block in page["blocks"]]
        assert ids == [f"p{page['page']}-b{i}" for i in range(len(ids))]
        words = source[page["page"] - 1].get_text("words")
        for block in page["blocks"]:
            if block["type"] != "paragraph":
                continue
            x0, y0, x1, y1 = block["bbox"]
            under = {
                token
                for w in words
                if x0 - 1 <= (w[0] + w[2]) / 2 <= x1 + 1 and y0 - 1 <= (w[1] + w[3]) / 2 <= y1 + 1
                # the text layer has "ﬁ" ligatures and footnote marks glued to words
                for token in re.findall(r"[A-Za-z]{4,}", unicodedata.normalize("NFKC", w[4]))
            }
            for word in re.findall(r"[A-Za-z]{4,}", block["markdown"]):
                assert word in under, word
    table = [b for p in body["pages"] for b in p["blocks"] if b["type"] == "table"]
    assert len(table) == 1 and "North Quay" in table[0]["markdown"]

    chunks = result(api, job, format="chunks", max_tokens=48).json()
    assert chunks["max_tokens"] == 48 and chunks["chunks"]
    known = {b["id"]: (p["page"], b["bbox"]) for p in body["pages"] for b in p["blocks"]}
    for chunk in chunks["chunks"]:
        for box in chunk["boxes"]:
            assert known[box["block"]] == (box["page"], box["bbox"])
    cargo = next(c for c in chunks["chunks"] if "North Quay" in c["text"])
    assert cargo["headings"][-1] == "Cargo volumes by terminal" and cargo["pages"] == [2]

    marked = api.get(f"/v1/jobs/{job['id']}/result", {"page_markers": "true"})
    assert marked["Content-Type"].startswith("text/markdown")
    parts = re.split(r"^<!-- page (\d+) -->$", marked.content.decode(), flags=re.MULTILINE)
    assert parts[1::2] == ["1", "2", "3"]
    for text, marker in zip(parts[2::2], documents.BORN_DIGITAL_PAGE_MARKERS, strict=True):
        assert marker in text
    custom = api.get(f"/v1/jobs/{job['id']}/result", {"page_marker": "=== {page} ==="})
    assert "\n=== 2 ===\n" in custom.content.decode()

    pdf = api.get(f"/v1/jobs/{job['id']}/result", {"format": "pdf"})
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert 'filename="report.searchable.pdf"' in pdf["Content-Disposition"]
    out = pymupdf.open(stream=pdf.getvalue())
    assert out.page_count == 3
    for index in range(3):  # born-digital pages pass through unchanged
        assert out[index].get_text("words") == source[index].get_text("words")


@pytest.mark.slow
@with_worker
def test_a_scan_comes_back_as_a_searchable_pdf_with_its_words_in_place(api, worker):
    from pdfminer.high_level import extract_text

    data = documents.scanned_pdf()
    job = finished(api, data, "scan.pdf")
    body = result(api, job, format="blocks").json()
    (page,) = body["pages"]
    assert page["source"] == "ocr" and page["blocks"]
    assert all(0 < block["confidence"] <= 1 for block in page["blocks"])

    pdf = api.get(f"/v1/jobs/{job['id']}/result", {"format": "pdf"})
    assert pdf.status_code == 200
    body = pdf.getvalue()  # streamed from storage: read once
    text = extract_text(io.BytesIO(body))
    for word in documents.SCAN_WORDS:
        assert word in text
    out = pymupdf.open(stream=body)
    hit = out[0].search_for("Marlow")[0]
    marlow = next(
        b for b in page["blocks"] if "Marlow" in b["markdown"]
    )  # the block it was read in
    x0, y0, x1, y1 = marlow["bbox"]
    assert x0 - 1 <= hit.x0 and hit.x1 <= x1 + 1 and y0 - 1 <= (hit.y0 + hit.y1) / 2 <= y1 + 1
    # The original scan is still the page's picture.
    assert out[0].get_images() and len(body) < 2 * len(data)


@pytest.mark.slow
@with_worker
def test_a_cache_hit_keeps_its_layout(api, worker):
    data = documents.png_page()
    first = finished(api, data, "page.png")
    second = finished(api, data, "again.png")
    assert Page.objects.get(job_id=second["id"]).method == "cache"
    blocks = [
        result(api, job, format="blocks").json()["pages"][0]["blocks"] for job in (first, second)
    ]
    assert blocks[0] and blocks[0] == blocks[1]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"format": "xml"}, "format"),
        ({"format": "chunks", "max_tokens": "5"}, "max_tokens"),
        ({"page_marker": "no placeholder"}, "{page}"),
    ],
)
def test_bad_result_parameters_are_a_400_that_says_which(api, query, words):
    response = api.get("/v1/jobs/00000000-0000-0000-0000-000000000000/result", query)
    assert response.status_code == 400
    assert words in response.json()["message"]


@pytest.mark.slow
@with_worker
def test_the_reader_endpoint_answers_blocks_chunks_and_the_searchable_pdf(api, worker):
    def read(fmt: str, **headers):
        upload = SimpleUploadedFile("scan.png", documents.png_page())
        return api.post(
            "/", {"file": upload}, format="multipart", HTTP_X_FOLIO_FORMAT=fmt, **headers
        )

    blocks = read("blocks", HTTP_ACCEPT="application/json")
    assert blocks.status_code == 200, blocks.content
    body = blocks.json()
    assert body["status"] == 20000 and body["meta"]["usage"]["tokens"] > 0
    (page,) = body["data"]["pages"]
    assert page["source"] == "ocr" and any("Marlow" in b["markdown"] for b in page["blocks"])

    chunks = read("chunks", HTTP_X_FOLIO_CHUNK_TOKENS="64").json()["data"]
    assert chunks["max_tokens"] == 64
    assert any("Marlow" in chunk["text"] for chunk in chunks["chunks"])

    pdf = read("pdf")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert "Marlow" in pymupdf.open(stream=pdf.getvalue())[0].get_text()

    refused = read("pdf", HTTP_ACCEPT="text/event-stream")
    assert refused.status_code == 400 and "event stream" in refused.json()["message"]
    unknown = read("docx")
    assert unknown.status_code == 400 and "X-Folio-Format" in unknown.json()["message"]
