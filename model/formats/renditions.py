"""Page images of Office and OpenDocument documents, so that a page's text can be read beside
what the document looks like: LibreOffice lays the document out as PDF in the worker (never in
the web process), and each page of the job is shown as a view of that PDF:

- a slide is its PDF page (hidden slides are drawn too, as they are read);
- a sheet is its PDF page (each sheet drawn as one page); a sheet cut into row ranges shows
  each range as the matching band of that page, its edges moved off the rows' text to the
  space between rows; a sheet or band much taller than wide (200 rows of a few columns) is
  drawn as strips side by side, the sheet's first row heading each, so that it is read at the
  size of a printed page instead of as a sliver (``_sheet_page``);
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
from model.page_images import render_page_image

RENDERED = frozenset(libreoffice.PDF_FILTERS)
_PRESENTATIONS = (types.PPTX, types.PPTM, types.PPT)
_WORKBOOKS = (types.XLSX, types.XLSM, types.XLS)
# Calc lays these out, a sheet a PDF page (an ODS is cut by its text, not by its sheets).
_SHEETS = (*_WORKBOOKS, types.ODS)
# A sheet's view taller than this (height over width) is drawn as strips side by side, as
# few as bring it under (a little taller than A4's 1.41): 200 rows of four columns are ten
# times taller than wide, and drawn whole on the panel's long side (1,400 px) that is 141 px
# wide, its rows 7 px high; in three strips it is about square, its rows 20 px high.
MAX_SHEET_ASPECT = 1.5
MAX_STRIPS = 12
STRIP_GUTTER = 12.0  # points between strips, a rule down the middle
# Word trigrams tried from the start of a part before falling back to its place in the text:
# the first words can be a table's or a list's, which a PDF's text may order differently.
_ANCHOR_TRIES = 80
_WORD = re.compile(r"[^\W_]+")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")


@dataclass(frozen=True)
class View:
    """Where a page of the job is in the rendition: a PDF page (0-based), and the band of it
    between ``top`` and ``bottom`` (fractions of its height); ``sheet`` for a spreadsheet's
    page (its band's edges fall between rows, and a tall one is drawn in strips)."""

    page: int
    top: float = 0.0
    bottom: float = 1.0
    sheet: bool = False


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
class PageImage:
    webp: bytes  # model.page_images' one image, as for every page
    size: tuple[float, float]  # what the image shows, in points (for the layout's boxes)


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
                View(sheet, part / count, (part + 1) / count, sheet=True)
                for sheet, count in enumerate(plan)
                for part in range(count)
            ]
    views = _views_by_text(page_units, page_texts)
    if fmt in _SHEETS:
        return [View(view.page, view.top, view.bottom, sheet=True) for view in views]
    return views


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


def page_image(made: Rendition, number: int, *, timeout: float) -> PageImage:
    """Page ``number`` (1-based) of the job, drawn from its view of the rendition: the view
    cut out as a one-page PDF here (no drawing), then drawn like any PDF page, in a child
    process killed past ``timeout`` s (``model.page_images``: a page's drawing can take
    without bound, and LibreOffice's PDF carries the document's own pictures)."""
    one_page, size = view_pdf(made, number)
    drawn = render_page_image(one_page, PDF, 1, timeout=timeout)
    return PageImage(drawn.webp, size)


def view_pdf(made: Rendition, number: int) -> tuple[bytes, tuple[float, float]]:
    """Page ``number``'s view of the rendition as a one-page PDF, and that page's size in
    points."""
    view = made.views[number - 1]
    with MUPDF_LOCK, pymupdf.open(stream=made.pdf, filetype="pdf") as doc:
        if view.sheet:
            return _sheet_page(doc, view)
        doc.select([view.page])
        return _cropped(doc, _band(doc[0].rect, view.top, view.bottom))


def _band(rect: pymupdf.Rect, top: float, bottom: float) -> pymupdf.Rect:
    return pymupdf.Rect(
        rect.x0, rect.y0 + top * rect.height, rect.x1, rect.y0 + bottom * rect.height
    )


def _cropped(doc: pymupdf.Document, band: pymupdf.Rect) -> tuple[bytes, tuple[float, float]]:
    """The document's one page cropped to ``band``, as PDF, and the band's size."""
    doc[0].set_cropbox(band)
    return doc.tobytes(garbage=1), (float(band.width), float(band.height))


def _sheet_page(doc: pymupdf.Document, view: View) -> tuple[bytes, tuple[float, float]]:
    """A sheet's band, its edges moved between rows. A band that does not begin with the
    sheet's first row gets it on top, as the range's Markdown repeats its header; a band
    taller than MAX_SHEET_ASPECT is drawn as strips side by side, each headed so. The PDF's
    own drawing is placed (``show_pdf_page``), not redrawn."""
    rect = doc[view.page].rect
    rows = _text_rows(doc[view.page])
    top = _between_rows(rect.y0 + view.top * rect.height, rows, rect)
    bottom = _between_rows(rect.y0 + view.bottom * rect.height, rows, rect)
    # The first row, with half the space below it.
    header_bottom = rect.y0
    if rows:
        header_bottom = (rows[0][1] + rows[1][0]) / 2 if len(rows) > 1 else rows[0][1]
    strips = _strip_count(bottom - top, rect.width, header_bottom - rect.y0)
    if strips == 1 and top < header_bottom:
        doc.select([view.page])
        return _cropped(doc, pymupdf.Rect(rect.x0, top, rect.x1, bottom))
    cuts = [top]
    for index in range(1, strips):
        cut = _between_rows(top + index * (bottom - top) / strips, rows, rect)
        if cuts[-1] < cut < bottom:
            cuts.append(cut)
    cuts.append(bottom)
    header = pymupdf.Rect(rect.x0, rect.y0, rect.x1, header_bottom)
    pieces = [
        (None if y0 < header_bottom else header, pymupdf.Rect(rect.x0, y0, rect.x1, y1))
        for y0, y1 in zip(cuts, cuts[1:], strict=False)
    ]
    return _side_by_side(doc, view.page, pieces)


def _side_by_side(
    doc: pymupdf.Document, number: int, pieces: list[tuple[pymupdf.Rect | None, pymupdf.Rect]]
) -> tuple[bytes, tuple[float, float]]:
    """A new one-page PDF with each (header, piece) of page ``number`` placed in a column of
    its own, left to right, a rule in the gutter between columns."""
    width = doc[number].rect.width
    height = max(piece.height + (head.height if head else 0.0) for head, piece in pieces)
    out = pymupdf.open()
    page = out.new_page(width=len(pieces) * width + (len(pieces) - 1) * STRIP_GUTTER, height=height)
    for index, (head, piece) in enumerate(pieces):
        x, y = index * (width + STRIP_GUTTER), 0.0
        if head is not None:
            page.show_pdf_page(pymupdf.Rect(x, 0, x + width, head.height), doc, number, clip=head)
            y = head.height
        page.show_pdf_page(pymupdf.Rect(x, y, x + width, y + piece.height), doc, number, clip=piece)
        if index:
            rule = x - STRIP_GUTTER / 2
            page.draw_line((rule, 0), (rule, height), color=(0.75, 0.75, 0.75), width=0.5)
    size = (float(page.rect.width), float(page.rect.height))
    made = out.tobytes(garbage=1)
    out.close()
    return made, size


def _strip_count(height: float, width: float, header: float) -> int:
    """How many strips a band of ``height`` x ``width`` points is drawn in: the fewest that
    bring it under MAX_SHEET_ASPECT, a ``header`` on each."""
    for strips in range(1, MAX_STRIPS + 1):
        drawn_width = strips * width + (strips - 1) * STRIP_GUTTER
        if height / strips + header <= MAX_SHEET_ASPECT * drawn_width:
            return strips
    return MAX_STRIPS


def _text_rows(page: pymupdf.Page) -> list[tuple[float, float]]:
    """The vertical extents of the page's lines of text, overlapping ones merged: a sheet's
    rows, top to bottom."""
    extents = sorted((word[1], word[3]) for word in page.get_text("words"))
    rows: list[tuple[float, float]] = []
    for y0, y1 in extents:
        if rows and y0 < rows[-1][1]:
            rows[-1] = (rows[-1][0], max(rows[-1][1], y1))
        else:
            rows.append((y0, y1))
    return rows


def _between_rows(y: float, rows: list[tuple[float, float]], rect: pymupdf.Rect) -> float:
    """``y``, or where it cuts through a row's text, the middle of the space above or below
    that row, whichever is nearer (the page's edge past the first and last rows)."""
    tops = [row[0] for row in rows]
    index = bisect.bisect_right(tops, y) - 1
    if index < 0 or y >= rows[index][1] or y <= rect.y0 or y >= rect.y1:
        return y
    row_top, row_bottom = rows[index]
    above = (rows[index - 1][1] + row_top) / 2 if index > 0 else (rect.y0 + row_top) / 2
    below = (
        (row_bottom + rows[index + 1][0]) / 2
        if index + 1 < len(rows)
        else (row_bottom + rect.y1) / 2
    )
    return above if y - above <= below - y else below
