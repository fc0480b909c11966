"""What the page itself says, independent of its transcription: its ink, its text layer and
that layer's lines, and (where the output has tables with gaps) its ruled grids.

The page is opened once; it is drawn once, grey, at 72 dpi: its ink share is measured on
that drawing halved (36 dpi), and its glyph-shaped marks are counted on it (``glyph_count``:
what a reading of its text should come to). Its text layer is read once, with the runs set
in math fonts, and how much of it is invisible text over a picture (an OCR layer). A few
milliseconds to a few tens on a dense page (``bench/signal_costs.py``). The table finder
behind the ruled grids costs tens of milliseconds and runs only when asked (``find_grids``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pymupdf

from model.documents import MUPDF_LOCK, PDF
from model.engines.base import PageInput
from model.quality.merged_cells import Grid, page_grids
from model.quality.page_lines import Line, math_runs, pdf_lines
from model.rendering import open_page_image

logger = logging.getLogger(__name__)

INK_LEVEL = 160  # grey level below which a pixel is ink
# The page is drawn at GLYPH_DPI; its ink share is measured at half that (the share the
# ``empty`` signal's threshold was chosen at, on a 36 dpi rendering).
GLYPH_DPI = 72
# A glyph-shaped mark at 72 dpi: as tall as 6 to 40 points of type, no wider than three
# times its height (a rule is), and not a speck.
GLYPH_HEIGHT = (3, 40)
GLYPH_MIN_AREA = 4


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
    # Marks of the page's drawing shaped like glyphs (``glyph_count``); None if not drawn.
    glyphs: int | None = None
    # The text layer's runs set in math fonts or math characters (``page_lines.math_runs``).
    math_runs: tuple[str, ...] = ()
    # The share of the text layer's characters that are invisible (render mode 3, or fully
    # transparent) over a picture: a scan's OCR layer. None without a text layer.
    invisible: float | None = None


def page_facts(page: PageInput, *, find_grids: bool = False) -> PageFacts:
    """The page's ink, text layer and lines; with ``find_grids``, its ruled tables too (a
    text-layer page only: the table finder costs tens of milliseconds)."""
    try:
        if page.mime_type == PDF:
            return _pdf_facts(page, find_grids=find_grids)
        image = open_page_image(page.data, page.mime_type, page.page_number, long_side=842)
        grey = np.asarray(image.convert("L"))
        return PageFacts(ink=_ink_halved(grey), text_layer=None, glyphs=glyph_count(grey))
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
            pix = pdf_page.get_pixmap(dpi=GLYPH_DPI, colorspace=pymupdf.csGRAY, alpha=False)
            grey = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width)
            usable = usable_text_layer(text)
            invisible = _invisible_over_pictures(pdf_page) if usable else None
            grids = None
            if find_grids and usable:
                grids = _page_grids(pdf_page, page.page_number)
                skipped = ("table finder",) if grids is None else ()
        finally:
            doc.close()
    ink, glyphs = _ink_halved(grey), glyph_count(grey)
    if not usable:
        return PageFacts(ink=ink, text_layer=None, glyphs=glyphs)
    return PageFacts(
        ink=ink,
        text_layer=text,
        lines=pdf_lines(layout),
        width=width,
        grids=grids,
        skipped=skipped,
        glyphs=glyphs,
        math_runs=tuple(math_runs(layout)),
        invisible=invisible,
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


def _ink_halved(grey: np.ndarray) -> float:
    """The ink share of the drawing at half its resolution (2 x 2 pixels averaged)."""
    height, width = (grey.shape[0] // 2) * 2, (grey.shape[1] // 2) * 2
    if not height or not width:
        return 0.0
    blocks = grey[:height, :width].reshape(height // 2, 2, width // 2, 2).mean(axis=(1, 3))
    return float((blocks < INK_LEVEL).mean())


def glyph_count(grey: np.ndarray) -> int:
    """The marks of a grey drawing shaped like glyphs (connected ink of a type's height, not
    much wider than tall, more than a speck): about one a character of its text, so what a
    complete reading's length should be near. Pictures add marks of their own."""
    import cv2  # the OCR's dependency; only where the signals run

    binary = np.ascontiguousarray((grey < INK_LEVEL).astype(np.uint8))
    _count, _labels, stats, _centres = cv2.connectedComponentsWithStats(binary, connectivity=8)
    widths, heights = stats[1:, cv2.CC_STAT_WIDTH], stats[1:, cv2.CC_STAT_HEIGHT]
    areas = stats[1:, cv2.CC_STAT_AREA]
    low, high = GLYPH_HEIGHT
    shaped = (heights >= low) & (heights <= high) & (widths <= 3 * heights)
    return int((shaped & (areas >= GLYPH_MIN_AREA)).sum())


def _invisible_over_pictures(pdf_page: pymupdf.Page) -> float:
    """The share of the text layer's characters drawn invisible (render mode 3, or with no
    opacity) inside a picture on the page: what OCR programs lay over a scan."""
    pictures = [pymupdf.Rect(info["bbox"]) for info in pdf_page.get_image_info()]
    total = hidden = 0
    for span in pdf_page.get_texttrace():
        count = len(span.get("chars", ()))
        total += count
        if span.get("type") == 3 or span.get("opacity", 1.0) == 0:
            box = pymupdf.Rect(span["bbox"])
            centre = pymupdf.Point((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
            if any(centre in picture for picture in pictures):
                hidden += count
    return round(hidden / total, 3) if total else 0.0
