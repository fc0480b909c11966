"""What blocks, chunks and the searchable PDF add per page, as ratios to plain Markdown, and
the searchable PDF's size relative to its input.

Method, in one run on the same pages (the machine is shared, so only ratios are reported):

- born-digital pages: the first two pages of each PDF in the shared corpus's docling-testdata;
  scanned pages: the same pages rendered at 150 dpi, saved as JPEG (quality 80) and wrapped in
  a PDF without a text layer, as a scanner writes them.
- Markdown: the local engine's Markdown-only path (text layer: ``pymupdf4llm.to_markdown``
  without page boxes; scans: RapidOCR without word boxes, laid out as paragraphs).
- blocks: the same page through the path the engine now runs (page boxes / word boxes, and
  the layout built from them), minus the Markdown time.
- chunks: ``chunk_document`` over each document's pages; pdf: ``searchable_pdf`` over them.
- Each page is measured --repeat times, alternating the two paths, and the median is kept.

    python bench/outputs.py [--repeat 3] [--documents 6]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model.documents import PDF  # noqa: E402
from model.engines.base import EngineOptions  # noqa: E402
from model.engines.local import LocalEngine  # noqa: E402
from model.engines.pdf_text import text_layer_markdown  # noqa: E402
from model.layout.chunks import chunk_document  # noqa: E402
from model.layout.searchable_pdf import PageText, searchable_pdf  # noqa: E402
from model.postprocess import tidy_markdown  # noqa: E402
from model.rendering import DEFAULT_LONG_SIDE, open_page_image, open_pdf_page  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "docling-testdata" / "pdf" / "sources"


def scanned(data: bytes, pages: int) -> bytes:
    source, out = pymupdf.open(stream=data), pymupdf.open()
    for index in range(pages):
        pix = source[index].get_pixmap(dpi=150)
        page = out.new_page(width=source[index].rect.width, height=source[index].rect.height)
        page.insert_image(page.rect, stream=pix.tobytes("jpg", jpg_quality=80))
    return out.tobytes(garbage=3, deflate=True)


def markdown_only_text_layer(data: bytes, number: int) -> None:
    import pymupdf4llm

    doc = open_pdf_page(data, number)
    try:
        tidy_markdown(
            pymupdf4llm.to_markdown(
                doc, pages=[0], use_ocr=False, header=False, footer=False, show_progress=False
            )
        )
    finally:
        doc.close()


def with_layout_text_layer(data: bytes, number: int):
    doc = open_pdf_page(data, number)
    try:
        return text_layer_markdown(doc, EngineOptions())[1]
    finally:
        doc.close()


def timed(call, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    value = call(*args, **kwargs)
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--documents", type=int, default=6)
    args = parser.parse_args()
    engine = LocalEngine()
    engine.load()
    sums = {
        kind: {"markdown": 0.0, "blocks": 0.0, "chunks": 0.0, "pdf": 0.0, "pages": 0}
        for kind in ("born-digital", "scanned")
    }
    sizes = []
    for path in sorted(CORPUS.glob("*.pdf"))[: args.documents]:
        born = path.read_bytes()
        count = min(pymupdf.open(stream=born).page_count, 2)
        for kind, data in (("born-digital", born), ("scanned", scanned(born, count))):
            layouts = []
            for number in range(1, count + 1):
                plain, full = [], []
                layout = None
                for _ in range(args.repeat):
                    if kind == "born-digital":
                        plain.append(timed(markdown_only_text_layer, data, number)[0])
                        seconds, layout = timed(with_layout_text_layer, data, number)
                    else:
                        image = open_page_image(data, PDF, number, long_side=DEFAULT_LONG_SIDE)
                        size = (
                            pymupdf.open(stream=data)[number - 1].rect.width,
                            pymupdf.open(stream=data)[number - 1].rect.height,
                        )
                        plain.append(timed(engine._ocr_read, image)[0])
                        seconds, read = timed(engine._ocr_read, image, page_size=size)
                        layout = read.layout
                    full.append(seconds)
                layouts.append((number, layout))
                entry = sums[kind]
                entry["markdown"] += statistics.median(plain)
                entry["blocks"] += max(0.0, statistics.median(full) - statistics.median(plain))
                entry["pages"] += 1
            entry = sums[kind]
            entry["chunks"] += statistics.median(
                timed(chunk_document, layouts)[0] for _ in range(args.repeat)
            )
            pages = [PageText(n, lay) for n, lay in layouts]
            pdf_seconds, pdf = timed(searchable_pdf, data, PDF, pages)
            entry["pdf"] += pdf_seconds
            if kind == "scanned":
                sizes.append((path.name, count, len(data), len(pdf)))
            print(f"  {path.name} ({kind}): {count} pages measured", file=sys.stderr, flush=True)
    print("time added per page, as a share of the Markdown time (same run, medians):")
    for kind, entry in sums.items():
        pages, base = entry["pages"], entry["markdown"]
        print(
            f"  {kind:12} {pages:3d} pages  markdown {base / pages * 1000:7.1f} ms/page  "
            + "  ".join(f"{k} +{entry[k] / base:.1%}" for k in ("blocks", "chunks", "pdf"))
        )
    print("searchable PDF size / input size (scanned input, JPEG pages):")
    for name, pages, before, after in sizes:
        print(
            f"  {name:40} {pages} pages  {before:>9,} -> {after:>9,} bytes  x{after / before:.3f}"
        )
    total_in, total_out = sum(s[2] for s in sizes), sum(s[3] for s in sizes)
    print(f"  all: x{total_out / total_in:.3f}")


if __name__ == "__main__":
    main()
