"""The real vLLM engine class on the CPU build of vLLM, with jina-ocr-v1's FastMTP head on.

A tiny checkpoint in jina-ocr-v1's published layout (``tiny_checkpoint``: DeepSeek-OCR's config
keys, a decoder whose greedy output is known in advance, and a FastMTP draft head under
``mtp_module.heads.0.*`` that is right only when it reads the target's hidden state, recycles its
own post-norm state and reads the page's features: ``tiny_draft``) is made here. Then:

- ``VllmEngine`` decodes the same rendered pages with speculation off, with MTP at K=1 and at
  K=3 (Folio's own registration of the draft in vLLM), and with n-gram speculation: the token
  ids must be the same everywhere (and the ones the checkpoint was built to produce), vLLM's
  speculative-decoding counters must show every MTP draft accepted, and the same head with
  ``eh_proj``'s halves swapped nearly none;
- a head distilled from the checkpoint's own decoding to an acceptance between 0.3 and 0.9
  (``tiny_distill``) is decoded by vLLM at K=3 and by Folio's own FastMTP decoder, both in
  float32: the drafts kept at every verifier step must be the same;
- a Celery worker in a threads pool serves ``jina-ocr-v1`` with MTP at K=1: rendered pages go
  in through the jobs API, and text, tokens, timings and vLLM's exported counters come out.

The figures (acceptance, tokens per step, wall time) go to test-output/vllm/figures.json.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from model import gundam
from tests.conftest import wait_for_job
from tests.vllm import tiny_checkpoint, tiny_distill, tiny_draft
from tests.vllm.pages import a4_pdf, small_png
from tests.workers import REPOSITORY, WorkerProcess, purge_queues

QUEUE = "ocr.jina-ocr-v1"
MAX_TOKENS = 40
FIGURES = REPOSITORY / "test-output" / "vllm" / "figures.json"
# Engine arguments that kept a 2-core, 24 GiB machine clear of the OOM killer (eager: no graphs
# on the CPU build). ``folio-partial``: the tiny checkpoint's weights, the vision tower random.
# float32: on a CPU without AVX-512's bfloat16 instructions (an AVX2-only EPYC here) vLLM's
# CPU build emulates bfloat16, and the random vision tower's prefill took 560-590 s a preset
# for two pages, close to a decode's 900 s limit, against about a third of that in float32.
CPU_ENGINE_ARGS = {
    "load_format": "folio-partial",
    "dtype": "float32",
    "max_model_len": 4096,
    "max_num_batched_tokens": 2048,
    "enforce_eager": True,
}
CPU_ENV = {
    "FOLIO_VLLM_PAGES_IN_FLIGHT": "2",
    "FOLIO_VLLM_MAX_TOKENS": str(MAX_TOKENS),
    "FOLIO_VLLM_ENGINE_ARGS": json.dumps(CPU_ENGINE_ARGS),
    "FOLIO_TEST_PARTIAL_LOADER": "1",
    "VLLM_CPU_KVCACHE_SPACE": "2",
    # vLLM gives one model step 300 s by default; a shared 2-core machine needed more for the
    # first multimodal prefill (SAM-B and CLIP-L over seven views).
    "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "3600",
    "FOLIO_VLLM_PAGE_TIMEOUT": "3600",
}
with_worker = pytest.mark.django_db(transaction=True)
_figures: dict = {}


def record(key: str, value) -> None:
    _figures[key] = value
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(json.dumps(_figures, indent=2))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_checkpoint.write(tmp_path_factory.mktemp("tiny-jina-ocr"))


def decode(checkpoint: Path, preset: str, tmp_path: Path, env: dict | None = None) -> dict:
    """The pages through ``VllmEngine`` with ``preset``, in a process of its own."""
    out = tmp_path / f"{preset}.json"
    started = time.monotonic()
    completed = subprocess.run(
        [
            sys.executable,
            str(REPOSITORY / "tests/vllm/decode_pages.py"),
            str(checkpoint),
            preset,
            str(out),
        ],
        env={**os.environ, **CPU_ENV, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    # Shown by pytest when the test fails, and read by the tests that check what vLLM said.
    sys.stdout.write(completed.stdout)
    completed.check_returncode()
    result = json.loads(out.read_text())
    result["wall_seconds"] = round(time.monotonic() - started, 1)
    result["log"] = completed.stdout
    return result


def spec_figures(result: dict) -> dict:
    counters = result["spec_decode"]
    return {
        "drafts": counters["drafts"],
        "draft_tokens": counters["draft_tokens"],
        "accepted_tokens": counters["accepted_tokens"],
        "acceptance_rate": round(counters["acceptance_rate"], 4),
        "tokens_per_step": round(counters["mean_acceptance_length"], 4),
        "wall_seconds": result["wall_seconds"],
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def gpu_worker(django_db_setup, checkpoint):
    port = free_port()
    env = {
        **CPU_ENV,
        "FOLIO_VLLM_MODEL": str(checkpoint),
        "FOLIO_VLLM_SPECULATION": "k1-graphs",
        "FOLIO_METRICS_PORT": str(port),
    }
    purge_queues(QUEUE)
    worker = WorkerProcess(queues=QUEUE, concurrency=2, env=env, pool="threads")
    with worker.start(timeout=600):
        worker.metrics_url = f"http://127.0.0.1:{port}/metrics"
        yield worker


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


def test_mtp_at_k1_and_k3_and_ngram_decode_the_same_tokens_as_speculation_off(checkpoint, tmp_path):
    started = time.monotonic()
    off = decode(checkpoint, "off-eager", tmp_path)
    expected = tiny_checkpoint.expected_output()
    assert off["status"]["speculation"] == "off-eager"
    # As a worker on the no-speculation queue decodes: with DeepSeek-OCR's n-gram blocker.
    assert off["status"]["ngram_blocker"] is True
    for page in off["pages"]:
        # The checkpoint was built to say exactly this; vLLM keeps the EOS id at the end.
        assert page["token_ids"] == expected, page
        assert page["finish_reason"] == "stop"
    by_page = {page["page"]: page for page in off["pages"]}
    assert by_page["a4.pdf"]["placeholders"] == 903
    assert by_page["receipt.png"]["placeholders"] == 273

    figures = {}
    for preset in ("k1-graphs", "k3-eager", "ngram-k3"):
        run = decode(checkpoint, preset, tmp_path)
        assert run["status"]["speculation"] == preset
        for page in run["pages"]:
            assert page["token_ids"] == by_page[page["page"]]["token_ids"], (preset, page)
            assert page["finish_reason"] == "stop"
        counters = run["spec_decode"]
        # The n-gram proposer drafts only from an n-gram already in the context, and the
        # checkpoint's answer is a walk along a cycle longer than it, with no n-gram twice:
        # under ngram-k3 it proposes nothing, and what is checked is the same tokens.
        if preset != "ngram-k3":
            assert counters["draft_tokens"] > 0, (preset, counters)
            assert run["status"]["draft_glue"] == "folio"
            assert run["status"]["registered_glue"] == "folio"
            # The draft reads the page as the decoder did, not the <image> token's embedding.
            assert "FastMTP draft reads the page's features" in run["log"], preset
            assert "does not support external multimodal embeddings" not in run["log"]
            # The draft is right only when vLLM hands it the target's hidden state, its own
            # post-norm state and the page's features (tiny_draft): every draft accepted.
            assert counters["acceptance_rate"] == 1.0, (preset, counters)
        figures[preset] = spec_figures(run)
    # The same decoding with the head mis-wired (eh_proj's halves swapped): the same tokens,
    # and its drafts nearly all refused, so 1.0 above is the draft's doing, not the plumbing's.
    swapped = tiny_checkpoint.write(tmp_path / "swapped", draft=tiny_draft.MISWIRED)
    run = decode(swapped, "k3-eager", tmp_path)
    for page in run["pages"]:
        assert page["token_ids"] == by_page[page["page"]]["token_ids"], ("swapped", page)
    assert run["spec_decode"]["acceptance_rate"] < 0.1, run["spec_decode"]
    figures["k3-eager-swapped-draft"] = spec_figures(run)
    figures["off-eager"] = {"wall_seconds": off["wall_seconds"]}
    figures["speculation_tier_wall_seconds"] = round(time.monotonic() - started, 1)
    record("speculation", figures)
    print(json.dumps(figures))


def test_vllm_and_folios_decoder_accept_the_same_drafts_step_by_step(tmp_path):
    """Two implementations of the draft's decoding, one distilled head: vLLM-CPU at K=3 and
    Folio's own FastMTP decoder (the ``transformers`` engine's), both in float32, must keep the
    same number of drafts at every verifier step of every page (vLLM's detailed per-request
    ``per_step_accepted``). The head (``tiny_distill``) was trained from random weights on the
    checkpoint's own decoding for a budget that leaves it partly right, so which drafts survive
    depends on all the draft computes (its attention, RoPE and cache, the recycled state, the
    page's features) and on what each implementation re-drafts from after a rejection."""
    distilled = tiny_checkpoint.write(tmp_path / "distilled", draft=tiny_distill.DISTILLED)
    args = {**CPU_ENGINE_ARGS, "per_request_spec_decode_metrics": "detailed"}
    run = decode(distilled, "k3-eager", tmp_path, {"FOLIO_VLLM_ENGINE_ARGS": json.dumps(args)})
    # Folio's decoder in a process of its own: once vLLM is imported (the one-layer check
    # does so in this process), transformers maps the checkpoint's model type to vLLM's
    # config class instead of the checkpoint's own code.
    folio = folio_per_step_accepted(distilled)
    figures = {}
    for page in run["pages"]:
        assert page["token_ids"] == tiny_checkpoint.expected_output(), page
        ours = {"per_step_accepted": folio[page["page"]]}
        theirs = page["spec"]["per_step_accepted"]
        acceptance = sum(theirs) / (3 * len(theirs))
        figures[page["page"]] = {
            "vllm_per_step_accepted": theirs,
            "folio_per_step_accepted": ours["per_step_accepted"],
            "acceptance": round(acceptance, 4),
            "tokens_per_step": round(1 + sum(theirs) / len(theirs), 4),
        }
        assert 0.3 < acceptance < 0.9, figures
        assert ours["per_step_accepted"] == theirs, figures
    record("cross_check", figures)
    print(json.dumps(figures))


FOLIO_DECODER = """
import json, sys, torch
from model.engines import EngineOptions, PageInput
from model.engines.transformers_engine import TransformersEngine
from tests.vllm.pages import a4_pdf, small_png
engine = TransformersEngine(
    sys.argv[1], k=3, device="cpu", dtype=torch.float32, max_new_tokens=int(sys.argv[2])
)
engine.load()
pages = {"a4.pdf": (a4_pdf(), "application/pdf"), "receipt.png": (small_png(), "image/png")}
print(json.dumps({
    name: engine.transcribe(PageInput(data, mime, 1), EngineOptions()).extra["per_step_accepted"]
    for name, (data, mime) in pages.items()
}))
"""


def folio_per_step_accepted(checkpoint: Path) -> dict[str, list[int]]:
    """Folio's FastMTP decoder (the ``transformers`` engine's) on the tier's two pages, in a
    fresh interpreter: the drafts it keeps at each verifier step, per page."""
    done = subprocess.run(
        [sys.executable, "-c", FOLIO_DECODER, str(checkpoint), str(MAX_TOKENS)],
        env={**os.environ, "FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE": "1"},
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_page_cut_off_under_speculation_asks_for_a_worker_without_it(checkpoint, tmp_path):
    # Ten tokens of the 25 the page needs: no end-of-sequence, which the guard calls a runaway.
    run = decode(
        checkpoint,
        "k1-graphs",
        tmp_path,
        {"FOLIO_VLLM_MAX_TOKENS": "10", "FOLIO_TIER_TRANSCRIBE": "1"},
    )
    page = run["transcribed"]
    assert page["output_tokens"] == 10, page
    assert page["repetition"]["runaway"] and page["repetition"]["reason"] == "no-eos", page
    assert page["handoff"]["to"] == "decode-without-speculation", page


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
    expected_words = tiny_checkpoint.expected_text().split()
    for page in pages:
        assert page["markdown"].split() == expected_words
        assert page["output_tokens"] == len(tiny_checkpoint.expected_output())
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
        assert page["speculation"] == "k1-graphs"
        assert page["spec_decode"]["num_draft_tokens"] > 0
        assert page["ttft_seconds"] > 0
        assert page["finish_reason"] == "stop"
        assert not page["repetition"]["runaway"] and not page["repetition"]["retried"]

    exported = scrape(gpu_worker.metrics_url)
    assert metric(exported, "folio_engine_pages_total") == 2
    draft_tokens = metric(exported, "vllm:spec_decode_num_draft_tokens_total")
    accepted = metric(exported, "vllm:spec_decode_num_accepted_tokens_total")
    drafts = metric(exported, "vllm:spec_decode_num_drafts_total")
    assert draft_tokens > 0 and accepted > 0

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
    record("worker", summary)
    print(json.dumps(summary["prometheus"]), f"pages {summary['pages_out']}/{len(jobs)}")
