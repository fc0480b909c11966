"""The local engine against what it wraps, on the same text-layer pages in one run: bare
``pymupdf4llm.to_markdown(path, pages=[n], use_ocr=False)`` (what a user would call instead),
and the engine's ``transcribe`` of the same page (the page cut out of its file, the text-layer
check, pymupdf4llm with the layout model, then the repairs: Markdown, formulas, right to left,
tables).

    python bench/local_speed.py [--rounds 2] [--limit N] [--pages]

The pages are the real-page set's born-digital pages (``model.quality.realpages``) that have a
text layer. Both sides run in this process, alternating page by page, and which side goes first
alternates too, so that load from other processes on the machine and warm caches fall on both
alike: the figure to read is the ratio (the engine's pages/s over pymupdf4llm's). A third side
is pymupdf4llm asked for HTML tables (``table_output="html"``), as the engine asks it for its
default ``auto`` tables: its table finder then runs over every page. Each side is warmed up
once before the clock runs (the layout model loads on the first page). The bare sides run
pymupdf-layout's model as it comes; the engine runs the one it sets up
(``model.layout_model``: the image network's memory kept between pages).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pymupdf  # noqa: E402

from model.documents import MUPDF_LOCK, PDF  # noqa: E402
from model.engines import pdf_text  # noqa: E402
from model.engines.base import EngineOptions, PageInput  # noqa: E402
from model.engines.local import LocalEngine  # noqa: E402
from model.quality.realpages import CORPUS, load_real_tests, pages_to_run  # noqa: E402


def text_layer_pages() -> list[tuple[str, int]]:
    pages = []
    for pdf, page in pages_to_run(load_real_tests()):
        with MUPDF_LOCK, pymupdf.open(CORPUS / pdf) as doc:
            if not pdf_text.needs_ocr(doc[page - 1]):
                pages.append((pdf, page))
    return pages


def bare(pdf: str, page: int, **kwargs: str) -> float:
    import pymupdf4llm

    engines_model = pymupdf._get_layout
    pymupdf._get_layout = _as_installed()
    try:
        started = time.perf_counter()
        with MUPDF_LOCK:
            pymupdf4llm.to_markdown(str(CORPUS / pdf), pages=[page - 1], use_ocr=False, **kwargs)
        return time.perf_counter() - started
    finally:
        pymupdf._get_layout = engines_model


@functools.cache
def _as_installed() -> Callable[..., Any]:
    """The layout model as pymupdf-layout builds it, for the bare side: the engine rebuilds
    one of its sessions in the process-wide model (``model.layout_model``), which bare
    pymupdf4llm would otherwise use too."""
    from pymupdf.layout import DocumentLayoutAnalyzer

    model = DocumentLayoutAnalyzer.get_model()
    return lambda *args, **kwargs: model.predict(*args, **kwargs)


def engine_page(engine: LocalEngine, data: bytes, page: int) -> float:
    started = time.perf_counter()
    result = engine.transcribe(PageInput(data=data, mime_type=PDF, page_number=page), OPTIONS)
    assert result.method == "text-layer", result.method
    # The review signal's own clock: the layer's lines drawn and read by the recognizer (on a
    # thread of its own, beside pymupdf4llm: its seconds overlap the page's).
    AGREEMENT_SECONDS.append((result.extra.get("agreement") or {}).get("seconds", 0.0))
    return time.perf_counter() - started


AGREEMENT_SECONDS: list[float] = []


OPTIONS = EngineOptions()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--limit", type=int, help="only the first N pages")
    parser.add_argument("--pages", action="store_true", help="print each page's times")
    args = parser.parse_args(argv)
    pages = text_layer_pages()[: args.limit]
    files = {pdf: (CORPUS / pdf).read_bytes() for pdf, _ in pages}
    engine = LocalEngine()
    # The engine first: it sets up the process-wide layout model as it uses it.
    engine_page(engine, files[pages[0][0]], pages[0][1])
    bare(*pages[0])
    AGREEMENT_SECONDS.clear()
    sides = ("pymupdf4llm", "pymupdf4llm html tables", "engine")
    totals = dict.fromkeys(sides, 0.0)
    per_page: dict[tuple[str, int], dict[str, float]] = {p: dict(totals) for p in pages}
    for round_number in range(args.rounds):
        for index, (pdf, page) in enumerate(pages):
            shift = (round_number + index) % len(sides)
            for name in sides[shift:] + sides[:shift]:
                if name == "engine":
                    seconds = engine_page(engine, files[pdf], page)
                elif name == "pymupdf4llm":
                    seconds = bare(pdf, page)
                else:  # what the engine asks of pymupdf4llm for its default ``auto`` tables
                    seconds = bare(pdf, page, table_output="html")
                totals[name] += seconds
                per_page[(pdf, page)][name] += seconds
    counted = len(pages) * args.rounds
    print(f"text-layer pages timed: {len(pages)} pages x {args.rounds} rounds")
    for name, seconds in totals.items():
        print(f"{name}: {counted / seconds:.2f} pages/s")
    for name in sides[:2]:
        print(f"engine/{name} speed ratio: {totals[name] / totals['engine']:.3f}")
    share = sum(AGREEMENT_SECONDS) / totals["engine"]
    print(f"the agreement signal's seconds over the engine's (they overlap): {100 * share:.1f} %")
    if args.pages:
        for (pdf, page), times in sorted(per_page.items(), key=lambda kv: -kv[1]["engine"]):
            print(f"{pdf} p{page}: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
