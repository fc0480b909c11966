"""How many pages a structured document becomes, decided cheaply and the same way in the web
process (to create the page rows) and in the worker (to cut the converted Markdown to fit).

- a slide is a page (PPTX, PPT);
- a sheet is a page, and a sheet with more than SHEET_ROWS_PER_PART filled rows is cut into
  that many rows a page (XLSX, XLSM, XLS, CSV);
- everything else (DOCX, ODT, ODP, ODS, HTML, Markdown, text) is cut into parts of about
  PART_CHARS characters of text, about one printed page.

The count comes from the text and cells in the XML, streamed through a namespace-aware parser
(what the converters will walk: a row without its ``r`` is the row after the one before, a
slide under any prefix is a slide), stopping at the sheet limits of ``guards``; or from a
legacy binary file's own records (a DOC's text length in its File Information Block, an XLS's
cell records, a PPT's slide list), with no layout and no conversion: the web process never
converts a document, and a legacy file gets the pages the file LibreOffice saves from it would.
"""

from __future__ import annotations

import io
import itertools
import math
import re
import struct
import zipfile
from collections.abc import Iterator
from typing import Any

import defusedxml.ElementTree as SafeET
import olefile

from model.formats import guards, types, webpage
from model.formats.text import normalized_text

# About one printed page: an A4 page of 11-point prose holds 3,000-3,500 characters.
PART_CHARS = 4000
SHEET_ROWS_PER_PART = 250

_TAG = re.compile(rb"<[^>]*>")
_RTF_CONTROL = re.compile(rb"\\[a-zA-Z]+-?[0-9]* ?|\\'[0-9a-fA-F]{2}|[{}]|\{\\\*[^{}]*\}")
_BOUNDSHEET = 0x0085  # a BIFF record naming one sheet of an XLS workbook
_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_PML_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"
_WML_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_MATH_NS = "http://schemas.openxmlformats.org/officeDocument/2006/math"


def unit_plan(
    data: bytes,
    fmt: types.Format,
    *,
    max_cells: int = guards.MAX_SHEET_CELLS,
    max_pages: int | None = None,
) -> list[int]:
    """Pages per section, in order: one entry per slide or sheet, or one for the whole text.
    A workbook's sheets are read only as far as ``max_cells`` allows, and, given
    ``max_pages`` (the pages a job may take), only until their rows pass that many pages
    (``filled_extent``): the rest would be refused, and is never read."""
    if fmt in (types.PPTX, types.PPTM):
        return [1] * max(1, _pptx_slides(data, fmt))
    if fmt in (types.XLSX, types.XLSM):
        return [_row_parts(rows) for rows in _sheet_rows(data, fmt, max_cells, max_pages)] or [1]
    if fmt is types.CSV:
        return [_row_parts(len(normalized_text(data).splitlines()))]
    if fmt is types.PPT:
        return [1] * max(1, _ppt_slides(data))
    if fmt is types.XLS:
        # As the XLSX LibreOffice saves it is cut: a sheet, or ranges of its filled rows.
        return [_row_parts(rows) for rows in _xls_sheet_rows(data)] or [1]
    return [max(1, math.ceil(text_length(data, fmt) / PART_CHARS))]


def text_length(data: bytes, fmt: types.Format) -> int:
    if fmt in (types.DOCX, types.DOCM):
        return _docx_text_length(data, fmt)
    if fmt in (types.ODT, types.ODS, types.ODP):
        return sum(
            len(b" ".join(_TAG.sub(b" ", chunk).split()))
            for chunk in _entry_chunks(data, "content.xml")
        )
    if fmt is types.HTML:
        return webpage.main_content(normalized_text(data)).text_length
    if fmt is types.DOC:
        # The main text's length as Word counts it; the summary's character count is only a
        # cache that LibreOffice, among others, leaves at 0.
        return _doc_text_length(data) or _ole_metadata(data).num_chars or 0
    if fmt is types.RTF:
        return len(b" ".join(_RTF_CONTROL.sub(b" ", _rtf_without_tables(data)).split()))
    return len(normalized_text(data))


# Groups of an RTF file that hold no text of the document: the font, colour and style tables,
# the document's properties, list definitions, pictures and objects (hex data), and every
# ignorable destination ({\\*...}).
_RTF_SKIPPED = re.compile(
    rb"\{\\(?:\*|fonttbl|colortbl|stylesheet|info|listtable|listoverridetable|rsidtbl"
    rb"|pict|object|shp|nonshppict)(?![a-z])"
)
_RTF_SYNTAX = re.compile(rb"[\\{}]")


def _rtf_without_tables(data: bytes) -> bytes:
    """The RTF with its non-text groups cut out, nested braces and all (escaped braces
    ``\\{`` and ``\\}`` are text); the scan jumps from brace to brace, so a picture's
    megabytes of hex cost one search."""
    out, position = [], 0
    for match in _RTF_SKIPPED.finditer(data):
        if match.start() < position:
            continue  # inside a group already cut
        out.append(data[position : match.start()])
        depth, index = 0, match.start()
        while (syntax := _RTF_SYNTAX.search(data, index)) is not None:
            char, index = syntax.group(), syntax.end()
            if char == b"\\":
                index += 1  # an escaped character, maybe a brace
            elif (depth := depth + (1 if char == b"{" else -1)) == 0:
                break
        else:
            index = len(data)
        position = index
    out.append(data[position:])
    return b"".join(out)


def _row_parts(rows: int) -> int:
    return max(1, math.ceil(rows / SHEET_ROWS_PER_PART))


def _sheet_rows(data: bytes, fmt: types.Format, max_cells: int, max_pages: int | None) -> list[int]:
    """Filled rows of each sheet (chart sheets: 0), in the workbook's order; each sheet read
    only as far as the pages the sheets before it leave of ``max_pages``."""
    with guards.open_archive(data, fmt) as archive:
        workbook = SafeET.fromstring(archive.read("xl/workbook.xml"))
        rels = SafeET.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
        targets = {rel.get("Id"): rel.get("Target", "") for rel in rels}
        rows: list[int] = []
        for sheet in workbook.iter(f"{{{_MAIN_NS}}}sheet"):
            target = targets.get(sheet.get(f"{{{_REL_NS}}}id"), "")
            name = target.lstrip("/") if target.startswith("/") else f"xl/{target}"
            try:
                info = archive.getinfo(name)
            except KeyError:
                rows.append(0)
                continue
            label = name.rsplit("/", 1)[-1].removesuffix(".xml")
            room = None
            if max_pages is not None:
                pages_before = sum(_row_parts(earlier) for earlier in rows)
                room = max(0, max_pages - pages_before) * SHEET_ROWS_PER_PART
            extent = filled_extent(
                archive, info, fmt, sheet=label, max_cells=max_cells, max_rows=room
            )
            rows.append(extent[0])
    return rows


def filled_extent(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    fmt: types.Format,
    *,
    sheet: str,
    max_cells: int = guards.MAX_SHEET_CELLS,
    max_rows: int | None = None,
) -> tuple[int, int]:
    """(last row, last column) holding a value in a worksheet part, as openpyxl places its
    cells: by their ``r``, or after the row (the cell) before where they have none.
    Formatted empty cells do not count (a style applied down to row 1,048,576 is common and
    harmless). What it reads is bounded by ``max_cells`` whatever the sheet holds: a byte
    scan first (``sheet_bound``), stopping where the sheet passes a limit, then a parse of
    at most ``ELEMENTS_PER_CELL * max_cells`` elements that stops at the row where the extent
    passes the limit (``guards.check_sheet_extent``) and lets go of every element it has
    passed (``guards.iter_rows``). Given ``max_rows`` (what the job's page limit leaves for
    this sheet), it stops at the first filled row past it, so that a sheet of more pages
    than a job may take costs the parse of those pages only."""
    sheet_bound(archive, info, sheet=sheet, max_cells=max_cells)
    last_row = rows = columns = 0
    rows_of = guards.iter_rows(
        archive, info, fmt, f"{{{_MAIN_NS}}}row", max_children=guards.EXCEL_MAX_COLUMNS
    )
    for row in rows_of:
        last_row = _position(row.get("r"), last_row + 1)
        column = 0
        for cell in row.iterchildren(f"{{{_MAIN_NS}}}c"):
            reference = cell.get("r")
            column = _column_of(reference) if reference else column + 1
            if len(cell):  # a value, a formula or inline text
                rows, columns = last_row, max(columns, column)
        guards.check_sheet_extent(sheet, rows, columns, max_cells=max_cells)
        if max_rows is not None and rows > max_rows:
            raise guards.ContainerRefused(
                f"sheet {sheet} has a filled row past row {max_rows:,}, more than the pages "
                f"of {SHEET_ROWS_PER_PART} rows a job may take; this server takes at most "
                f"{max_rows // SHEET_ROWS_PER_PART:,} more pages of this workbook (split it, "
                "or save the rows you need as a workbook of their own)",
                code="too_large",
            )
    return rows, columns


def sheet_bound(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, sheet: str, max_cells: int
) -> None:
    """Refuses a worksheet part that is over the limits whatever a parse would find, at the
    speed of a byte search and as soon as it passes them (the rest is never read): its value
    elements (a filled cell holds one, ``<v>`` under any prefix) past ``max_cells``, or its
    elements of any kind past ``ELEMENTS_PER_CELL`` times that. Each element starts with a
    ``<`` that no text or attribute may hold unescaped, so ``<`` less ``</`` bounds the
    elements from above (comments and instructions count too): a sheet within it costs the
    parse that many elements at most, one without a single value (a million empty
    ``<row/>``) included. Each chunk is counted up to its last ``>`` (the rest goes with the
    next one), so that no tag is cut at a chunk's edge: the counts are exact, and a sheet one
    value past the limit is refused here, not at the end of a parse."""
    values = elements = 0
    carry = b""
    # The last piece (text after the last tag, if any) is counted by a closing ">" of none.
    for chunk in itertools.chain(guards.chunks(archive, info), [b">"]):
        cut = chunk.rfind(b">") + 1
        if not cut:
            carry += chunk
            continue
        block, carry = carry + chunk[:cut], chunk[cut:]
        values += len(_VALUE_END.findall(block))
        elements += block.count(b"<") - block.count(b"</")
        guards.check_filled_cells(values, max_cells=max_cells)
        guards.check_sheet_elements(sheet, elements, max_cells=max_cells)


def _position(value: str | None, default: int) -> int:
    try:
        return int(value) if value else default
    except ValueError:
        return default


_VALUE_END = re.compile(rb"</(?:[A-Za-z_][\w.-]*:)?v>")
_REFERENCE = re.compile(r"([A-Za-z]{1,3})[0-9]*$")


def _column_of(reference: str) -> int:
    match = _REFERENCE.match(reference.strip())
    if match is None:
        return 0
    number = 0
    for letter in match.group(1).upper():
        number = number * 26 + (ord(letter) - 64)
    return number


def _pptx_slides(data: bytes, fmt: types.Format) -> int:
    """The slides python-pptx will walk: the presentation's ``sldIdLst`` entries, in the
    PresentationML namespace whatever prefix names it."""
    with guards.open_archive(data, fmt) as archive:
        try:
            info = archive.getinfo("ppt/presentation.xml")
        except KeyError:
            return 0
        return sum(
            1
            for element in guards.iter_ended(archive, info, fmt, f"{{{_PML_NS}}}sldId")
            if element.getparent() is not None
            and element.getparent().tag == f"{{{_PML_NS}}}sldIdLst"
        )


def _docx_text_length(data: bytes, fmt: types.Format) -> int:
    """The characters of a Word file's main text runs (and equations), and one a paragraph."""
    with guards.open_archive(data, fmt) as archive:
        try:
            info = archive.getinfo("word/document.xml")
        except KeyError:
            return 0
        tags = (f"{{{_WML_NS}}}t", f"{{{_MATH_NS}}}t", f"{{{_WML_NS}}}p")
        length = 0
        for element in guards.iter_ended(archive, info, fmt, tags):
            length += 1 if element.tag == tags[2] else len(element.text or "")
        return length


def _entry_chunks(data: bytes, entry: str) -> Iterator[bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        try:
            info = archive.getinfo(entry)
        except KeyError:
            return
        yield from guards.chunks(archive, info, overlap=0)


def _ole_metadata(data: bytes) -> Any:
    """The summary properties Word and PowerPoint write into every file (character count,
    slide count): read without parsing the document itself."""
    with olefile.OleFileIO(io.BytesIO(data)) as ole:
        return ole.get_metadata()


def _doc_text_length(data: bytes) -> int:
    """ccpText of a Word 97-2003 file: the characters of its main text (paragraph marks
    included), in the FibRgLw97 of the File Information Block at the start of the
    WordDocument stream ([MS-DOC] 2.5.1): after the 32-byte FibBase, a count of 16-bit
    values and those values, then a count of 32-bit values, of which ccpText is the fourth."""
    with olefile.OleFileIO(io.BytesIO(data)) as ole:
        if not ole.exists("WordDocument"):
            return 0
        fib = ole.openstream("WordDocument").read(1024)
    if len(fib) < 36:
        return 0
    (shorts,) = struct.unpack_from("<H", fib, 32)
    longs = 32 + 2 + 2 * shorts + 2
    if longs + 16 > len(fib):
        return 0
    (text,) = struct.unpack_from("<i", fib, longs + 12)
    return max(0, int(text))


# BIFF8 records that hold a cell's value ([MS-XLS] 2.4): FORMULA, MULRK, RSTRING, LABELSST,
# NUMBER, LABEL, BOOLERR, RK. Each starts with its row (2 bytes, 0-based).
_XLS_CELLS = frozenset({0x0006, 0x00BD, 0x00D6, 0x00FD, 0x0203, 0x0204, 0x0205, 0x027E})
_BOF, _EOF = 0x0809, 0x000A


def _xls_sheet_rows(data: bytes) -> list[int]:
    """Filled rows of each sheet of an XLS workbook (its last row holding a value), in order:
    each BOUNDSHEET record points to its sheet's substream, whose cell records are read up to
    the substream's end by their headers (type and length, 2 bytes each) and first 2 bytes."""
    with olefile.OleFileIO(io.BytesIO(data)) as ole:
        name = "Workbook" if ole.exists("Workbook") else "Book"
        stream = ole.openstream(name).read()
    starts = [
        struct.unpack_from("<I", stream, body)[0]
        for kind, body, length in _biff_records(stream, 0)
        if kind == _BOUNDSHEET and length >= 4
    ]
    rows = []
    for start in starts:
        last, depth = 0, 0
        for kind, body, length in _biff_records(stream, start):
            if kind == _BOF:
                depth += 1
            elif kind == _EOF:
                depth -= 1
                if depth <= 0:
                    break
            elif kind in _XLS_CELLS and length >= 2:
                last = max(last, struct.unpack_from("<H", stream, body)[0] + 1)
        rows.append(last)
    return rows


def _biff_records(stream: bytes, offset: int) -> Iterator[tuple[int, int, int]]:
    """(type, offset of the body, length) of each record from ``offset``."""
    while offset >= 0 and offset + 4 <= len(stream):
        kind, length = struct.unpack_from("<HH", stream, offset)
        yield kind, offset + 4, min(length, len(stream) - offset - 4)
        offset += 4 + length


_PPT_DOCUMENT, _PPT_SLIDE_LIST, _PPT_SLIDE_PERSIST = 0x03E8, 0x0FF0, 0x03F3


def _ppt_slides(data: bytes) -> int:
    """The slides of a PPT: the slide persist atoms in the slide list (instance 0: slides, not
    masters or notes) of the last document container of the PowerPoint Document stream (an
    incremental save appends a new one). Record headers only: 2 bytes version and instance,
    2 bytes type, 4 bytes length."""
    with olefile.OleFileIO(io.BytesIO(data)) as ole:
        stream = ole.openstream("PowerPoint Document").read()
    slides = 0
    for kind, _, start, end in _ppt_records(stream, 0, len(stream)):
        if kind != _PPT_DOCUMENT:
            continue
        slides = 0
        for child, instance, child_start, child_end in _ppt_records(stream, start, end):
            if child == _PPT_SLIDE_LIST and instance == 0:
                slides += sum(
                    1
                    for atom, _, _, _ in _ppt_records(stream, child_start, child_end)
                    if atom == _PPT_SLIDE_PERSIST
                )
    return slides


def _ppt_records(stream: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    offset = start
    while offset + 8 <= end:
        version_instance, kind, length = struct.unpack_from("<HHI", stream, offset)
        body = offset + 8
        yield kind, version_instance >> 4, body, min(body + length, end)
        offset = body + length
