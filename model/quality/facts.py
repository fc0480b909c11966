"""What the page itself says, independent of its transcription: its ink, its text layer and
that layer's lines, and (where the output has tables with gaps) its ruled grids.

The page is opened once; its ink is measured on a 36 dpi grey rendering and its text layer
read once (a few milliseconds). The table finder behind the ruled grids costs tens of
milliseconds and runs only when asked (``find_grids``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pymupdf

from model.documents import MUPDF_LOCK, PDF
from model.engines.base import PageInput
from model.quality.merged_cells import Grid, page_grids
from model.quality.page_lines import Line, pdf_lines
from model.rendering import open_page_image

logger = logging.getLogger(__name__)

INK_LEVEL = 160  # grey level below which a pixel is ink
INK_DPI = 36


@dataclass(frozen=True)
class PageFacts:
    """What the page itself says, independent of the transcription."""

    ink: float | None  # share of dark pixels; None when the page could not be measured
    text_layer: str | None  # None for images and for PDFs without a usable text layer
    # The text layer's lines with their boxes (PDF points, origin top-left), and the width
    # they are measured against; empty for images and pages without a usable text layer.
    lines: list[Line] = field(default_factory=list)
    width: float | None = None
    # The page's ruled tables, where the output has a table with empty cells to judge
    # against them (``model.quality.merged_cells``); None where they were not looked for.
    grids: list[Grid] | None = None
    # Measurements that were asked for and failed (the table finder): their signals are not
    # judged, and the ``steps`` signal says so.
    skipped: tuple[str, ...] = ()


def page_facts(page: PageInput, *, find_grids: bool = False) -> PageFacts:
    """The page's ink, text layer and lines; with ``find_grids``, its ruled tables too (a
    text-layer page only: the table finder costs tens of milliseconds)."""
    try:
        if page.mime_type == PDF:
            return _pdf_facts(page, find_grids=find_grids)
        image = open_page_image(page.data, page.mime_type, page.page_number, long_side=400)
        return PageFacts(ink=ink_share(image.convert("L").tobytes()), text_layer=None)
    except Exception:  # signals must never fail a page that was transcribed
        logger.warning("page %s: cannot measure the page for quality signals", page.page_number)
        return PageFacts(ink=None, text_layer=None, skipped=("page facts",))


def _pdf_facts(page: PageInput, *, find_grids: bool) -> PageFacts:
    skipped: tuple[str, ...] = ()
    with MUPDF_LOCK:
        doc = pymupdf.open(stream=page.data, filetype="pdf")
        try:
            pdf_page = doc[page.page_number - 1]
            text = pdf_page.get_text("text")
            layout = pdf_page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT)
            width = float(pdf_page.rect.width)
            pix = pdf_page.get_pixmap(dpi=INK_DPI, colorspace=pymupdf.csGRAY, alpha=False)
            ink = ink_share(pix.samples)
            usable = usable_text_layer(text)
            grids = None
            if find_grids and usable:
                grids = _page_grids(pdf_page, page.page_number)
                skipped = ("table finder",) if grids is None else ()
        finally:
            doc.close()
    if not usable:
        return PageFacts(ink=ink, text_layer=None)
    return PageFacts(
        ink=ink,
        text_layer=text,
        lines=pdf_lines(layout),
        width=width,
        grids=grids,
        skipped=skipped,
    )


def _page_grids(pdf_page: pymupdf.Page, number: int) -> list[Grid] | None:
    # The table finder is PyMuPDF's heuristics on arbitrary drawings: if it fails, the page
    # keeps its other signals and this one is not judged.
    try:
        return page_grids(pdf_page)
    except Exception:
        logger.warning("page %s: the table finder failed; merged cells not judged", number)
        return None


def usable_text_layer(text: str) -> bool:
    readable = sum(1 for ch in text if ch.isalnum())
    return readable >= 20 and text.count("\ufffd") <= readable * 0.1


def ink_share(grey: bytes) -> float:
    pixels = np.frombuffer(grey, dtype=np.uint8)
    return float((pixels < INK_LEVEL).mean()) if pixels.size else 0.0
