"""The real vLLM engine class through a real worker, on the CPU build of vLLM.

A tiny DeepSeek-OCR-shaped checkpoint (random weights) is made here; a Celery worker in a
threads pool loads ``jina-ocr-v1`` with n-gram speculation and the no-speculation fallback;
rendered pages go in through the jobs API and text, tokens and timings come out. With random
weights a page never reaches end-of-sequence before its small token cap, so the repetition
guard fires on every page and the fallback engine is exercised for real.

The figures (placeholders, acceptance) go to test-output/vllm/figures.json.
"""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.request
from pathlib import Path

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image, ImageDraw

from model import gundam
from tests.conftest import wait_for_job
from tests.vllm import tiny_checkpoint
from tests.workers import REPOSITORY, WorkerProcess, purge_queues

QUEUE = "ocr.jina-ocr-v1"
MAX_TOKENS = 40
FIGURES = REPOSITORY / "test-output" / "vllm" / "figures.json"
# Engine arguments that kept a 2-core, 24 GiB machine clear of the OOM killer.
CPU_ENGINE_ARGS = {
    "load_format": "dummy",
    "dtype": "bfloat16",
    "max_model_len": 4096,
    "max_num_batched_tokens": 2048,
}
with_worker = pytest.mark.django_db(transaction=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def gpu_worker(django_db_setup, tmp_path_factory):
    checkpoint = tiny_checkpoint.write(tmp_path_factory.mktemp("tiny-deepseek-ocr"))
    port = free_port()
    env = {
        "FOLIO_VLLM_MODEL": str(checkpoint),
        "FOLIO_VLLM_SPECULATION": "ngram-k3",
        "FOLIO_VLLM_PAGES_IN_FLIGHT": "2",
        "FOLIO_VLLM_MAX_TOKENS": str(MAX_TOKENS),
        "FOLIO_VLLM_ENGINE_ARGS": json.dumps(CPU_ENGINE_ARGS),
        "FOLIO_METRICS_PORT": str(port),
        "VLLM_CPU_KVCACHE_SPACE": "2",
    }
    purge_queues(QUEUE)
    worker = WorkerProcess(queues=QUEUE, concurrency=2, env=env, pool="threads")
    with worker.start(timeout=600):
        worker.metrics_url = f"http://127.0.0.1:{port}/metrics"
        yield worker


def a4_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 100), "Folio on vLLM", fontsize=24)
    page.insert_text((72, 140), "A rendered page for the CPU build of DeepSeek-OCR.", fontsize=11)
    try:
        return doc.tobytes()
    finally:
        doc.close()


def small_png() -> bytes:
    image = Image.new("RGB", (600, 400), "white")
    ImageDraw.Draw(image).text((40, 40), "A receipt small enough for no tiles", fill="black")
    from io import BytesIO

    buffer = BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def page_figures(log: Path) -> list[dict]:
    lines = log.read_text(errors="replace").splitlines()
    return [
        json.loads(m.group(1))
        for m in map(re.compile(r"page figures (\{.*\})$").search, lines)
        if m
    ]


def scrape(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def metric(values: dict[str, float], prefix: str) -> float:
    return sum(v for k, v in values.items() if k.split("{")[0] == prefix)


def test_vllm_counts_tiles_and_placeholders_as_model_gundam_does():
    from vllm.model_executor.models.deepseek_ocr import DeepseekOCRProcessingInfo
    from vllm.transformers_utils.processors.deepseek_ocr import count_tiles

    sizes = [(w, h) for w in range(200, 3200, 170) for h in range(200, 3200, 230)]
    for width, height in sizes:
        grid = gundam.choose_grid(width, height)
        counted = DeepseekOCRProcessingInfo.get_num_image_tokens(
            None, image_width=width, image_height=height
        )
        assert counted == gundam.placeholder_count(grid), (width, height)
        if grid.tiles:
            assert count_tiles(width, height) == (grid.columns, grid.rows), (width, height)


@with_worker
def test_rendered_pages_go_through_the_vllm_engine_in_a_worker(api, gpu_worker):
    started = time.monotonic()
    jobs = []
    for data, name in ((a4_pdf(), "page.pdf"), (small_png(), "receipt.png")):
        upload = SimpleUploadedFile(name, data)
        response = api.post(
            "/v1/jobs", {"file": upload, "engine": "jina-ocr-v1"}, format="multipart"
        )
        assert response.status_code == 202, response.content
        jobs.append(response.json()["id"])
    finished = [wait_for_job(api, job_id, timeout=600) for job_id in jobs]
    wall = time.monotonic() - started

    assert [job["status"] for job in finished] == ["succeeded", "succeeded"], finished
    pages = []
    for job_id in jobs:
        body = api.get(f"/v1/jobs/{job_id}/result", HTTP_ACCEPT="application/json").json()
        pages.extend(body["pages"])
    for page in pages:
        assert page["markdown"].strip()
        assert "<|ref|>" not in page["markdown"]
        assert 0 < page["output_tokens"] <= MAX_TOKENS
        assert page["input_tokens"] > 273
        assert page["engine_seconds"] > 0 and page["render_seconds"] > 0

    figures = page_figures(gpu_worker.log_path)
    assert len(figures) == 2, figures
    by_size = {tuple(f["image_size"]): f for f in figures}
    pdf_page = next(f for size, f in by_size.items() if max(size) > 640)
    png_page = by_size[(600, 400)]
    assert pdf_page["grid"] == [2, 3] and pdf_page["placeholders"] == 903
    assert png_page["grid"] == [1, 1] and png_page["placeholders"] == 273
    for page in figures:
        assert page["placeholders"] == page["expected_placeholders"]
        assert page["speculation"] == "ngram-k3"
        assert page["spec_decode"]["num_draft_tokens"] > 0
        assert page["ttft_seconds"] > 0
        # Random weights never say end-of-sequence within 40 tokens: the guard must fire.
        assert page["repetition"]["runaway"] and page["repetition"]["retried"]

    exported = scrape(gpu_worker.metrics_url)
    assert metric(exported, "folio_engine_pages_total") == 2
    assert metric(exported, "folio_engine_repetition_retries_total") == 2
    draft_tokens = metric(exported, "vllm:spec_decode_num_draft_tokens_total")
    accepted = metric(exported, "vllm:spec_decode_num_accepted_tokens_total")
    drafts = metric(exported, "vllm:spec_decode_num_drafts_total")
    assert draft_tokens > 0

    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "pages_in": len(jobs),
        "pages_out": sum(1 for p in pages if p["status"] == "succeeded"),
        "wall_seconds": round(wall, 1),
        "pages": figures,
        "prometheus": {
            "drafts": drafts,
            "draft_tokens": draft_tokens,
            "accepted_tokens": accepted,
            "acceptance_rate": accepted / draft_tokens,
            "mean_acceptance_length": 1 + accepted / drafts if drafts else None,
        },
    }
    FIGURES.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary["prometheus"]), f"pages {summary['pages_out']}/{len(jobs)}")
