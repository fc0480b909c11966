"""The margins of a scanned neighbouring page, read by OCR for the running-line check.

A running head or foot is found on a scanned page as on a born-digital one
(``model.running_lines``): a line of the page's margins that a page around it carries in the
same margin. A scanned neighbour has no text layer to show its margins, so they are read: only
a strip around where the page's own lines that no nearer page matched lie (inside the band
``running_lines.MARGIN_BAND`` of the page's height, at the top or the bottom), drawn at the
size the page itself was read at; its lines are found by the same detector, and only those
where the page's own lines lie are read, by the same recognizer. ``running_lines`` asks the
nearest pages first and stops once every line is matched, so a book's running head usually
costs an OCR call or two on strips a few lines high.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pymupdf

from model.engines.ocr_orientation import crop_line
from model.engines.ocr_output import TEXT_SCORE
from model.engines.pdf_text import needs_ocr
from model.rendering import DEFAULT_LONG_SIDE, render_zoom
from model.running_lines import MARGIN_BAND, Wanted, edge_rows

MarginReader = Callable[[pymupdf.Page, Wanted], list[tuple[str, str]]]
# Around the unmatched lines' span, this many times its height and this share of the page's
# height on either side: a scan sits a little higher or lower on each page, and tilts.
PAD_LINES, PAD_PAGE = 1.0, 0.01
# A strip with less ink than this share of dark pixels holds no line: not worth an OCR call.
MIN_INK = 0.0005


def strip_span(band: str, span: tuple[float, float] | None) -> tuple[float, float]:
    """The share of the page's height (from, to) to read for ``band``: from the page's edge
    to just past the page's own unmatched lines, inside the band (the whole band where their
    place is not known). From the edge, because only the neighbour's first row (or last two)
    counts, as on a page with a text layer: a contents page's first entry under its title is
    no running head."""
    if span is None:
        return (0.0, MARGIN_BAND) if band == "top" else (1.0 - MARGIN_BAND, 1.0)
    pad = PAD_LINES * (span[1] - span[0]) + PAD_PAGE
    if band == "top":
        return 0.0, min(MARGIN_BAND, span[1] + pad)
    return max(1.0 - MARGIN_BAND, span[0] - pad), 1.0


def strip_pixels(page: pymupdf.Page, start: float, end: float) -> tuple[np.ndarray, float, float]:
    """The page between shares ``start`` and ``end`` of its height, drawn at the OCR's size:
    its pixels, the strip's offset from the top of the page and the page's height, in those
    pixels. Call under ``MUPDF_LOCK``."""
    zoom = render_zoom(page.rect, DEFAULT_LONG_SIDE)
    rect = page.rect
    clip = pymupdf.Rect(
        rect.x0, rect.y0 + start * rect.height, rect.x1, rect.y0 + end * rect.height
    )
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip, alpha=False)
    pixels = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)
    return pixels[..., :3].copy(), start * rect.height * zoom, rect.height * zoom


def scanned_margin_lines(
    page: pymupdf.Page,
    wanted: Wanted,
    detect: Callable[[np.ndarray], Any],
    recognize: Callable[[np.ndarray], tuple[str, float]],
) -> list[tuple[str, str]]:
    """A scanned page's lines where ``wanted`` asks (per band, around the span of the lines
    still unmatched), as ("top" | "bottom", text); none for a page with a text layer (its
    margins are read from that, and were empty). The strip's lines are found by ``detect``
    (RapidOCR's detector: ``.boxes``, four corners each); of its first row (top) or last two
    rows (bottom), as ``running_lines.edge_rows`` makes them, those whose middle lies within
    the span, give or take half its height, are read by ``recognize`` (text and confidence;
    under ``TEXT_SCORE`` a line counts as unread, as on the page itself). Call under
    ``MUPDF_LOCK``."""
    if not needs_ocr(page):
        return []
    found = []
    for band, span in wanted.items():
        start, end = strip_span(band, span)
        pixels, offset, height = strip_pixels(page, start, end)
        if pixels.size == 0 or float((pixels.min(axis=2) < 128).mean()) < MIN_INK:
            continue
        boxes = getattr(detect(pixels), "boxes", None)
        quads = [] if boxes is None else [np.asarray(quad, dtype=np.float32) for quad in boxes]
        placed = [
            (float(q[:, 1].min()) + offset, float(q[:, 1].max()) + offset, str(n))
            for n, q in enumerate(quads)
        ]
        low, high = (0.0, 1.0) if span is None else _around(span)
        for edge, number, top, bottom in edge_rows(placed, height, overlap=True):
            if edge != band or not low <= (top + bottom) / 2 <= high:
                continue
            text, score = recognize(crop_line(pixels, quads[int(number)]))
            if score >= TEXT_SCORE and text.strip():
                found.append((band, " ".join(text.split())))
    return found


def _around(span: tuple[float, float]) -> tuple[float, float]:
    half = 0.5 * (span[1] - span[0]) + PAD_PAGE
    return span[0] - half, span[1] + half
