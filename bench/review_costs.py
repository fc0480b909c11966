"""What the two page-reading review measurements cost a page (docs/QUALITY.md).

    python bench/review_costs.py [--json out.json]

On the real-page set (``model.quality.realpages``): ``coverage``'s measurement
(``model.engines.ocr_coverage.unread_stretches``) on each tested page's scan, timed alone on
the RapidOCR output the local engine reads it from; and ``merged_cells``' table finder
(``model.quality.merged_cells.page_grids``) on every tested born-digital page, though the
service runs it only on pages whose output has a table with an empty cell. The OCR itself is
not timed. Figures are per page: median, mean and maximum, in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pymupdf  # noqa: E402

from model.engines.local import LocalEngine  # noqa: E402
from model.engines.ocr_coverage import unread_stretches  # noqa: E402
from model.engines.ocr_output import TEXT_SCORE  # noqa: E402
from model.engines.pdf_text import pdf_page_image  # noqa: E402
from model.quality.merged_cells import page_grids  # noqa: E402
from model.quality.realpages import CORPUS, load_real_tests, scan_page  # noqa: E402
from model.rendering import open_pdf_page  # noqa: E402


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "pages": len(ms),
        "median_ms": round(statistics.median(ms), 1),
        "mean_ms": round(statistics.mean(ms), 1),
        "max_ms": round(max(ms), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    pages = sorted({(t.pdf, t.page) for t in load_real_tests()})
    engine = LocalEngine()
    ocr, _ = engine._engines()
    coverage, finder = [], []
    for pdf, number in pages:
        doc = open_pdf_page(scan_page(CORPUS / pdf, number), 1)
        try:
            image = pdf_page_image(doc[0])
        finally:
            doc.close()
        pixels = np.asarray(image.convert("RGB"))
        output = ocr(pixels, return_word_box=True, text_score=0.0)
        started = time.perf_counter()
        unread_stretches(pixels, output, TEXT_SCORE)
        coverage.append(1000 * (time.perf_counter() - started))
        with pymupdf.open(CORPUS / pdf) as source:
            started = time.perf_counter()
            page_grids(source[number - 1])
            finder.append(1000 * (time.perf_counter() - started))
    results = {"coverage": summary(coverage), "table_finder": summary(finder)}
    for name, figures in results.items():
        print(f"{name}: {figures}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
