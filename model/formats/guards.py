"""The refusals that come before any parsing of a zip-and-XML document (OOXML, OpenDocument,
EPUB, XPS, CBZ): each one cheap, decided from the archive's directory and a streamed scan of
its XML, so a hostile file costs the web process next to nothing.

- zip bombs: too many entries, too many bytes once inflated, an entry inflating too far;
- XML entity expansion: any DTD in an XML part (OOXML and OpenDocument never need one);
- external references: a relationship or link that would make a reader fetch something
  (linked images, OLE links, remote templates, external workbooks); hyperlinks are text;
- absurd sheets: a worksheet whose cells span more than MAX_SHEET_CELLS.

Macros are data: a macro-enabled file is read like any other and its macros never run
(nothing here or in the converters executes them; LibreOffice runs with macros disabled).
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from model.formats import types

MAX_ZIP_ENTRIES = 10_000
MAX_INFLATED_BYTES = 256 * 1024 * 1024
# Real XML inflates 5-30x; a bomb inflates 1000x. Small entries may inflate far (a run of
# spaces), so the ratio applies only to entries past a mebibyte.
MAX_ENTRY_RATIO = 200
_RATIO_FLOOR_BYTES = 1024 * 1024
# The cells a sheet spans (rows x columns of its used area). A million is 40,000 rows of 25
# columns; the converter would need minutes past that, and the Markdown would be unreadable.
MAX_SHEET_CELLS = 1_000_000
EXCEL_MAX_ROWS, EXCEL_MAX_COLUMNS = 1_048_576, 16_384
_PROLOG_WINDOW = 64 * 1024
_SCAN_CHUNK = 1024 * 1024

_XML_SUFFIXES = (".xml", ".rels", ".vml", ".opf", ".ncx", ".xhtml", ".fdoc", ".fdseq", ".fpage")
_PROLOG = re.compile(rb"^(?:\s+|<\?.*?\?>|<!--.*?-->)*", re.S)
# Relationship types that are text when external; every other external target is a fetch.
_HARMLESS_EXTERNAL = ("/hyperlink",)
# Word records the template a document was made from, usually a path on the author's disk
# that nothing here reads; a template on another machine is how remote-template attacks load.
_TEMPLATE = "/attachedTemplate"
# What each external relationship type is, in words.
_LINKED = {
    "image": "image",
    "oleObject": "OLE object",
    "attachedTemplate": "template",
    "externalLinkPath": "workbook",
    "externalLink": "workbook",
    "frame": "frame",
    "subDocument": "subdocument",
    "package": "embedded package",
    "audio": "audio",
    "video": "video",
}
_REMOTE = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*://(?!/)|\\\\|//)")
_ODF_LINKING = re.compile(
    rb"<(draw:image|draw:object|draw:object-ole|draw:plugin|draw:floating-frame|"
    rb"text:section-source|table:table-source|office:dde-source|text:dde-connection-decl|"
    rb"table:dde-link)\b[^>]*?(?:xlink:href|office:dde-application)=\"([^\"]*)\"",
    re.S,
)
# A cell with content (not a self-closing, merely formatted one) and its reference.
_FILLED_CELL = re.compile(rb"<c\b[^>]*?\br=\"([A-Z]{1,3})([0-9]{1,7})\"[^>]*?(?<!/)>")
_ODS_CELL = re.compile(rb"<table:table-cell\b([^>]*)>")
_ODS_REPEAT = re.compile(rb"table:number-columns-repeated=\"([0-9]+)\"")


class ContainerRefused(Exception):
    """A zip-and-XML document refused before parsing; ``code`` picks the DocumentError."""

    def __init__(self, message: str, *, code: str):
        super().__init__(message)
        self.code = code  # "too_large" | "unsafe" | "corrupt"


@dataclass(frozen=True)
class ContainerReport:
    entries: int
    inflated_bytes: int
    has_macros: bool


def check_container(data: bytes, fmt: types.Format) -> ContainerReport:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ContainerRefused(f"the {fmt.name} file is damaged ({exc})", code="corrupt") from exc
    with archive:
        infos = archive.infolist()
        inflated = _check_sizes(infos, fmt)
        for info in infos:
            if info.filename.lower().endswith(_XML_SUFFIXES):
                _check_prolog(archive, info, fmt)
        if fmt in (types.DOCX, types.DOCM, types.PPTX, types.PPTM, types.XLSX, types.XLSM):
            _check_relationships(archive, infos, fmt)
        if fmt in (types.ODT, types.ODS, types.ODP):
            _check_odf_links(archive, fmt)
        if fmt in (types.XLSX, types.XLSM):
            _check_ooxml_sheets(archive, infos)
        if fmt is types.ODS:
            _check_ods_cells(archive)
        macros = any(
            info.filename.lower().endswith("vbaproject.bin")
            or info.filename.startswith(("Basic/", "Scripts/"))
            for info in infos
        )
    return ContainerReport(entries=len(infos), inflated_bytes=inflated, has_macros=macros)


def _check_sizes(infos: list[zipfile.ZipInfo], fmt: types.Format) -> int:
    if len(infos) > MAX_ZIP_ENTRIES:
        raise ContainerRefused(
            f"the {fmt.name} file holds {len(infos):,} parts; we take at most "
            f"{MAX_ZIP_ENTRIES:,} (a document with that many is more likely a zip bomb)",
            code="too_large",
        )
    total = 0
    for info in infos:
        total += info.file_size
        if info.file_size > _RATIO_FLOOR_BYTES and info.file_size > MAX_ENTRY_RATIO * max(
            info.compress_size, 1
        ):
            raise ContainerRefused(
                f"the {fmt.name} file's part {info.filename!r} inflates "
                f"{info.file_size // max(info.compress_size, 1):,} times (to "
                f"{info.file_size:,} bytes); that is a zip bomb, not a document",
                code="too_large",
            )
    if total > MAX_INFLATED_BYTES:
        raise ContainerRefused(
            f"the {fmt.name} file inflates to {total:,} bytes; we take at most "
            f"{MAX_INFLATED_BYTES:,} once unzipped",
            code="too_large",
        )
    return total


def _check_prolog(archive: zipfile.ZipFile, info: zipfile.ZipInfo, fmt: types.Format) -> None:
    """No DTD: entity declarations are how XML bombs (billion laughs) and external entities
    (file and network reads) work, and no Office or OpenDocument part has a reason for one."""
    head = _read(archive, info, _PROLOG_WINDOW)
    prolog = _PROLOG.match(head)
    rest = head[prolog.end() if prolog else 0 :]
    if rest[:9].upper() == b"<!DOCTYPE" or (not rest and len(head) == _PROLOG_WINDOW):
        raise ContainerRefused(
            f"the {fmt.name} file's part {info.filename!r} declares a DTD (entity "
            "declarations can expand without bound or read other files); we do not read it",
            code="unsafe",
        )


def _check_relationships(
    archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], fmt: types.Format
) -> None:
    for info in infos:
        if not info.filename.endswith(".rels"):
            continue
        try:
            root = SafeET.fromstring(_read(archive, info, info.file_size))
        except (DefusedXmlException, SafeET.ParseError) as exc:
            raise ContainerRefused(
                f"the {fmt.name} file's part {info.filename!r} is not readable XML ({exc})",
                code="unsafe" if isinstance(exc, DefusedXmlException) else "corrupt",
            ) from exc
        for relationship in root:
            if relationship.get("TargetMode") != "External":
                continue
            kind = relationship.get("Type", "")
            if kind.endswith(_HARMLESS_EXTERNAL):
                continue
            if kind.endswith(_TEMPLATE) and not _REMOTE.match(relationship.get("Target", "")):
                continue
            raise ContainerRefused(
                f"the {fmt.name} file links to an outside "
                f"{_LINKED.get(kind.rsplit('/', 1)[-1], 'item')} "
                f"({relationship.get('Target', '')[:200]!r}); we fetch nothing a document "
                "points to, so please embed it or remove the link",
                code="unsafe",
            )


def _check_odf_links(archive: zipfile.ZipFile, fmt: types.Format) -> None:
    for name in ("content.xml", "styles.xml"):
        try:
            info = archive.getinfo(name)
        except KeyError:
            continue
        for chunk in chunks(archive, info):
            for match in _ODF_LINKING.finditer(chunk):
                target = match.group(2).decode("utf-8", "replace")
                outside = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*:|/|\\|\.\./)", target)
                dde = b"dde" in match.group(1)
                if not outside and not dde:
                    continue
                raise ContainerRefused(
                    f"the {fmt.name} file links to an outside "
                    f"{match.group(1).decode().split(':')[-1]} ({target[:200]!r}); we fetch "
                    "nothing a document points to, so please embed it or remove the link",
                    code="unsafe",
                )


def _check_ooxml_sheets(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> None:
    for info in infos:
        name = info.filename
        if name.startswith("xl/worksheets/") and name.endswith(".xml"):
            rows, columns = filled_extent(archive, info)
            _check_extent(name.rsplit("/", 1)[-1].removesuffix(".xml"), rows, columns)


def filled_extent(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[int, int]:
    """(last row, last column) holding a value in a worksheet part. Formatted empty cells do
    not count: a style applied down to row 1,048,576 is common and harmless."""
    rows = columns = 0
    for chunk in chunks(archive, info):
        for letters, digits in _FILLED_CELL.findall(chunk):
            rows = max(rows, int(digits))
            columns = max(columns, _column_number(letters))
    return rows, columns


def _check_ods_cells(archive: zipfile.ZipFile) -> None:
    try:
        info = archive.getinfo("content.xml")
    except KeyError:
        return
    cells = 0
    for chunk in chunks(archive, info):
        for attributes in _ODS_CELL.findall(chunk):
            if b"office:value-type" not in attributes:
                continue  # empty cells, however repeated, are not read
            repeat = _ODS_REPEAT.search(attributes)
            cells += int(repeat.group(1)) if repeat else 1
    if cells > MAX_SHEET_CELLS:
        raise ContainerRefused(
            f"the spreadsheet has {cells:,} filled cells; we take at most "
            f"{MAX_SHEET_CELLS:,} (split it, or export the part you need)",
            code="too_large",
        )


def _check_extent(sheet: str, rows: int, columns: int) -> None:
    if rows > EXCEL_MAX_ROWS or columns > EXCEL_MAX_COLUMNS:
        raise ContainerRefused(
            f"sheet {sheet} has a cell at row {rows:,}, column {columns:,}, past what a "
            "spreadsheet can hold; the file is damaged or forged",
            code="corrupt",
        )
    if rows * columns > MAX_SHEET_CELLS:
        raise ContainerRefused(
            f"sheet {sheet} spans {rows:,} rows by {columns:,} columns "
            f"({rows * columns:,} cells); we take at most {MAX_SHEET_CELLS:,} cells a sheet "
            "(delete the stray cells far from the data, or split the sheet)",
            code="too_large",
        )


def _column_number(letters: bytes) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + (letter - 64)
    return number


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    try:
        with archive.open(info) as entry:
            return entry.read(limit)
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError) as exc:
        raise ContainerRefused(
            f"the part {info.filename!r} cannot be read ({exc})", code="corrupt"
        ) from exc


def chunks(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, overlap: int = 512
) -> Iterator[bytes]:
    """The entry's bytes in chunks, each starting with the last ``overlap`` bytes of the one
    before, so that a tag cut at a chunk edge is seen whole (and may be seen twice)."""
    try:
        with archive.open(info) as entry:
            tail = b""
            while chunk := entry.read(_SCAN_CHUNK):
                yield tail + chunk
                tail = chunk[-overlap:] if overlap else b""
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError) as exc:
        raise ContainerRefused(
            f"the part {info.filename!r} cannot be read ({exc})", code="corrupt"
        ) from exc
