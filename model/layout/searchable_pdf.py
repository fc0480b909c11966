"""A searchable PDF of a job's pages: what an archive keeps (OCRmyPDF's output, in short).

- A PDF page that has a text layer of its own passes through unchanged.
- A scanned PDF page keeps its original image and gets an invisible text layer (render mode
  3), set word by word on the OCR's word boxes, so that search and selection land on the
  words. Engines that give only blocks (the vision models' grounding) get their blocks' text
  set line by line over each block's box instead.
- An image (PNG, JPEG, TIFF frame, WebP) becomes a page of its size in points (its stated
  resolution, else 72 dpi) holding the image, with the same invisible text.

The text is drawn by PyMuPDF's TextWriter (fast: one content stream a page) in Helvetica, or,
for words Helvetica has no glyphs for, in MuPDF's built-in CJK fallback font. Each word's
font size is chosen so that its width matches its box. The result is not PDF/A: PyMuPDF
makes no PDF/A claim that could be checked here, so none is made.

Building one takes MuPDF through every page of the document (and for an image document, a
decode and re-encode of every frame), so a service builds it in a worker, in a child process
with a wall-clock limit (``searchable_pdf_bounded``), never in the process that answers
requests.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pymupdf
from PIL import Image, ImageOps

from model.bounded_child import bounded_run
from model.documents import MUPDF_LOCK, PDF, open_image, open_pdf
from model.formats import ebooks
from model.formats.types import format_of
from model.layout.schema import Block, PageLayout, Word, image_dpi
from model.layout.table_blocks import searchable_lines

# The building child's address space: the document, its pages' images as MuPDF holds them,
# and the output; a hostile document cannot take the host's memory.
CHILD_MEMORY_BYTES = 4 * 1024**3

# Blocks of these kinds have no running text to set (a figure's box is a picture).
_NO_TEXT = ("figure",)


@dataclass(frozen=True)
class PageText:
    """One page of the output: its number in the document and what was read from it
    (``None`` for a page that failed: it is kept as it was)."""

    number: int
    layout: PageLayout | None


def searchable_pdf_bounded(
    data: bytes, mime_type: str, pages: Iterable[PageText], *, timeout: float
) -> bytes:
    """``document_searchable_pdf`` built in a child process killed after ``timeout`` s
    (``model.bounded_child``: ``ChildTimeout``, ``ChildFailed``)."""
    with bounded_run(
        _build_into, (data, mime_type, list(pages)), timeout=timeout,
        memory_bytes=CHILD_MEMORY_BYTES,
    ) as out:  # fmt: skip
        return (out / "searchable.pdf").read_bytes()


def _build_into(folder: str, data: bytes, mime_type: str, pages: list[PageText]) -> None:
    """The child's work."""
    (Path(folder) / "searchable.pdf").write_bytes(document_searchable_pdf(data, mime_type, pages))


def document_searchable_pdf(data: bytes, mime_type: str, pages: Iterable[PageText]) -> bytes:
    """The searchable PDF of any document with page images: an e-book's pages are its PDF
    layout's (``model.formats.ebooks``)."""
    fmt = format_of(mime_type)
    if fmt is not None and fmt.kind == "ebook":
        with MUPDF_LOCK:
            data = ebooks.as_pdf(data, fmt)
        mime_type = PDF
    return searchable_pdf(data, mime_type, pages)


def searchable_pdf(data: bytes, mime_type: str, pages: Iterable[PageText]) -> bytes:
    pages = list(pages)
    with MUPDF_LOCK:
        out = _pdf_pages(data, pages) if mime_type == PDF else _image_pages(data, pages)
        try:
            writer = _TextLayer()
            for index, page in enumerate(pages):
                if page.layout is None or (mime_type == PDF and _has_text(out[index], page)):
                    continue
                writer.add(out[index], page.layout)
            out.set_metadata({"producer": "Folio (PyMuPDF)", "creator": "Folio"})
            return bytes(out.tobytes(garbage=3, deflate=True))
        finally:
            out.close()


def _has_text(pdf_page: pymupdf.Page, page: PageText) -> bool:
    """Whether a PDF page keeps its own text: read from its text layer, or (an engine that
    read the pixels anyway) holding text of its own. Only pages the local engine judged to be
    scans, or pages with no text at all, get an invisible layer: never a second copy."""
    assert page.layout is not None
    if page.layout.source == "ocr":
        return False
    return page.layout.source == "text-layer" or bool(pdf_page.get_text("text").strip())


def _pdf_pages(data: bytes, pages: list[PageText]) -> pymupdf.Document:
    doc = open_pdf(data)
    # The job's pages, in its order; pages of the document it did not read are left out.
    doc.select([page.number - 1 for page in pages])
    return doc


def _image_pages(data: bytes, pages: list[PageText]) -> pymupdf.Document:
    doc = pymupdf.open()
    with open_image(data) as image:
        for page in pages:
            image.seek(page.number - 1)
            dpi = image_dpi(image.info)
            frame = ImageOps.exif_transpose(image) or image
            width, height = frame.size
            target = doc.new_page(width=width * 72.0 / dpi, height=height * 72.0 / dpi)
            target.insert_image(target.rect, stream=_encoded(frame, data, image))
    return doc


def _encoded(frame: Image.Image, data: bytes, source: Image.Image) -> bytes:
    """The frame as image bytes a PDF holds well: a plain JPEG as it came (no re-encoding,
    no loss), bilevel and grey scans as PNG, colour as JPEG."""
    exif_turned = source.getexif().get(0x0112, 1) != 1
    if source.format == "JPEG" and not exif_turned and getattr(source, "n_frames", 1) == 1:
        return data
    buffer = io.BytesIO()
    if frame.mode in ("1", "L", "P", "LA", "PA", "I;16", "I", "F"):
        frame = frame.convert("1" if frame.mode == "1" else "L")
        frame.save(buffer, format="PNG", optimize=True)
    else:
        frame.convert("RGB").save(buffer, format="JPEG", quality=85)
    return buffer.getvalue()


class _TextLayer:
    def __init__(self) -> None:
        self.latin = pymupdf.Font("helv")
        self.fallback = pymupdf.Font("cjk")

    def add(self, page: pymupdf.Page, layout: PageLayout) -> None:
        # Boxes are in points of the page as shown; a page with /Rotate needs them in its
        # unrotated space, where content is drawn.
        to_page = page.derotation_matrix
        sx = page.rect.width / layout.width if layout.width else 1.0
        sy = page.rect.height / layout.height if layout.height else 1.0
        writer = pymupdf.TextWriter(page.rect)
        words = layout.words or list(_block_words(layout.blocks))
        for word in words:
            x0, y0, x1, y1 = word.bbox
            self._append(writer, word.text, pymupdf.Rect(x0 * sx, y0 * sy, x1 * sx, y1 * sy))
        if words:
            writer.write_text(page, render_mode=3, morph=(pymupdf.Point(0, 0), to_page))

    def _append(self, writer: pymupdf.TextWriter, text: str, box: pymupdf.Rect) -> None:
        if box.is_empty or not text.strip():
            return
        font = self.latin if all(self.latin.has_glyph(ord(c)) for c in text) else self.fallback
        natural = font.text_length(text, fontsize=1)
        if natural <= 0:
            return
        # The width decides (search and selection land on the word); the height caps it,
        # so that a short word in a wide box does not tower over its line.
        size = min(box.width / natural, box.height * 1.25)
        if size <= 0:
            return
        # The baseline sits a descent above the box's bottom. A space after each word keeps
        # words apart for readers that copy text out, instead of guessing from the gaps.
        baseline = box.y1 - abs(font.descender) * size
        writer.append((box.x0, baseline), f"{text} ", font=font, fontsize=size)


def _block_words(blocks: Iterable[Block]) -> Iterable[Word]:
    """Blocks without word boxes: each block's lines spread evenly down its box, a table's
    rows one line each (``searchable_lines``: its cells as every output reads them)."""
    for block in blocks:
        if block.type in _NO_TEXT:
            continue
        lines = searchable_lines(block.markdown)
        if not lines:
            continue
        x0, y0, x1, y1 = block.bbox
        step = (y1 - y0) / len(lines)
        for i, line in enumerate(lines):
            yield Word(line, (x0, y0 + i * step, x1, y0 + (i + 1) * step))
