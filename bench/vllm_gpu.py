"""GPU check: jina-ocr-v1 through Folio's vLLM engine, with and without speculative decoding.

    python bench/vllm_gpu.py --model /models/jina-ocr-v1 [--pages 256] [--concurrency 32]

For a GPU host with vLLM installed (``pip install -e '.[vllm]'``, or the GPU worker image).

Method: synthetic A4 pages (text blocks, a table) are rendered at 144 dpi, as the worker
renders pages, and sent through ``VllmEngine.transcribe`` from ``--concurrency`` threads, the
way a threads-pool worker feeds it; the engine is loaded before the clock starts and the
first ``--warmup`` pages are not timed. For each speculation preset the engine is started
afresh and the script prints pages/s, output tokens/s, mean time to first token, and the
acceptance rate and mean acceptance length from vLLM's ``spec_decode`` counters.

Where the folder holds no weights (only DeepSeek-OCR's ``config.json`` and tokenizer, for a
host without the checkpoint), the weights are random (``load_format=dummy``) and every page
decodes exactly 1,085 tokens, as in the published measurement; MTP presets then fall back to
no speculation (a dummy draft head accepts nothing worth measuring) and only ``off`` and
``ngram-k3`` are compared. Nothing is downloaded: fetch the checkpoint beforehand (README).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.documents import PDF  # noqa: E402
from model.engines.base import EngineOptions, PageInput  # noqa: E402
from model.engines.vllm import metrics  # noqa: E402
from model.engines.vllm.config import PRESETS, VllmConfig, has_draft_head  # noqa: E402
from model.engines.vllm.engine import VllmEngine  # noqa: E402

PUBLISHED_OUTPUT_TOKENS = 1085
LOREM = (
    "Folio measures the throughput of its GPU engine on pages like this one: paragraphs of "
    "running text, a heading or two and a small table, rendered the way the worker renders. "
)


def synthetic_pdf(pages: int) -> bytes:
    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page(width=595, height=842)
        page.insert_text((56, 70), f"Section {number}: quarterly figures", fontsize=16)
        page.insert_textbox(pymupdf.Rect(56, 90, 540, 520), LOREM * 8, fontsize=10)
        for row in range(6):
            y = 540 + row * 22
            for col, x in enumerate((56, 220, 380)):
                page.insert_text((x, y), f"r{row}c{col} {number * 7 + row * 3 + col}", fontsize=10)
    try:
        return doc.tobytes()
    finally:
        doc.close()


def has_weights(model: Path) -> bool:
    return any(model.glob("*.safetensors")) or any(model.glob("*.bin"))


def run(preset: str, args: argparse.Namespace, document: bytes) -> dict:
    dummy = not has_weights(args.model)
    engine_args = {"gpu_memory_utilization": args.gpu_memory_utilization}
    if dummy:
        engine_args["load_format"] = "dummy"
    config = VllmConfig(
        model=str(args.model),
        speculation=PRESETS[preset],
        pages_in_flight=args.concurrency,
        max_tokens=args.max_tokens,
        extra_args=engine_args,
        fixed_output_tokens=PUBLISHED_OUTPUT_TOKENS if dummy else 0,
        # The bench measures throughput; a runaway page is a figure, not a retry.
        repetition_fallback=False,
    )
    engine = VllmEngine(config)
    engine.load()
    try:
        pages = [PageInput(document, PDF, n) for n in range(1, args.pages + 1)]
        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(lambda p: engine.transcribe(p, EngineOptions()), pages[: args.warmup]))
            before = metrics.spec_decode_totals()
            started = time.perf_counter()
            results = list(
                pool.map(lambda p: engine.transcribe(p, EngineOptions()), pages[args.warmup :])
            )
            wall = time.perf_counter() - started
        after = metrics.spec_decode_totals()
    finally:
        engine.close()
    output_tokens = sum(r.output_tokens for r in results)
    ttfts = [r.extra["ttft_seconds"] for r in results if r.extra.get("ttft_seconds")]
    figures = {
        "preset": preset,
        "speculation": engine_status_speculation(results),
        "dummy_weights": dummy,
        "pages": len(results),
        "seconds": round(wall, 2),
        "pages_per_second": round(len(results) / wall, 3),
        "output_tokens_per_second": round(output_tokens / wall, 1),
        "mean_output_tokens": round(output_tokens / len(results), 1),
        "mean_ttft_seconds": round(statistics.fmean(ttfts), 3) if ttfts else None,
    }
    if after and after.get("draft_tokens", 0) > before.get("draft_tokens", 0):
        drafts = after["drafts"] - before["drafts"]
        draft_tokens = after["draft_tokens"] - before["draft_tokens"]
        accepted = after["accepted_tokens"] - before["accepted_tokens"]
        figures["acceptance_rate"] = round(accepted / draft_tokens, 3)
        figures["mean_acceptance_length"] = round(1 + accepted / drafts, 3) if drafts else None
    return figures


def engine_status_speculation(results: list) -> str:
    return str(results[0].extra.get("speculation")) if results else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="checkpoint folder")
    parser.add_argument("--pages", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=8192)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    parser.add_argument("--presets", default="", help="comma-separated; default: all that apply")
    args = parser.parse_args()
    if not (args.model / "config.json").is_file():
        parser.error(f"{args.model} has no config.json: download the checkpoint first (README)")
    presets = [p for p in args.presets.split(",") if p] or (
        ["off", "k3-eager", "k1-graphs"]
        if has_draft_head(str(args.model)) and has_weights(args.model)
        else ["off", "ngram-k3"]
    )
    document = synthetic_pdf(args.pages)
    rows = [run(preset, args, document) for preset in presets]
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
