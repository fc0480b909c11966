"""GPU bench: jina-ocr-v1 through Folio's vLLM engine, measured the way the seeds report it.

    python bench/vllm_gpu.py --model /models/jina-ocr-v1 [--pages 1000] [--concurrency 32]
                             [--presets off-eager,off,k1-graphs,k3-eager] [--batch1-pages 16]

For a GPU host with vLLM (the GPU worker image, or ``pip install -e '.[vllm]'``); nothing is
downloaded. docs/GPU.md says when in the first run to use it.

Pages: every page of every readable PDF in the shared corpora (``../shared/corpus/`` next to
the checkout: py-pdf's sample files and docling's test PDFs, 216 pages when this was written),
rendered the way the worker renders them (``model.rendering``), handed out round-robin until
``--pages`` pages have been transcribed (so 1,000 pages visit each real page four to five
times; the text of one page is the same on every visit, which the identity check uses too).

Method, for each preset in turn (a fresh engine each, loaded before any clock starts):

1. Throughput: ``--concurrency`` threads call ``VllmEngine.transcribe`` as a threads-pool worker
   does (so vLLM batches up to that many pages); the first ``--warmup`` pages are not timed.
   Printed: pages/s, output tokens/s, mean output tokens per page, mean time to first token,
   and from vLLM's ``vllm:spec_decode_*`` counters over the timed pages the acceptance rate
   (accepted / proposed draft tokens) and tokens per step (1 + accepted / drafts, vLLM's mean
   acceptance length).
2. Batch-1 decode speed: ``--batch1-pages`` pages one at a time; per page, output tokens over
   (decode time - time to first token), i.e. tokens/s of the decoding phase alone; the median.

Presets: ``off-eager`` and ``off`` (no speculation, eager and with CUDA graphs), ``k1-graphs``
and ``k3-eager`` (FastMTP at K=1 with graphs and K=3 eager), so batch-1 figures come for
eager and graphs, with and without speculation.

Host memory: during the throughput run a thread sums, every second, the proportional set size
(PSS: shared pages counted once) of this process and all its children (vLLM's engine core runs
in one), as a container's memory limit charges them; the peak is printed as
``host_memory_peak_mib``, the figure the GPU worker's memory request and limit are set from
(docs/DEPLOY.md, "Sizing").

Identity: greedy decoding with speculation must give the same text as without, page for page.
Each preset's text per page is hashed; the last line says whether every preset agrees with the
first one, and lists the pages that differ otherwise.

The seeds' figures to set beside these: with CUDA graphs K=1 is the best point (158.3 → 185.6
tok/s at batch 1), K=3 pays only in eager mode.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import psutil
import pymupdf

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from model.documents import PDF  # noqa: E402
from model.engines.base import EngineOptions, PageInput  # noqa: E402
from model.engines.vllm import metrics  # noqa: E402
from model.engines.vllm.config import PRESETS, VllmConfig  # noqa: E402
from model.engines.vllm.engine import VllmEngine  # noqa: E402

CORPUS = REPOSITORY.parent / "shared" / "corpus"
DEFAULT_PRESETS = "off-eager,off,k1-graphs,k3-eager"


def corpus_pages(corpus: Path) -> list[tuple[str, bytes, int]]:
    """(name, pdf bytes, page number) for every page of every PDF that opens without a
    password."""
    pages = []
    for path in sorted(corpus.rglob("*.pdf")):
        try:
            with pymupdf.open(path) as doc:
                if doc.needs_pass:
                    continue
                count = doc.page_count
        except Exception:  # a deliberately broken sample: not a page to measure on
            continue
        data = path.read_bytes()
        name = str(path.relative_to(corpus))
        pages.extend((name, data, n) for n in range(1, count + 1))
    return pages


class HostMemoryPeak:
    """The largest PSS of this process and its children, summed, sampled every second while
    the ``with`` block runs (MiB)."""

    def __init__(self) -> None:
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for process in [me, *me.children(recursive=True)]:
                try:
                    total += process.memory_full_info().pss
                except psutil.Error:
                    continue  # a child that ended between the listing and the read
            self.peak_mib = max(self.peak_mib, total / 2**20)
            self._stop.wait(1.0)

    def __enter__(self) -> HostMemoryPeak:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run(preset: str, args: argparse.Namespace, pages: list) -> dict:
    # The worker's own settings (FOLIO_VLLM_PROMPT and the rest), with the bench's on top.
    base = VllmConfig.from_env({**os.environ, "FOLIO_VLLM_MODEL": str(args.model)})
    config = replace(
        base,
        speculation=PRESETS[preset],
        pages_in_flight=args.concurrency,
        max_tokens=args.max_tokens,
        extra_args={**base.extra_args, "gpu_memory_utilization": args.gpu_memory_utilization},
    )
    engine = VllmEngine(config)
    engine.load()
    work = list(itertools.islice(itertools.cycle(pages), args.pages + args.warmup))

    def one(page):
        name, data, number = page
        result = engine.transcribe(PageInput(data, PDF, number), EngineOptions())
        return name, number, result

    try:
        with ThreadPoolExecutor(args.concurrency) as pool, HostMemoryPeak() as host_memory:
            list(pool.map(one, work[: args.warmup]))
            before = metrics.spec_decode_totals()
            started = time.perf_counter()
            results = list(pool.map(one, work[args.warmup :]))
            wall = time.perf_counter() - started
        after = metrics.spec_decode_totals()
        batch1 = []
        for page in pages[: args.batch1_pages]:
            _, _, result = one(page)
            decode = (result.extra.get("decode_seconds") or 0) - (
                result.extra.get("ttft_seconds") or 0
            )
            if decode > 0 and result.output_tokens > 1:
                batch1.append((result.output_tokens - 1) / decode)
        status = dict(engine.status)
    finally:
        engine.close()
    output_tokens = sum(r.output_tokens for _, _, r in results)
    ttfts = [r.extra["ttft_seconds"] for _, _, r in results if r.extra.get("ttft_seconds")]
    texts = {
        f"{name}#{number}": hashlib.sha256(r.markdown.encode()).hexdigest()[:16]
        for name, number, r in results
    }
    figures = {
        "preset": preset,
        "speculation": status.get("speculation"),
        "pages": len(results),
        "concurrency": args.concurrency,
        "seconds": round(wall, 2),
        "pages_per_second": round(len(results) / wall, 3),
        "output_tokens_per_second": round(output_tokens / wall, 1),
        "output_tokens_per_page": round(output_tokens / len(results), 1),
        "mean_ttft_seconds": round(statistics.fmean(ttfts), 3) if ttfts else None,
        "batch1_decode_tokens_per_second": round(statistics.median(batch1), 1) if batch1 else None,
        "batch1_pages": len(batch1),
        "host_memory_peak_mib": round(host_memory.peak_mib),
    }
    if after and after.get("draft_tokens", 0) > before.get("draft_tokens", 0):
        drafts = after["drafts"] - before["drafts"]
        draft_tokens = after["draft_tokens"] - before["draft_tokens"]
        accepted = after["accepted_tokens"] - before["accepted_tokens"]
        figures["acceptance_rate"] = round(accepted / draft_tokens, 3)
        figures["tokens_per_step"] = round(1 + accepted / drafts, 3) if drafts else None
    figures["_texts"] = texts
    if args.dump:
        folder = args.dump / preset
        folder.mkdir(parents=True, exist_ok=True)
        for name, number, r in results:
            (folder / f"{name.replace('/', '_')}#{number}.md").write_text(r.markdown)
    return figures


def identity(rows: list[dict]) -> tuple[bool, list[str]]:
    """Whether every preset's text equals the first preset's, page for page."""
    first = rows[0]["_texts"]
    differing = {
        page
        for row in rows[1:]
        for page, digest in row["_texts"].items()
        if first.get(page) != digest
    }
    return not differing, sorted(differing)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="checkpoint folder")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--batch1-pages", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=8192)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    parser.add_argument("--presets", default=DEFAULT_PRESETS, help="comma-separated")
    parser.add_argument("--dump", type=Path, help="write each page's Markdown under DIR/PRESET/")
    args = parser.parse_args()
    if not (args.model / "config.json").is_file():
        parser.error(f"{args.model} has no config.json: download the checkpoint first (README)")
    pages = corpus_pages(args.corpus)
    if not pages:
        parser.error(f"no readable PDF pages under {args.corpus}")
    print(f"{len(pages)} corpus pages; {args.pages} timed transcriptions per preset", flush=True)
    rows = []
    for preset in args.presets.split(","):
        row = run(preset.strip(), args, pages)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.startswith("_")}), flush=True)
    same, differing = identity(rows)
    print(f"text identical across presets: {'yes' if same else 'no'}", flush=True)
    if differing:
        print(f"pages that differ: {', '.join(differing[:50])}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
