"""Page images of Office and OpenDocument documents, so that a page's text can be read beside
what the document looks like: LibreOffice lays the document out as PDF in the worker (never in
the web process), and each page of the job is shown as a view of that PDF:

- a slide is its PDF page (hidden slides are drawn too, as they are read);
- a sheet is its PDF page (each sheet drawn as one page); a sheet cut into row ranges shows
  each range as the matching band of that page;
- a part of a text document (about PART_CHARS characters, see ``units``) is the PDF page on
  which its text begins, found by its words (then by its place in the text where its words
  are not found), never before the previous part's page.

The text itself still comes from the structure (``structure``): the rendition is only looked
at. Without LibreOffice there are no page images, and the text is read all the same.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

import pymupdf

from model.documents import MUPDF_LOCK, PDF
from model.formats import libreoffice, types, units
from model.page_images import render_page_images

RENDERED = frozenset(libreoffice.PDF_FILTERS)
_PRESENTATIONS = (types.PPTX, types.PPTM, types.PPT)
_WORKBOOKS = (types.XLSX, types.XLSM, types.XLS)
# Word trigrams tried from the start of a part before falling back to its place in the text:
# the first words can be a table's or a list's, which a PDF's text may order differently.
_ANCHOR_TRIES = 80
_WORD = re.compile(r"[^\W_]+")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")


@dataclass(frozen=True)
class View:
    """Where a page of the job is in the rendition: a PDF page (0-based), and the band of it
    between ``top`` and ``bottom`` (fractions of its height)."""

    page: int
    top: float = 0.0
    bottom: float = 1.0


@dataclass(frozen=True)
class Rendition:
    pdf: bytes
    views: tuple[View, ...]  # one per page of the job, in order


# Renditions of a few documents made last, per process: a worker takes a document's pages one
# task at a time, and LibreOffice takes seconds per document.
_CACHE_SIZE = 4
# Per document: its PDF, each PDF page's text, and the views of each set of units seen.
_cache: OrderedDict[str, tuple[bytes, list[str], dict[str, tuple[View, ...]]]] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class PageImages:
    jpeg: bytes  # the panel's (model.page_images' sizes, as for every page)
    full_jpeg: bytes  # the zoomed view's
    size: tuple[float, float]  # what the images show, in points (for the layout's boxes)


def rendered(fmt: types.Format) -> bool:
    return fmt in RENDERED and libreoffice.program() is not None


def rendition(data: bytes, fmt: types.Format, page_units: list[str]) -> Rendition:
    """The document as PDF and each unit's view of it (``page_units``: the structural
    conversion's units, which the parts of a text are matched to). Raises
    ``libreoffice.LibreOfficeError`` when LibreOffice fails or runs out of time."""
    # Keyed by the document and its units: the units (so the views) depend on the job's
    # options, and a document converted under other options is not laid out again.
    key = f"{fmt.mime_type}:{hashlib.sha256(data).hexdigest()}"
    units_key = hashlib.sha256("\0".join(page_units).encode()).hexdigest()
    with _cache_lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
            if units_key in entry[2]:
                return Rendition(entry[0], entry[2][units_key])
    if entry is None:
        made_pdf = libreoffice.to_pdf(data, fmt)
        with MUPDF_LOCK, pymupdf.open(stream=made_pdf, filetype="pdf") as doc:
            entry = (made_pdf, [page.get_text() for page in doc], {})
    pdf, page_texts, views = entry
    made = Rendition(pdf, tuple(unit_views(data, fmt, page_units, page_texts)))
    with _cache_lock:
        views[units_key] = made.views
        _cache[key] = entry
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return made


def unit_views(
    data: bytes, fmt: types.Format, page_units: list[str], page_texts: list[str]
) -> list[View]:
    pages = len(page_texts)
    if fmt in _PRESENTATIONS and pages == len(page_units):
        return [View(number) for number in range(pages)]
    if fmt in _WORKBOOKS:
        plan = units.unit_plan(data, fmt)
        if pages == len(plan) and sum(plan) == len(page_units):
            return [
                View(sheet, part / count, (part + 1) / count)
                for sheet, count in enumerate(plan)
                for part in range(count)
            ]
    return _views_by_text(page_units, page_texts)


def _views_by_text(page_units: list[str], page_texts: list[str]) -> list[View]:
    words: list[str] = []
    starts: list[int] = []  # the index in ``words`` of each page's first word
    for text in page_texts:
        starts.append(len(words))
        words += _words(text)
    trigrams: dict[tuple[str, ...], list[int]] = {}
    for position in range(len(words) - 2):
        trigrams.setdefault(tuple(words[position : position + 3]), []).append(position)
    unit_words = [_words(unit) for unit in page_units]
    total = sum(len(found) for found in unit_words) or 1
    views, cursor, done = [], 0, 0
    for found in unit_words:
        anchor = _anchor(found, trigrams, cursor)
        # Not found by its words: the same share of the PDF's words as of the units'.
        position = anchor if anchor is not None else max(cursor, round(done / total * len(words)))
        cursor = position
        done += len(found)
        page = max(0, bisect.bisect_right(starts, position) - 1)
        views.append(View(min(page, max(0, len(page_texts) - 1))))
    return views


def _anchor(
    found: list[str], trigrams: dict[tuple[str, ...], list[int]], cursor: int
) -> int | None:
    for offset in range(min(_ANCHOR_TRIES, len(found) - 2)):
        positions = trigrams.get(tuple(found[offset : offset + 3]))
        if not positions:
            continue
        index = bisect.bisect_left(positions, cursor)
        if index < len(positions):
            return max(cursor, positions[index] - offset)
    return None


def _words(text: str) -> list[str]:
    # A unit's HTML tables (table_format html or auto) are matched by their cells' words.
    return [word.casefold() for word in _WORD.findall(_TAG.sub(" ", text))]


def page_images(made: Rendition, number: int, *, timeout: float) -> PageImages:
    """Page ``number`` (1-based) of the job, drawn from its view of the rendition: the view
    cut out as a one-page PDF here (no drawing), then drawn like any PDF page, in a child
    process killed past ``timeout`` s (``model.page_images``: a page's drawing can take
    without bound, and LibreOffice's PDF carries the document's own pictures)."""
    view = made.views[number - 1]
    with MUPDF_LOCK, pymupdf.open(stream=made.pdf, filetype="pdf") as doc:
        doc.select([view.page])
        page = doc[0]
        rect = page.rect
        band = pymupdf.Rect(
            rect.x0, rect.y0 + view.top * rect.height, rect.x1, rect.y0 + view.bottom * rect.height
        )
        page.set_cropbox(band)
        one_page = doc.tobytes(garbage=1)
    drawn = render_page_images(one_page, PDF, 1, timeout=timeout)
    return PageImages(drawn.panel, drawn.full, (float(band.width), float(band.height)))
