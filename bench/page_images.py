"""What drawing each page in a child process costs the worker (docs/RELIABILITY.md).

    python bench/page_images.py [--pages 5] [--json out.json]

For a born-digital PDF page, a scanned PDF page and a PNG page (``tests/documents.py``), it
times, in one run: the page's images drawn in this process (``draw_page_images``, what the
child does), and drawn through the child process with its limit (``render_page_images``, what
the worker does), ``--pages`` times each; and for reference the local engine's reading of the
same page (``LocalEngine.transcribe``, the work the drawing is added to). The ratio child /
in-process is the price of the wall-clock limit; the child's extra time is mostly the start of
a Python process that imports PyMuPDF and Pillow.
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

from model.engines.base import EngineOptions, PageInput  # noqa: E402
from model.engines.local import LocalEngine  # noqa: E402
from model.page_images import draw_page_image, render_page_image  # noqa: E402
from tests import documents  # noqa: E402

CASES = {
    "born-digital PDF": (documents.born_digital_pdf, "application/pdf"),
    "scanned PDF": (documents.scanned_pdf, "application/pdf"),
    "PNG page": (documents.png_page, "image/png"),
}


def _median_seconds(work, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _row(name: str, data: bytes, mime_type: str, engine: LocalEngine, repeat: int) -> dict:
    in_process = _median_seconds(lambda: draw_page_image(data, mime_type, 1), repeat)
    child = _median_seconds(lambda: render_page_image(data, mime_type, 1, timeout=120), repeat)
    page = PageInput(data=data, mime_type=mime_type, page_number=1)
    reading = _median_seconds(lambda: engine.transcribe(page, EngineOptions()), repeat)
    return {
        "case": name,
        "in_process_s": round(in_process, 3),
        "child_s": round(child, 3),
        "ratio": round(child / in_process, 1),
        "engine_s": round(reading, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=5, help="repetitions per case")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    engine = LocalEngine()
    engine.load()
    rows = [
        _row(name, make(), mime_type, engine, args.pages)
        for name, (make, mime_type) in CASES.items()
    ]
    print(f"{'page':<18} {'in-process s':>12} {'child s':>8} {'ratio':>6} {'engine s':>9}")
    for row in rows:
        print(
            f"{row['case']:<18} {row['in_process_s']:>12.3f} {row['child_s']:>8.3f} "
            f"{row['ratio']:>6.1f} {row['engine_s']:>9.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
