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
from model.engines import local  # noqa: E402
from model.engines.base import EngineOptions  # noqa: E402
from model.quality.realpages import CORPUS, load_real_tests, pages_to_run  # noqa: E402
from model.rendering import open_pdf_page  # noqa: E402


def _time(function, data: bytes, page: int, options: EngineOptions) -> float:  # noqa: ANN001
    with MUPDF_LOCK:
        doc = open_pdf_page(data, page)
        try:
            if local.needs_ocr(doc[0]):
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
    _time(local._text_layer_markdown, files[pages[0][0]], pages[0][1], options)
    before = after = 0.0
    counted = 0
    for _ in range(args.rounds):
        for pdf, page in pages:
            old = _time(local._pymupdf4llm_markdown, files[pdf], page, options)
            if old < 0:
                continue  # a scan: the OCR path is not what this measures
            new = _time(local._text_layer_markdown, files[pdf], page, options)
            before, after, counted = before + old, after + new, counted + 1
    print(f"text-layer pages timed: {counted} ({len(pages)} pages x {args.rounds} rounds)")
    print(f"before: {counted / before:.2f} pages/s   after: {counted / after:.2f} pages/s")
    print(f"after/before speed ratio: {before / after:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
