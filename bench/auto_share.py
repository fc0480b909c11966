"""The ``auto`` engine on the shared corpus: how many pages go to the VLM, which of them needed
it, and what the VLM pass costs.

    python bench/auto_share.py --recording DIR [--suite real --suite real-scans] \
        [--threshold 0.5] [--max-new-tokens 40] [--json FILE]

Method. ``DIR`` is a recording made by ``bench/review.py --record DIR``: each page's ``local``
reading (the first reader of every ``auto`` page) is replayed through the service's pipeline
(``model.pipeline.transcribe_page``), which gives it its review score; ``local``'s seconds are
those the recording measured. A page escalates by the service's own rule
(``model.engines.auto.escalates`` at the threshold: ``FOLIO_AUTO_THRESHOLD``'s default unless
``--threshold``), and an escalated page is read again, here, in this process, by the
``transformers`` engine on the tiny checkpoint in jina-ocr-v1's layout that the tests build
(``tests/vllm/tiny_checkpoint.py``: real safetensors and remote code, on the CPU, nothing
downloaded), through the same pipeline; the reading kept is chosen by
``model.engines.auto.keep_reading``. The VLM's seconds are timed around its pass.

Printed: at the default threshold, the share of pages escalated, how many of them fail a
test (the pages that needed another reading) and how many failing pages stayed with
``local``; the seconds ``local`` took and those the VLM pass took; then the same share and
catch over a sweep of thresholds (from the stored scores, no VLM pass), which is the curve of
pages sent against failing pages sent. What this cannot say: whether the VLM's reading is
better. The tiny checkpoint writes the same two dozen words whatever the page shows, so the
tests on the kept readings measure the keeping rule against a useless reader, not
jina-ocr-v1's quality; and its seconds a page are not a real VLM's on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from model import pipeline  # noqa: E402
from model.documents import PDF  # noqa: E402
from model.engines.auto import DEFAULT_THRESHOLD, escalates, keep_reading  # noqa: E402
from model.engines.base import EngineOptions, PageInput, PageResult  # noqa: E402
from model.quality import realpages  # noqa: E402
from model.quality.checks import PageTest  # noqa: E402
from model.quality.recorded import ReplayEngine  # noqa: E402
from model.quality.run import parse_options  # noqa: E402
from tests.vllm import tiny_checkpoint  # noqa: E402

SUITES = ("real", "real-scans")
SWEEP = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def suite_pages(suite: str, recording: Path) -> tuple[Path, list[tuple[str, int]], list[PageTest]]:
    """The suite's tested pages, where their PDFs lie, and their tests (as ``bench/review.py``
    reads them)."""
    tests = realpages.load_real_tests()
    pages = sorted({(t.pdf, t.page) for t in tests})
    if suite == "real":
        return realpages.CORPUS, pages, tests
    scans = recording / "scans"
    realpages.build_scans(pages, scans, realpages.CORPUS)
    return (
        scans,
        [(realpages.scan_name(pdf, n), 1) for pdf, n in pages],
        realpages.scan_tests(tests),
    )


def passes(markdown: str, tests: list[PageTest]) -> bool:
    return all(test.run(markdown)[0] for test in tests)


def load_vlm(max_new_tokens: int, folder: Path) -> Any:
    from model.engines.transformers_engine import TransformersEngine

    os.environ["FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE"] = "1"
    checkpoint = tiny_checkpoint.write(folder)
    engine = TransformersEngine(
        checkpoint, k=0, device="cpu", dtype=None, max_new_tokens=max_new_tokens
    )
    engine.load()
    return engine


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    options: EngineOptions = parse_options([])
    pages_seen: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        vlm = None
        for suite in args.suite or SUITES:
            local = ReplayEngine(args.recording / suite / "readings")
            local.load()
            root, pages, tests = suite_pages(suite, args.recording)
            for pdf, number in pages:
                page = PageInput((root / pdf).read_bytes(), PDF, number)
                page_tests = [t for t in tests if (t.pdf, t.page) == (pdf, number)]
                first: PageResult = pipeline.transcribe_page(local, page, options)
                quality = first.extra.get("quality") or {}
                score = float(quality.get("score") or 0.0)
                seen = {
                    "suite": suite,
                    "page": f"{pdf}#{number}",
                    "score": score,
                    "local_s": first.engine_seconds,
                    "local_passes": passes(first.markdown, page_tests),
                    "escalated": escalates(score, args.threshold),
                }
                if seen["escalated"]:
                    if vlm is None:
                        vlm = load_vlm(args.max_new_tokens, Path(tmp) / "tiny")
                    started = time.perf_counter()
                    second = pipeline.transcribe_page(vlm, page, options)
                    seen["vlm_s"] = time.perf_counter() - started
                    choice = keep_reading(
                        local_markdown=first.markdown,
                        local_quality=quality,
                        vlm_markdown=second.markdown,
                        vlm_quality=second.extra.get("quality") or {},
                    )
                    kept = second if choice.kept == "vlm" else first
                    seen.update(kept=choice.kept, why=choice.why)
                    seen["kept_passes"] = passes(kept.markdown, page_tests)
                pages_seen.append(seen)
    return pages_seen


def report(pages: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    sent = [p for p in pages if p["escalated"]]
    failing = [p for p in pages if not p["local_passes"]]
    local_s = sum(p["local_s"] for p in pages)
    vlm_s = sum(p.get("vlm_s", 0.0) for p in sent)
    kept_vlm = sum(1 for p in sent if p.get("kept") == "vlm")
    print(f"{len(pages)} pages, threshold {threshold}\n")
    print(f"- escalated: {len(sent)} ({len(sent) / len(pages):.0%} of the pages)")
    print(
        f"- of the {len(failing)} pages whose local reading fails a test, "
        f"{sum(1 for p in failing if p['escalated'])} escalated, "
        f"{sum(1 for p in failing if not p['escalated'])} stayed with local"
    )
    print(f"- escalated pages whose local reading passed every test: "
          f"{sum(1 for p in sent if p['local_passes'])}")  # fmt: skip
    print(f"- the VLM's reading kept on {kept_vlm} of {len(sent)}; the local one on the rest")
    print(
        f"- local: {local_s:.1f} s for all pages ({local_s / len(pages):.2f} s a page, as "
        f"recorded); VLM pass: {vlm_s:.1f} s for the escalated pages "
        f"({vlm_s / max(len(sent), 1):.2f} s a page), {vlm_s / max(local_s, 1e-9):.2f} of "
        "local's time on top"
    )
    print(
        f"- pages passing every test: local alone {sum(p['local_passes'] for p in pages)}, "
        f"auto {sum(p.get('kept_passes', p['local_passes']) for p in pages)} (the tiny "
        "checkpoint cannot read: see the docstring)"
    )
    print("\n| threshold | escalated | failing pages escalated | clean pages escalated |")
    print("|---|---|---|---|")
    clean = [p for p in pages if p["local_passes"]]
    for t in SWEEP:
        up = [p for p in pages if escalates(p["score"], t)]
        print(
            f"| {t} | {len(up) / len(pages):.0%} ({len(up)}/{len(pages)}) "
            f"| {sum(1 for p in failing if escalates(p['score'], t))}/{len(failing)} "
            f"| {sum(1 for p in clean if escalates(p['score'], t))}/{len(clean)} |"
        )
    return {"pages": pages, "local_s": local_s, "vlm_s": vlm_s, "escalated": len(sent)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recording", type=Path, required=True)
    parser.add_argument("--suite", action="append", choices=SUITES)
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    found = report(run(args), args.threshold)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
