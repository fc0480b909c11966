"""What the local engine's text-layer repairs cost: pages per second on the real-page set's
born-digital pages, before (pymupdf4llm's Markdown, as the engine wrote it until issue 16)
and after (the same, then ``model.markdown_repair``, code spacing and formulas), in one run.

    python bench/local_speed.py [--rounds 2]

Both sides run in this process on the same pages, alternating page by page so that load
from other processes on the machine falls on both alike; the figure to read is the ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from model.documents import MUPDF_LOCK  # noqa: E402
from model.engines import pdf_text  # noqa: E402
from model.engines.base import EngineOptions  # noqa: E402
from model.quality.realpages import CORPUS, load_real_tests, pages_to_run  # noqa: E402
from model.rendering import open_pdf_page  # noqa: E402


def _time(function, data: bytes, page: int, options: EngineOptions) -> float:  # noqa: ANN001
    with MUPDF_LOCK:
        doc = open_pdf_page(data, page)
        try:
            if pdf_text.needs_ocr(doc[0]):
                return -1.0
            started = time.perf_counter()
            function(doc, options)
            return time.perf_counter() - started
        finally:
            doc.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    options = EngineOptions()
    pages = pages_to_run(load_real_tests())
    files = {pdf: (CORPUS / pdf).read_bytes() for pdf, _ in pages}
    # warm up: the layout model loads on the first page
    _time(pdf_text.text_layer_markdown, files[pages[0][0]], pages[0][1], options)
    before = after = 0.0
    counted = 0
    for _ in range(args.rounds):
        for pdf, page in pages:
            old = _time(pdf_text.pymupdf4llm_markdown, files[pdf], page, options)
            if old < 0:
                continue  # a scan: the OCR path is not what this measures
            new = _time(pdf_text.text_layer_markdown, files[pdf], page, options)
            before, after, counted = before + old, after + new, counted + 1
    print(f"text-layer pages timed: {counted} ({len(pages)} pages x {args.rounds} rounds)")
    print(f"before: {counted / before:.2f} pages/s   after: {counted / after:.2f} pages/s")
    print(f"after/before speed ratio: {before / after:.3f}")
    _step_costs(pages, files, options)
    return 0


def _step_costs(pages, files, options: EngineOptions) -> None:  # noqa: ANN001
    """Milliseconds a page for each added step, on the same pages (one pass)."""
    from model.formulas import page_formulas, place_formulas
    from model.markdown_repair import repair_text_layer
    from model.table_format import auto_tables

    costs = {"page dict": 0.0, "repairs": 0.0, "formulas": 0.0, "auto tables": 0.0}
    counted = 0
    for pdf, page in pages:
        with MUPDF_LOCK:
            doc = open_pdf_page(files[pdf], page)
            try:
                if pdf_text.needs_ocr(doc[0]):
                    continue
                markdown, _ = pdf_text.pymupdf4llm_markdown(doc, options)
                t0 = time.perf_counter()
                page_dict = doc[0].get_text("dict")
                lines = [
                    "".join(s["text"] for s in line["spans"])
                    for block in page_dict["blocks"]
                    for line in block.get("lines", [])
                ]
                t1 = time.perf_counter()
                text, _ = repair_text_layer(markdown, drop_running=True, page_lines=lines)
                t2 = time.perf_counter()
                place_formulas(text, page_formulas(page_dict))
                t3 = time.perf_counter()
                auto_tables(text)
                t4 = time.perf_counter()
            finally:
                doc.close()
        counted += 1
        for name, seconds in zip(costs, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            costs[name] += seconds
    print(
        "added steps, ms a page: "
        + ", ".join(f"{k} {1000 * v / counted:.1f}" for k, v in costs.items())
    )


if __name__ == "__main__":
    raise SystemExit(main())
