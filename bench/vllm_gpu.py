"""GPU bench: jina-ocr-v1 through Folio's vLLM engine, measured the way the seeds report it.

    python bench/vllm_gpu.py --model /models/jina-ocr-v1 --pages 200 --figures /tmp/quick.json
    python bench/vllm_gpu.py --model /models/jina-ocr-v1 --estimate-from /tmp/quick.json
    python bench/vllm_gpu.py --model /models/jina-ocr-v1 --dry-run      # the plan, nothing run

For a GPU host with vLLM (the GPU worker image, or ``pip install -e '.[vllm]'``); nothing is
downloaded. docs/GPU.md says when in the first run to use it. ``--dry-run`` prints the plan
(presets, pages, prompt, constraints, expected duration) as one ``plan {...}`` JSON line and
imports no vLLM: it runs anywhere, and a test holds it to this docstring.

Pages, like the seeds' (about 1,000 output tokens a page, mixed documents): every page of every
readable PDF in the shared corpora (``../shared/corpus/``) whose text layer holds at least
``--min-chars`` characters (2,000, about 570 tokens at ``CHARS_PER_TOKEN``: the mean then
lands near the seeds' once formulas and tables are written out as LaTeX and HTML; blank and
one-line pages measure start-up, not decoding), at most
``--per-document`` of them per document (8, spread through it: one long maths book holds more
than half the corpus's pages), interleaved document by document. They are rendered the way the
worker renders them and handed out round-robin until ``--pages`` transcriptions are done (a
page's text is the same on every visit at batch 1; the identity figures below use that).

The same constraints for every preset: DeepSeek-OCR's n-gram blocker is OFF for all of them.
vLLM refuses the logits processor while speculation is on (docs/GPU.md), so the only way to
decode every preset alike is without it; a page that runs away without it is counted apart.

Method, for each preset in turn (a fresh engine each, loaded before any clock starts):

1. Throughput at ``--concurrency`` (32): as many threads call ``VllmEngine.transcribe`` as a
   threads-pool worker does, so vLLM batches up to that many pages; the first ``--warmup``
   pages are not timed, and from their rate the timed part's expected duration is printed
   before it starts. Printed: pages/s and output tokens/s over every timed page; output tokens
   per page over the pages that ended cleanly; runaway pages (the repetition guard's verdict:
   no end-of-sequence within the cap, or a repeating tail) counted, with their tokens per page,
   apart; mean time to first token; from vLLM's ``vllm:spec_decode_*`` counters over the timed
   pages, the acceptance rate (accepted / proposed draft tokens) and tokens per step (1 +
   accepted / drafts, vLLM's mean acceptance length).
2. Batch-1 decode speed: ``--batch1-pages`` pages one at a time; per page, output tokens over
   (decode time - time to first token), the decoding phase alone; the median.

Presets, the seeds' matrix: K=0, 1, 3 (``off``, ``k1-*``, ``k3-*``) each eager and with CUDA
graphs. The baseline is ``off`` (graphs, no speculation: what a user would run without a draft
head); every preset's batch-1 tok/s and pages/s are also printed as a ratio to it.

Host memory: during the throughput run a thread sums, every second, the proportional set size
(PSS: shared pages counted once) of this process and all its children (vLLM's engine core runs
in one), as a container's memory limit charges them; the peak is printed as
``host_memory_peak_mib``, the figure the GPU worker's memory request and limit are set from
(docs/DEPLOY.md, "Sizing").


Identity, worded for what it is. Greedy verification commits only the verifier's own argmax, so
speculation cannot change the text in exact arithmetic; in bfloat16 at concurrency 32 the
kernels are batch-variant (a page's logits depend on what it is batched with), so text is not
byte-identical even between two runs of one preset. So:
- exactness is checked where it is claimed: ``--exact-pages`` pages (8) at batch 1 in float32,
  a fresh engine per preset; ``float32 batch-1 text identical across presets: yes|no``, and the
  exit status is 1 on ``no``;
- at concurrency 32 in bfloat16 the share of pages whose text equals the baseline's on every
  visit is reported, not asserted.

The prompt is the worker's (``FOLIO_VLLM_PROMPT``, else jina-ocr-v1's short one) unless
``--prompt short|long`` names one of the two public ones (``model/engines/vllm/prompt.py``); the
plan says which was used. The seeds' figures to set beside these: with CUDA graphs K=1 is the
best point (158.3 → 185.6 tok/s at batch 1), K=3 pays only in eager mode.
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
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pymupdf

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from model.engines.vllm.config import PRESETS, VllmConfig  # noqa: E402
from model.engines.vllm.prompt import PROMPTS, prompt_name  # noqa: E402

CORPUS = REPOSITORY.parent / "shared" / "corpus"
# K=0/1/3 × eager/graphs, the baseline (``off``) first after its eager twin.
MATRIX = ("off-eager", "off", "k1-eager", "k1-graphs", "k3-eager", "k3-graphs")
BASELINE = "off"
# A rough figure for English and LaTeX text in DeepSeek's tokenizer: only for choosing pages
# and estimating; the run measures the real tokens per page.
CHARS_PER_TOKEN = 3.5
CONSTRAINTS = "n-gram blocker off for every preset (vLLM refuses it under speculation)"


# --- planning (no vLLM) ---------------------------------------------------------------------


def corpus_pages(corpus: Path, *, min_chars: int, per_document: int) -> list[dict[str, Any]]:
    """The pages to measure on: see the module docstring. Each is a dict with the document's
    path (relative to ``corpus``), the page number and its text layer's length."""
    documents: list[list[dict[str, Any]]] = []
    for path in sorted(corpus.rglob("*.pdf")):
        try:
            with pymupdf.open(path) as doc:
                if doc.needs_pass:
                    continue
                lengths = [len(page.get_text()) for page in doc]
        except Exception:  # a deliberately broken sample: not a page to measure on
            continue
        name = str(path.relative_to(corpus))
        dense = [
            {"document": name, "page": n, "chars": c}
            for n, c in enumerate(lengths, start=1)
            if c >= min_chars
        ]
        if len(dense) > per_document:  # evenly spread, first and last kept
            step = (len(dense) - 1) / max(per_document - 1, 1)
            dense = [dense[round(i * step)] for i in range(per_document)]
        if dense:
            documents.append(dense)
    # One page of each document in turn, so that any prefix of the work is mixed too.
    interleaved = itertools.chain.from_iterable(itertools.zip_longest(*documents))
    return [page for page in interleaved if page is not None]


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


def expected_seconds(plan: dict[str, Any], figures: dict[str, Any]) -> float | None:
    """The run's duration from an earlier run's figures (``--figures``): per preset, its
    load, its warm-up and timed pages at its pages/s, its batch-1 pages at its batch-1 rate and
    tokens per page, and its exact pages the same way. None when a preset has no figure."""
    total = 0.0
    for preset in plan["presets"]:
        row = figures.get(preset)
        if not row or not row.get("pages_per_second"):
            return None
        total += row.get("load_seconds", 0) * (2 if plan["exact_pages"] else 1)
        total += (plan["pages"] + plan["warmup"]) / row["pages_per_second"]
        per_page = row.get("output_tokens_per_page") or 0
        rate = row.get("batch1_decode_tokens_per_second") or 0
        if rate:
            total += (plan["batch1_pages"] + plan["exact_pages"]) * per_page / rate
    return round(total, 1)


def make_plan(args: argparse.Namespace, pages: list[dict[str, Any]]) -> dict[str, Any]:
    instruction = PROMPTS[args.prompt] if args.prompt != "configured" else _configured_prompt()
    chars = [p["chars"] for p in pages]
    plan: dict[str, Any] = {
        "presets": list(args.presets),
        "baseline": BASELINE,
        "constraints": CONSTRAINTS,
        "concurrency": args.concurrency,
        "pages": args.pages,
        "warmup": args.warmup,
        "batch1_pages": args.batch1_pages,
        "exact_pages": args.exact_pages,
        "exact_dtype": "float32",
        "max_tokens": args.max_tokens,
        "distinct_pages": len(pages),
        "documents": len({p["document"] for p in pages}),
        "most_pages_of_one_document": max(
            (sum(q["document"] == p["document"] for q in pages) for p in pages), default=0
        ),
        "estimated_output_tokens_per_page": round(statistics.fmean(chars) / CHARS_PER_TOKEN)
        if chars
        else None,
        "prompt": prompt_name(instruction),
        "prompt_text": instruction,
        "expected_seconds": None,
    }
    if args.estimate_from:
        plan["expected_seconds"] = expected_seconds(
            plan, json.loads(args.estimate_from.read_text())
        )
    return plan


def _configured_prompt() -> str:
    # The worker's own reading of FOLIO_VLLM_PROMPT (the model path is not needed for it).
    return VllmConfig.from_env({**os.environ, "FOLIO_VLLM_MODEL": "-"}).prompt


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="checkpoint folder")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--pages", type=int, default=1000, help="timed pages per preset")
    parser.add_argument("--warmup", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--batch1-pages", type=int, default=16)
    parser.add_argument("--exact-pages", type=int, default=8, help="float32 batch-1; 0: skip")
    parser.add_argument("--min-chars", type=int, default=2000)
    parser.add_argument("--per-document", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=8192)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    parser.add_argument("--presets", default=",".join(MATRIX), help="comma-separated")
    parser.add_argument("--prompt", choices=["configured", *PROMPTS], default="configured")
    parser.add_argument("--dump", type=Path, help="write each page's Markdown under DIR/PRESET/")
    parser.add_argument("--figures", type=Path, help="write the per-preset figures as JSON")
    parser.add_argument("--estimate-from", type=Path, help="an earlier run's --figures file")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    args = parser.parse_args(argv)
    args.presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    unknown = [p for p in args.presets if p not in PRESETS]
    if unknown:
        parser.error(f"unknown presets {unknown}: choose from {', '.join(PRESETS)}")
    if BASELINE not in args.presets:
        parser.error(f"--presets must include the baseline, {BASELINE}")
    for name in ("pages", "concurrency"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    for name in ("warmup", "batch1_pages", "exact_pages"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} cannot be negative")
    if not (args.model / "config.json").is_file():
        parser.error(f"{args.model} has no config.json: download the checkpoint first (README)")
    if args.estimate_from and not args.estimate_from.is_file():
        parser.error(f"--estimate-from {args.estimate_from}: no such file")
    return args


# --- measuring (vLLM) -----------------------------------------------------------------------


def engine_for(preset: str, args: argparse.Namespace, instruction: str, **extra: Any):
    """Folio's engine with the worker's settings and the bench's on top: the preset, the
    blocker off (``CONSTRAINTS``), the prompt; ``extra`` engine arguments (float32)."""
    from model.engines.vllm.engine import VllmEngine

    base = VllmConfig.from_env({**os.environ, "FOLIO_VLLM_MODEL": str(args.model)})
    config = replace(
        base,
        speculation=PRESETS[preset],
        pages_in_flight=args.concurrency,
        max_tokens=args.max_tokens,
        prompt=instruction,
        ngram_blocker=False,
        extra_args={
            **base.extra_args,
            "gpu_memory_utilization": args.gpu_memory_utilization,
            **extra,
        },
    )
    return VllmEngine(config)


def transcribe(engine, page: dict[str, Any], data: dict[str, bytes]):
    from model.documents import PDF
    from model.engines.base import EngineOptions, PageInput

    page_input = PageInput(data[page["document"]], PDF, page["page"])
    return engine.transcribe(page_input, EngineOptions())


def digest(markdown: str) -> str:
    return hashlib.sha256(markdown.encode()).hexdigest()[:16]


def key(page: dict[str, Any]) -> str:
    return f"{page['document']}#{page['page']}"


def throughput(preset: str, args, plan, pages, data) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    from model.engines.vllm import metrics

    engine = engine_for(preset, args, plan["prompt_text"])
    started = time.perf_counter()
    engine.load()
    load_seconds = time.perf_counter() - started
    work = list(itertools.islice(itertools.cycle(pages), args.pages + args.warmup))

    def one(page):
        return page, transcribe(engine, page, data)

    try:
        with ThreadPoolExecutor(args.concurrency) as pool, HostMemoryPeak() as host_memory:
            warm_start = time.perf_counter()
            list(pool.map(one, work[: args.warmup]))
            if args.warmup:
                rate = args.warmup / (time.perf_counter() - warm_start)
                print(
                    f"{preset}: {args.pages} timed pages expected to take "
                    f"{args.pages / rate / 60:.1f} min (warm-up rate {rate:.2f} pages/s)",
                    flush=True,
                )
            before = metrics.spec_decode_totals()
            started = time.perf_counter()
            results = list(pool.map(one, work[args.warmup :]))
            wall = time.perf_counter() - started
        after = metrics.spec_decode_totals()
        batch1 = []
        for page in pages[: args.batch1_pages]:
            result = transcribe(engine, page, data)
            decode = (result.extra.get("decode_seconds") or 0) - (
                result.extra.get("ttft_seconds") or 0
            )
            if decode > 0 and result.output_tokens > 1:
                batch1.append((result.output_tokens - 1) / decode)
        status = dict(engine.status)
    finally:
        engine.close()
    runaway = [r for _, r in results if (r.extra.get("repetition") or {}).get("runaway")]
    clean = [r for _, r in results if not (r.extra.get("repetition") or {}).get("runaway")]
    ttfts = [r.extra["ttft_seconds"] for _, r in results if r.extra.get("ttft_seconds")]
    texts: dict[str, set[str]] = {}
    for page, r in results:
        texts.setdefault(key(page), set()).add(digest(r.markdown))
    figures: dict[str, Any] = {
        "preset": preset,
        "speculation": status.get("speculation"),
        "ngram_blocker": status.get("ngram_blocker"),
        "load_seconds": round(load_seconds, 1),
        "pages": len(results),
        "concurrency": args.concurrency,
        "seconds": round(wall, 2),
        "pages_per_second": round(len(results) / wall, 3),
        "output_tokens_per_second": round(sum(r.output_tokens for _, r in results) / wall, 1),
        "output_tokens_per_page": round(statistics.fmean(r.output_tokens for r in clean), 1)
        if clean
        else None,
        "runaway_pages": len(runaway),
        "runaway_output_tokens_per_page": round(
            statistics.fmean(r.output_tokens for r in runaway), 1
        )
        if runaway
        else None,
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
    figures["_texts"] = {k: sorted(v) for k, v in texts.items()}
    if args.dump:
        folder = args.dump / preset
        folder.mkdir(parents=True, exist_ok=True)
        for page, r in results:
            (folder / f"{key(page).replace('/', '_')}.md").write_text(r.markdown)
    return figures


def exact_texts(preset: str, args, plan, pages, data) -> dict[str, str]:
    """``--exact-pages`` pages at batch 1 in float32, a fresh engine: page -> text digest."""
    engine = engine_for(preset, args, plan["prompt_text"], dtype="float32", max_num_seqs=1)
    engine.load()
    try:
        return {
            key(page): digest(transcribe(engine, page, data).markdown)
            for page in pages[: args.exact_pages]
        }
    finally:
        engine.close()


def share_identical(rows: list[dict[str, Any]], baseline: dict[str, Any]) -> dict[str, float]:
    """Per preset, the share of pages whose every visit's text is the baseline's one text."""
    reference = {page: hashes for page, hashes in baseline["_texts"].items() if len(hashes) == 1}
    shares = {}
    for row in rows:
        same = sum(row["_texts"].get(page) == hashes for page, hashes in reference.items())
        shares[row["preset"]] = round(same / len(baseline["_texts"]), 3)
    return shares


def ratios(row: dict[str, Any], baseline: dict[str, Any]) -> dict[str, float | None]:
    def ratio(name: str) -> float | None:
        a, b = row.get(name), baseline.get(name)
        return round(a / b, 3) if a and b else None

    return {
        "batch1_vs_baseline": ratio("batch1_decode_tokens_per_second"),
        "pages_per_second_vs_baseline": ratio("pages_per_second"),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    pages = corpus_pages(args.corpus, min_chars=args.min_chars, per_document=args.per_document)
    if not pages:
        print(f"no PDF page of {args.min_chars}+ characters under {args.corpus}", file=sys.stderr)
        return 2
    plan = make_plan(args, pages)
    print("plan " + json.dumps(plan), flush=True)
    if plan["expected_seconds"] is not None:
        print(f"expected duration: {plan['expected_seconds'] / 60:.0f} min", flush=True)
    else:
        print("expected duration: unknown (run --pages 200 --figures F first, then pass F"
              " to --estimate-from)", flush=True)  # fmt: skip
    if args.dry_run:
        return 0
    data = {name: (args.corpus / name).read_bytes() for name in {p["document"] for p in pages}}
    rows = [throughput(preset, args, plan, pages, data) for preset in args.presets]
    baseline = next(row for row in rows if row["preset"] == BASELINE)
    shares = share_identical(rows, baseline)
    for row in rows:
        row.update(ratios(row, baseline), identical_to_baseline_share=shares[row["preset"]])
        print(json.dumps({k: v for k, v in row.items() if not k.startswith("_")}), flush=True)
    if args.figures:
        figures = {r["preset"]: {k: v for k, v in r.items() if not k.startswith("_")} for r in rows}
        args.figures.write_text(json.dumps(figures, indent=2))
    print(
        f"bfloat16, concurrency {args.concurrency}: share of pages identical to {BASELINE} on"
        f" every visit: {json.dumps(shares)} (batch-variant kernels: not expected to be 1)",
        flush=True,
    )
    if not args.exact_pages:
        return 0
    exact = {preset: exact_texts(preset, args, plan, pages, data) for preset in args.presets}
    differing = sorted(
        {
            page
            for texts in exact.values()
            for page, h in texts.items()
            if exact[BASELINE][page] != h
        }
    )
    same = not differing
    print(
        f"float32 batch-1 text identical across presets: {'yes' if same else 'no'}"
        f" ({args.exact_pages} pages)",
        flush=True,
    )
    if differing:
        print(f"pages that differ in float32 at batch 1: {', '.join(differing)}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
