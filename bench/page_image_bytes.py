"""What a page's stored images cost, in bytes, on the shared corpus: the one WebP the worker
stores now (``model.page_images``) against the two JPEGs it stored before (the panel's, long
side 1400 px, and the zoomed view's, 192 dpi with its long side capped at 2400 px, both at
JPEG quality 85, optimized).

Method: every page (at most ``--pages`` a file) of the PDFs under
``../shared/corpus/docling-testdata/pdf/sources`` and ``../shared/corpus/pdf-samples`` that
opens without a password is drawn once at 192 dpi (long side 2400 px), as the worker draws it;
from that one drawing both the new image and the former two are encoded, so the comparison
is of the encodings alone. The corpus's scans are few (and some nearly blank), so docling's
pages are also measured as scans: each page drawn at 150 dpi into a JPEG, the way a scanner
delivers it, and that JPEG drawn as above. Printed: pages, bytes per page (mean and median),
and the ratio of the totals new / former, for born-digital pages, the corpus's own scans
(no text layer) and docling's pages as scans, apart and together.

    python bench/page_image_bytes.py [--pages 3]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
from pathlib import Path

import pymupdf
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from model.page_images import IMAGE_DPI, IMAGE_LONG_SIDE, webp  # noqa: E402
from model.rendering import pdf_page_image_at_dpi  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
FORMER_PANEL_LONG_SIDE = 1400
FORMER_JPEG_QUALITY = 85


def former_jpegs(image: Image.Image) -> int:
    """Bytes of the two JPEGs a page had before: the panel and the zoomed view."""
    panel = image.copy()
    panel.thumbnail((FORMER_PANEL_LONG_SIDE, FORMER_PANEL_LONG_SIDE))
    total = 0
    for picture in (panel, image):
        buffer = io.BytesIO()
        picture.save(buffer, format="JPEG", quality=FORMER_JPEG_QUALITY, optimize=True)
        total += len(buffer.getvalue())
    return total


DOCLING = CORPUS / "docling-testdata" / "pdf" / "sources"
SCAN_DPI = 150


def corpus_pages(limit: int) -> list[tuple[str, bytes, int]]:
    """(kind, PDF, page number) of every page measured."""
    files = sorted(DOCLING.glob("*.pdf")) + sorted((CORPUS / "pdf-samples").glob("*/*.pdf"))
    pages = []
    for path in files:
        data = path.read_bytes()
        try:
            doc = pymupdf.open(stream=data, filetype="pdf")
        except Exception:  # a sample that is meant not to open
            continue
        with doc:
            if doc.needs_pass:
                continue
            for index in range(min(limit, doc.page_count)):
                kind = "born-digital" if doc[index].get_text("text").strip() else "scanned"
                pages.append((kind, data, index + 1))
                if path.parent == DOCLING:
                    pages.append(("as scans", scanned(doc[index]), 1))
    return pages


def scanned(page: pymupdf.Page) -> bytes:
    """The page as a scanner delivers it: a JPEG at SCAN_DPI in a PDF page of its size."""
    scan = pymupdf.open()
    picture = page.get_pixmap(dpi=SCAN_DPI).tobytes("jpeg")
    scan.new_page(width=page.rect.width, height=page.rect.height).insert_image(
        page.rect, stream=picture
    )
    return bytes(scan.tobytes())


def report(name: str, rows: list[tuple[int, int]]) -> None:
    if not rows:
        return
    before, after = [b for b, _ in rows], [a for _, a in rows]
    print(
        f"{name:<13} {len(rows):>5} {statistics.mean(before) / 1024:>9.0f} "
        f"{statistics.median(before) / 1024:>9.0f} {statistics.mean(after) / 1024:>9.0f} "
        f"{statistics.median(after) / 1024:>9.0f} {sum(after) / sum(before):>7.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3, help="pages per file at most")
    args = parser.parse_args()
    kinds: dict[str, list[tuple[int, int]]] = {"born-digital": [], "scanned": [], "as scans": []}
    for kind, data, number in corpus_pages(args.pages):
        try:
            image = pdf_page_image_at_dpi(data, number, dpi=IMAGE_DPI, long_side=IMAGE_LONG_SIDE)
        except Exception:  # a page the renderer refuses: the worker fails it too
            continue
        kinds[kind].append((former_jpegs(image), len(webp(image))))
    print(f"{'pages':<13} {'count':>5} {'before KiB':>9} {'(median)':>9} {'after KiB':>9} "
          f"{'(median)':>9} {'ratio':>7}")  # fmt: skip
    for name, rows in kinds.items():
        report(name, rows)
    report("all", [row for rows in kinds.values() for row in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
