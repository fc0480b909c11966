"""One page of a document as pixels (or as a one-page PDF), ready for an engine."""

from __future__ import annotations

import logging

import numpy as np
import pymupdf
from PIL import Image, ImageOps

from model.documents import (
    MUPDF_LOCK,
    PDF,
    CorruptDocument,
    check_pixel_count,
    open_image,
    open_pdf,
)
from model.formats import ebooks
from model.formats.types import Format, format_of
from model.pages import PageSelectionError

logger = logging.getLogger(__name__)

# DeepSeek-OCR's own PDF script renders at 144 dpi (zoom 2): about 1190 x 1684 px for A4.
RENDER_DPI = 144
DEFAULT_LONG_SIDE = 1600
# Below this a page's text gets too small for OCR or a vision model, whatever its paper size
# (a postcard-sized PDF at 144 dpi is only ~830 px long).
MIN_LONG_SIDE = 1024


def render_zoom(page_rect: pymupdf.Rect, long_side: int = DEFAULT_LONG_SIDE) -> float:
    """The zoom that renders a page at 144 dpi, scaled into [MIN_LONG_SIDE, long_side]."""
    points = max(page_rect.width, page_rect.height)
    if points <= 0:
        raise CorruptDocument("the page has no size")
    pixels = points * RENDER_DPI / 72
    target = min(max(pixels, min(MIN_LONG_SIDE, long_side)), long_side)
    return float(target / points)


def open_page_image(
    data: bytes, mime_type: str, page_number: int, *, long_side: int = DEFAULT_LONG_SIDE
) -> Image.Image:
    """Page ``page_number`` (1-indexed) as an upright RGB image, long side at most
    ``long_side``: a PDF page rendered, or an image's frame with its EXIF rotation applied.
    Images are scaled down to ``long_side`` but never up (upscaling adds no detail)."""
    if mime_type == PDF:
        return _render_pdf_page(data, page_number, long_side)
    fmt = format_of(mime_type)
    if fmt is not None and fmt.kind == "ebook":
        return _render_ebook_page(data, fmt, page_number, long_side)
    return _image_frame(data, page_number, long_side)


def _render_ebook_page(data: bytes, fmt: Format, page_number: int, long_side: int) -> Image.Image:
    with MUPDF_LOCK:
        try:
            doc = ebooks.open_ebook(data, fmt)
        except ebooks.EbookError as exc:
            raise CorruptDocument(str(exc)) from exc
        try:
            return _render(doc.load_page(_index(page_number, doc.page_count)), long_side)
        finally:
            doc.close()


def _render_pdf_page(data: bytes, page_number: int, long_side: int) -> Image.Image:
    with MUPDF_LOCK:
        doc = open_pdf(data)
        try:
            return _render(doc.load_page(_index(page_number, doc.page_count)), long_side)
        finally:
            doc.close()


def pdf_page_image_at_dpi(
    data: bytes, page_number: int, *, dpi: int, long_side: int
) -> Image.Image:
    """A PDF page drawn at ``dpi`` (the engines' zoom stops at 144 dpi, which a zoomed view
    would show blurred), its long side at most ``long_side``."""
    with MUPDF_LOCK:
        doc = open_pdf(data)
        try:
            page = doc.load_page(_index(page_number, doc.page_count))
            rect = page.rect
            if max(rect.width, rect.height) <= 0:
                raise CorruptDocument("the page has no size")
            zoom = min(dpi / 72, long_side / max(rect.width, rect.height))
            pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace="rgb")
            return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
        finally:
            doc.close()


def _render(page: pymupdf.Page, long_side: int) -> Image.Image:
    # page.rect already accounts for /Rotate, and get_pixmap renders the page as shown.
    zoom = render_zoom(page.rect, long_side)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace="rgb")
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def _image_frame(data: bytes, page_number: int, long_side: int) -> Image.Image:
    with open_image(data) as image:
        image.seek(_index(page_number, getattr(image, "n_frames", 1)))
        check_pixel_count(image.size)
        frame = ImageOps.exif_transpose(image) or image
        frame = _to_rgb(frame)
    if max(frame.size) > long_side:
        frame.thumbnail((long_side, long_side), Image.Resampling.LANCZOS)
    return frame


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode == "RGB":
        return image.copy()
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        # Transparent areas of a page are paper: put them on white, not black.
        rgba = image.convert("RGBA")
        canvas = Image.new("RGB", rgba.size, (255, 255, 255))
        canvas.paste(rgba, mask=rgba.getchannel("A"))
        return canvas
    if image.mode.startswith("I;16") or image.mode in ("I", "F"):
        # 16-bit and float scans: stretch to 8 bits instead of clipping everything to white.
        values = np.asarray(image.convert("F"), dtype=np.float32)
        low, high = float(values.min()), float(values.max())
        scaled = (values - low) * (255.0 / (high - low)) if high > low else values * 0
        return Image.fromarray(scaled.astype(np.uint8), "L").convert("RGB")
    return image.convert("RGB")


def _index(page_number: int, page_count: int) -> int:
    if not 1 <= page_number <= page_count:
        noun = "page" if page_count == 1 else "pages"
        raise PageSelectionError(
            f"page {page_number} does not exist: the document has {page_count} {noun}"
        )
    return page_number - 1


def open_pdf_page(data: bytes, page_number: int) -> pymupdf.Document:
    """A one-page PDF holding only page ``page_number``, for text extraction.

    Selecting the page first keeps whole-document work in the text extractor (outline,
    form fields) proportional to one page, not to the whole book, for every page.
    """
    doc = open_pdf(data)
    try:
        index = _index(page_number, doc.page_count)
    except Exception:
        doc.close()
        raise
    try:
        doc.select([index])
    except Exception:  # MuPDF's own error types
        # A document MuPDF repaired (a file cut short: no cross-reference table, objects
        # missing) opens and draws, but rearranging its page tree can fail ("not a dict");
        # copying the one page into a new document does not need the old tree.
        logger.info("page %s: the page tree cannot be rearranged; copying the page", page_number)
        single = pymupdf.open()
        try:
            single.insert_pdf(doc, from_page=index, to_page=index)
        except Exception:
            single.close()
            raise
        finally:
            doc.close()
        return single
    return doc
