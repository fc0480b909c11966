"""The local engine's OCR against Tesseract 5 on the same scanned pages, in one run: speed
and word accuracy.

    python bench/scan_speed.py [--rounds 1] [--limit N] [--scans-dir DIR] [--pages]

The pages are the real-page set's scans (``model.quality.realpages``: every tested page drawn
at 150 dpi, turned 1°, blurred, speckled and saved as a quality-40 JPEG), those of documents
in the Latin alphabet, each drawn to the image the engine reads (its long side 1600 px). Both
sides read that same PNG, alternating page by page (which goes first alternates too), so that
the machine's other load falls on both alike:

- the engine: ``LocalEngine.transcribe`` of the image (detection, recognition, the page's
  orientation, the re-read lines, the layout into Markdown), with one ONNX Runtime thread a
  model (``FOLIO_LOCAL_OCR_THREADS=1``, the default) and with a thread per core (``engine, N
  threads``: ONNX Runtime's own default, the engine's setting before issue 28);
- Tesseract: Debian's ``tesseract`` command on the PNG (``-l eng``, its default page
  segmentation), single-threaded (``OMP_THREAD_LIMIT=1``), as a user would run it.

Word accuracy is the share of the page's words, as its text layer holds them (the born-digital
page the scan was made from), that the reading holds (``realpages.words_kept``: counted with
repeats, case folded, markup out). The figures to read are the speed ratio (the engine's
pages/s over Tesseract's) and the two accuracies.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pymupdf  # noqa: E402

from model.documents import MUPDF_LOCK  # noqa: E402
from model.engines.base import EngineOptions, PageInput  # noqa: E402
from model.engines.local import LocalEngine  # noqa: E402
from model.engines.local_config import LocalConfig  # noqa: E402
from model.engines.pdf_text import pdf_page_image  # noqa: E402
from model.quality.realpages import (  # noqa: E402
    CORPUS,
    build_scans,
    load_real_tests,
    scan_name,
    words_kept,
)

# Documents in scripts neither side reads with `-l eng` / the bundled models.
NOT_LATIN = ("right_to_left", "habibi", "normal_4pages")


def scanned_pages(scans_dir: Path) -> list[tuple[str, int, bytes, str]]:
    """(pdf, page, the PNG both sides read, the source page's text layer) per Latin page."""
    pages = sorted({(t.pdf, t.page) for t in load_real_tests()})
    pages = [(pdf, n) for pdf, n in pages if not any(word in pdf for word in NOT_LATIN)]
    build_scans(pages, scans_dir)
    found = []
    for pdf, number in pages:
        with MUPDF_LOCK:
            with pymupdf.open(scans_dir / scan_name(pdf, number)) as scan:
                image = pdf_page_image(scan[0])
            with pymupdf.open(CORPUS / pdf) as source:
                truth = source[number - 1].get_text("text")
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        found.append((pdf, number, buffer.getvalue(), truth))
    return found


def engine_read(engine: LocalEngine, png: bytes) -> tuple[float, str]:
    started = time.perf_counter()
    page = PageInput(data=png, mime_type="image/png", page_number=1)
    markdown = engine.transcribe(page, EngineOptions()).markdown
    return time.perf_counter() - started, markdown


def tesseract_read(path: Path) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        ["tesseract", str(path), "stdout", "-l", "eng"],
        env={**os.environ, "OMP_THREAD_LIMIT": "1"},
        capture_output=True,
        check=True,
        text=True,
    )
    return time.perf_counter() - started, done.stdout


def tesseract_images(pages: list, folder: Path) -> list[Path]:
    """Each page's image as a PNG file for Tesseract's command line, Tesseract warmed on the
    first (its first call reads eng.traineddata from disk, which no page should be charged)."""
    images = []
    for index, (_, _, png, _) in enumerate(pages):
        images.append(folder / f"{index}.png")
        images[-1].write_bytes(png)
    tesseract_read(images[0])
    return images


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--limit", type=int, help="only the first N pages")
    parser.add_argument("--scans-dir", type=Path, help="keep the scans here (default: temp)")
    parser.add_argument("--pages", action="store_true", help="print each page's figures")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        pages = scanned_pages(args.scans_dir or Path(tmp))[: args.limit]
        cores = os.cpu_count() or 1
        engines = {
            "engine": LocalEngine(LocalConfig(ocr_threads=1)),
            f"engine, {cores} threads": LocalEngine(LocalConfig(ocr_threads=cores)),
        }
        for engine in engines.values():
            engine.load()
        images = tesseract_images(pages, Path(tmp))
        sides = [*engines, "tesseract"]
        seconds = dict.fromkeys(sides, 0.0)
        accuracy = dict.fromkeys(sides, 0.0)
        rows = []
        for round_number in range(args.rounds):
            for index, (pdf, number, png, truth) in enumerate(pages):
                shift = (round_number + index) % len(sides)
                row = {}
                for side in sides[shift:] + sides[:shift]:
                    spent, text = (
                        engine_read(engines[side], png)
                        if side in engines
                        else tesseract_read(images[index])
                    )
                    seconds[side] += spent
                    row[side] = (spent, words_kept(text, truth))
                    if round_number == 0:
                        accuracy[side] += row[side][1] / len(pages)
                rows.append((pdf, number, row))
    counted = len(pages) * args.rounds
    print(f"scanned pages timed: {len(pages)} pages x {args.rounds} rounds")
    for side in seconds:
        print(
            f"{side}: {counted / seconds[side]:.3f} pages/s, "
            f"words read {100 * accuracy[side]:.1f} %"
        )
    for side in engines:
        print(f"{side}/tesseract speed ratio: {seconds['tesseract'] / seconds[side]:.3f}")
    if args.pages:
        for pdf, number, row in rows:
            print(
                f"{pdf} p{number}: "
                + ", ".join(f"{k} {v[0]:.1f} s {100 * v[1]:.0f} %" for k, v in row.items())
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
