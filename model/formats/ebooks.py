"""EPUB, XPS, FB2, MOBI, CBZ and SVG: formats PyMuPDF lays out into pages itself. Each is
turned into a PDF once per worker process, and its pages are read like any PDF's."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import pymupdf

from model.formats import types

# PyMuPDF's name for each format (what ``pymupdf.open(filetype=...)`` takes).
FILETYPES = {
    types.EPUB: "epub",
    types.XPS: "xps",
    types.FB2: "fb2",
    types.MOBI: "mobi",
    types.CBZ: "cbz",
    types.SVG: "svg",
}
_CACHE_SIZE = 4
_cache: OrderedDict[str, bytes] = OrderedDict()
_lock = threading.Lock()


class EbookError(ValueError):
    pass


def open_ebook(data: bytes, fmt: types.Format) -> pymupdf.Document:
    """The laid-out document (the caller holds ``model.documents.MUPDF_LOCK``)."""
    try:
        doc = pymupdf.open(stream=data, filetype=FILETYPES[fmt])
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise EbookError(f"the {fmt.name} file is damaged and cannot be read ({exc})") from exc
    if doc.needs_pass:
        doc.close()
        raise EbookError(f"the {fmt.name} file is protected by a password")
    return doc


def as_pdf(data: bytes, fmt: types.Format) -> bytes:
    """The whole document as PDF bytes (cached per process: a worker reads a book page by
    page, and laying out the whole book again for each page would be quadratic)."""
    key = hashlib.sha256(data).hexdigest()
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    doc = open_ebook(data, fmt)
    try:
        pdf = bytes(doc.convert_to_pdf())
    finally:
        doc.close()
    with _lock:
        _cache[key] = pdf
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return pdf
