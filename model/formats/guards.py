"""The refusals that come before any conversion of a zip-and-XML document (OOXML, OpenDocument,
EPUB, XPS, CBZ), each decided with an XML parser (namespace-aware, whatever the prefixes,
quoting or encoding), never by matching patterns in bytes:

- zip bombs: too many entries, too many bytes once inflated, an entry inflating too far;
- XML entity expansion: a DTD in any XML part, read by a parser that decodes the part first
  (a byte-order mark or UTF-16 hides nothing). Office and OpenDocument parts never need one;
  an e-book's XHTML may say ``<!DOCTYPE html>`` (EPUB 3) or name the XHTML DTD (EPUB 2), and
  only its entity declarations are refused;
- outside references: a relationship or link that would make a reader fetch or read
  something (OLE links, remote templates, external workbooks, linked sections, DDE). A
  linked *image* costs the user nothing: it is never fetched (LibreOffice runs without a
  network, ``model.formats.sandbox``, and blocks the links of untrusted documents), and its
  place in the Markdown says so (``linked_image_placeholder``). Hyperlinks are text.

How far a document goes (its slides, sheets, cells, text) is counted by ``units``, in the same
single pass that decides its pages; the sheet limits here are what it enforces.

Macros are data: a macro-enabled file is read like any other and its macros never run
(nothing here or in the converters executes them; LibreOffice runs with macros disabled).
"""

from __future__ import annotations

import io
import re
import urllib.parse
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO
from xml.etree.ElementTree import ParseError, TreeBuilder

import lxml.etree
from defusedxml import DefusedXmlException, DTDForbidden, EntitiesForbidden
from defusedxml.ElementTree import DefusedXMLParser

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
# What reading a sheet may cost, in XML elements of its worksheet part (rows, cells, values,
# formulas, inline text, formatting): a filled cell is a cell and a value or two, and its row
# when it is the row's only cell; five a cell of the limit leaves room for inline text, so
# inspecting a sheet within the limits reads at most this many, and one past them no more.
ELEMENTS_PER_CELL = 5
EXCEL_MAX_ROWS, EXCEL_MAX_COLUMNS = 1_048_576, 16_384
# What the link scan reads of any one XML part, in elements: as many as a sheet within the
# limits may hold. A real text or slide part holds far fewer (a hundred or so a page); a part
# of millions of empty elements is refused here instead of walked to its end (the scan
# streams at about 1.5 M elements a second on one core, so this bounds it to a few seconds).
MAX_PART_ELEMENTS = ELEMENTS_PER_CELL * MAX_SHEET_CELLS
_SCAN_CHUNK = 1024 * 1024

_XML_SUFFIXES = (
    ".xml", ".rels", ".vml", ".opf", ".ncx", ".xhtml", ".html", ".htm", ".svg", ".smil",
    ".fdoc", ".fdseq", ".fpage",
)  # fmt: skip
_OOXML = (types.DOCX, types.DOCM, types.PPTX, types.PPTM, types.XLSX, types.XLSM)
_ODF = (types.ODT, types.ODS, types.ODP)
# Relationship types that are text when external; every other external target is a fetch.
_HARMLESS_EXTERNAL = ("hyperlink",)
# Word records the template a document was made from, usually a path on the author's disk
# that nothing here reads; a template on another machine is how remote-template attacks load.
_TEMPLATE = "attachedTemplate"
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
# A target outside the package: a URL with a scheme, an absolute path, a UNC or Windows path,
# or a way up out of the package.
_OUTSIDE = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|/|\\|\.\.(?:/|\\|$))")
_XLINK = "http://www.w3.org/1999/xlink"
_ODF_FORM = "urn:oasis:names:tc:opendocument:xmlns:form:1.0"
# OpenDocument elements whose outside link is an image (drawn as a placeholder) or a
# hyperlink (text); any other element linking outside is refused.
_ODF_IMAGES = {"image", "background-image", "fill-image", "list-level-style-image"}
_ODF_HYPERLINKS = {"a", "event-listener", "button"}
_ODF_DDE = {"dde-source", "dde-link", "dde-connection-decl", "dde-connection"}


class ContainerRefused(Exception):
    """A zip-and-XML document refused before parsing; ``code`` picks the DocumentError."""

    def __init__(self, message: str, *, code: str):
        super().__init__(message)
        self.code = code  # "too_large" | "unsafe" | "corrupt"


@dataclass(frozen=True)
class Link:
    """An outside resource a document points to and that is never fetched."""

    kind: str  # "image"
    target: str
    part: str  # the part that names it (a slide's, the document's)


@dataclass(frozen=True)
class ContainerReport:
    entries: int
    inflated_bytes: int
    has_macros: bool
    linked: tuple[Link, ...] = ()  # linked images, each shown as a placeholder


def check_container(
    data: bytes, fmt: types.Format, *, max_cells: int = MAX_SHEET_CELLS
) -> ContainerReport:
    archive = open_archive(data, fmt)
    with archive:
        infos = archive.infolist()
        inflated = _check_sizes(infos, fmt)
        for info in infos:
            if info.filename.lower().endswith(_XML_SUFFIXES):
                check_prolog(archive, info, fmt)
        linked: list[Link] = []
        if fmt in _OOXML:
            linked += _ooxml_links(archive, infos, fmt)
        if fmt in _ODF:
            linked += _odf_links(archive, infos, fmt, max_cells=max_cells)
        macros = any(
            info.filename.lower().endswith("vbaproject.bin")
            or info.filename.startswith(("Basic/", "Scripts/"))
            for info in infos
        )
    return ContainerReport(
        entries=len(infos), inflated_bytes=inflated, has_macros=macros, linked=tuple(linked)
    )


def linked_images(data: bytes, fmt: types.Format) -> tuple[Link, ...]:
    """The outside images a document links to, in the order of its parts (the converter's
    placeholders name them); () for a document that links none or cannot be read."""
    if fmt not in (*_OOXML, *_ODF):
        return ()
    try:
        with open_archive(data, fmt) as archive:
            infos = archive.infolist()
            found = _ooxml_links(archive, infos, fmt) if fmt in _OOXML else []
            return tuple(found or (_odf_links(archive, infos, fmt) if fmt in _ODF else []))
    except ContainerRefused:
        return ()


# An RTF's linked picture: an INCLUDEPICTURE field (Word writes one for a linked image);
# LibreOffice drops it (its link blocked), so the placeholder comes from the field itself.
_RTF_INCLUDEPICTURE = re.compile(rb'INCLUDEPICTURE\s+(?:\\\\?[a-z*]+\s+)*"([^"]{1,2000})"')


def rtf_linked_pictures(data: bytes) -> tuple[Link, ...]:
    return tuple(
        Link("image", target.decode("latin-1"), "rtf")
        for target in _RTF_INCLUDEPICTURE.findall(data)
    )


def linked_image_placeholder(target: str | None) -> str:
    """What stands in the Markdown where a linked image is: docling's image comment, naming
    the link (made safe to stand inside a comment)."""
    if not target:
        return "<!-- image (linked, not fetched) -->"
    shown = urllib.parse.quote(target[:300], safe=":/?#[]@!$&'()*+,;=%~._")
    shown = shown.replace("--", "-%2D")
    return f"<!-- image (linked, not fetched): {shown} -->"


def open_archive(data: bytes, fmt: types.Format) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ContainerRefused(f"the {fmt.name} file is damaged ({exc})", code="corrupt") from exc


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


class _RootReached(Exception):
    """The prolog is over: whatever declarations a part has come before its root element."""


class _StopAtRoot(TreeBuilder):
    def start(self, tag, attrs):  # type: ignore[no-untyped-def]
        raise _RootReached()


def check_prolog(archive: zipfile.ZipFile, info: zipfile.ZipInfo, fmt: types.Format) -> None:
    """No entity declarations, and for Office and OpenDocument no DTD at all: entities are how
    XML bombs (billion laughs) and external entities (file and network reads) work. The part
    is read by an XML parser (which decodes it by its byte-order mark or declaration) up to
    its root element, where any DTD has ended."""
    ebook = fmt.kind == "ebook"
    parser = DefusedXMLParser(
        target=_StopAtRoot(), forbid_dtd=not ebook, forbid_entities=True, forbid_external=True
    )
    empty = True
    try:
        for chunk in chunks(archive, info):
            empty = empty and not chunk.strip()
            parser.feed(chunk)
        parser.close()
    except _RootReached:
        return
    except (DTDForbidden, EntitiesForbidden, DefusedXmlException) as exc:
        what = "declares entities" if isinstance(exc, EntitiesForbidden) or ebook else "has a DTD"
        raise ContainerRefused(
            f"the {fmt.name} file's part {info.filename!r} {what} (entity declarations can "
            "expand without bound or read other files); we do not read it",
            code="unsafe",
        ) from exc
    except (ParseError, ValueError, LookupError) as exc:
        if empty or ebook:
            return  # nothing to declare; an e-book's loose XHTML is read as HTML
        raise ContainerRefused(
            f"the {fmt.name} file's part {info.filename!r} is not XML we can read ({exc}); "
            "we do not read what we cannot check",
            code="corrupt",
        ) from exc


def _ooxml_links(
    archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], fmt: types.Format
) -> list[Link]:
    """The linked images of an OOXML package's relationships (refusing any other outside
    link), each part's in the order it lists them."""
    linked: list[Link] = []
    for info in infos:
        if not info.filename.endswith(".rels"):
            continue
        part = _rels_source(info.filename)
        for element in _elements(archive, info, fmt):
            if _local(element.tag) != "Relationship":
                continue
            target = (element.get("Target") or "").strip()
            mode = (element.get("TargetMode") or "").strip().lower()
            if mode != "external" and not _REMOTE.match(target):
                continue
            kind = (element.get("Type") or "").rstrip("/").rsplit("/", 1)[-1]
            if kind in _HARMLESS_EXTERNAL or (kind == _TEMPLATE and not _REMOTE.match(target)):
                continue
            if kind == "image":
                linked.append(Link("image", target, part))
                continue
            raise ContainerRefused(
                f"the {fmt.name} file links to an outside {_LINKED.get(kind, 'item')} "
                f"({target[:200]!r}); we fetch nothing a document points to, so please embed "
                "it or remove the link",
                code="unsafe",
            )
    return linked


def _rels_source(name: str) -> str:
    """The part a relationships part belongs to: ``ppt/slides/_rels/slide1.xml.rels`` is
    ``ppt/slides/slide1.xml``'s."""
    folder, _, file = name.rpartition("_rels/")
    return f"{folder}{file.removesuffix('.rels')}"


def _odf_links(
    archive: zipfile.ZipFile,
    infos: list[zipfile.ZipInfo],
    fmt: types.Format,
    *,
    max_cells: int = MAX_SHEET_CELLS,
) -> list[Link]:
    """The linked images of an OpenDocument file's content and styles (those of its embedded
    objects too), refusing any other outside link and every DDE connection."""
    linked: list[Link] = []
    for info in infos:
        if info.filename.rsplit("/", 1)[-1] not in ("content.xml", "styles.xml"):
            continue
        spreadsheet = fmt is types.ODS and info.filename == "content.xml"
        cells = FilledCells(max_cells) if spreadsheet else None
        for element in _elements(archive, info, fmt):
            name = _local(element.tag)
            if cells is not None:
                cells.see(name, element)
            if name in _ODF_DDE:
                raise ContainerRefused(
                    f"the {fmt.name} file holds a DDE link ({name}); we fetch nothing a "
                    "document points to, so please remove the link",
                    code="unsafe",
                )
            target = element.get(f"{{{_XLINK}}}href") or element.get(f"{{{_ODF_FORM}}}image-data")
            if not target or not _outside(target):
                continue
            if name in _ODF_IMAGES or element.get(f"{{{_ODF_FORM}}}image-data"):
                linked.append(Link("image", target.strip(), info.filename))
            elif name not in _ODF_HYPERLINKS:
                raise ContainerRefused(
                    f"the {fmt.name} file links to an outside {name} ({target[:200]!r}); we "
                    "fetch nothing a document points to, so please embed it or remove the link",
                    code="unsafe",
                )
    return linked


_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"


class FilledCells:
    """The filled cells of an OpenDocument spreadsheet as its converter reads them: a cell
    with a value, as many times as it is repeated across its columns and its row is repeated
    down (empty cells, however repeated, are not read). Refuses as soon as they pass
    ``max_cells``, so a sheet far past it is read only up to it."""

    def __init__(self, max_cells: int = MAX_SHEET_CELLS) -> None:
        self.max_cells = max_cells
        self.count = 0
        self._row_repeat = 1

    def see(self, name: str, element: lxml.etree._Element) -> None:
        if name == "table-row":
            self._row_repeat = _repeat(element.get(f"{{{_TABLE}}}number-rows-repeated"))
        elif name == "table-cell" and element.get(f"{{{_OFFICE}}}value-type"):
            columns = _repeat(element.get(f"{{{_TABLE}}}number-columns-repeated"))
            self.count += columns * self._row_repeat
            check_filled_cells(self.count, max_cells=self.max_cells)


def _repeat(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1


def _outside(target: str) -> bool:
    return bool(_OUTSIDE.match(urllib.parse.unquote(target).strip()))


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _parsed(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    fmt: types.Format,
    *,
    event: str,
    tag: object = None,
) -> Iterator[lxml.etree._Element]:
    """Each element (each ``tag`` element) of a part at ``event``, streamed by a parser that
    resolves no entity, reads no DTD and nothing from outside, once the part's prolog passed
    ``check_prolog``; a part that is not XML is refused as corrupt. The callers let go of what
    they have passed."""
    check_prolog(archive, info, fmt)
    with _open(archive, info) as entry:
        events = lxml.etree.iterparse(
            entry,
            events=(event,),
            tag=tag,
            resolve_entities=False,
            load_dtd=False,
            no_network=True,
            huge_tree=False,
        )
        try:
            for _, element in events:
                yield element
        except (lxml.etree.XMLSyntaxError, zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ContainerRefused(
                f"the {fmt.name} file's part {info.filename!r} is not XML we can read ({exc})",
                code="corrupt",
            ) from exc


def _elements(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, fmt: types.Format, tag: object = None
) -> Iterator[lxml.etree._Element]:
    """Each element of a part as it starts (its attributes read), streamed: what was read is
    let go (an element's earlier siblings, which have ended, are dropped as it starts), so a
    part of millions of elements never stands as a tree, and a part of more than
    ``MAX_PART_ELEMENTS`` is refused."""
    parsed = _parsed(archive, info, fmt, event="start", tag=tag)
    for count, element in enumerate(parsed, start=1):
        if count > MAX_PART_ELEMENTS:
            raise ContainerRefused(
                f"the {fmt.name} file's part {info.filename!r} holds more than "
                f"{MAX_PART_ELEMENTS:,} XML elements; we read at most that many of a part "
                "(split the document, or remove the empty formatting it repeats)",
                code="too_large",
            )
        yield element
        parent = element.getparent()
        if parent is not None:
            while element.getprevious() is not None:
                del parent[0]


def iter_ended(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, fmt: types.Format, tag: object
) -> Iterator[lxml.etree._Element]:
    """Each ``tag`` element of a part once it has ended (its children read), streamed: each
    is cleared after use and its earlier siblings dropped, so a part of a million rows holds
    one in memory. The prolog is checked first, as for ``_elements``."""
    for element in _parsed(archive, info, fmt, event="end", tag=tag):
        yield element
        element.clear(keep_tail=False)
        while element.getprevious() is not None:
            parent = element.getparent()
            if parent is None:
                break
            del parent[0]


def iter_rows(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    fmt: types.Format,
    tag: str,
    *,
    max_children: int,
) -> Iterator[lxml.etree._Element]:
    """Each ``tag`` element of a part once it has ended, as ``iter_ended``, in a part whose
    other elements are let go as well: every element but a ``tag`` element's children is
    cleared once it has ended, and its earlier siblings dropped. What stands in memory is
    the current ``tag`` element, its children (refused past ``max_children``: a sheet's row
    holds at most 16,384 cells) each with its last child, and their ancestors, whatever
    else the part holds: a sheet of millions of elements written outside its rows (merges,
    formats, elements of no namespace) never stands as a tree. Every element comes through
    here, which costs about twice the parse of ``iter_ended``; that is what bounds the
    memory."""
    for element in _parsed(archive, info, fmt, event="end"):
        parent = element.getparent()
        if element.tag == tag:
            yield element
        elif parent is None:
            continue  # the root, at the end
        elif parent.tag == tag:
            if len(parent) > max_children:
                raise ContainerRefused(
                    f"the {fmt.name} file's part {info.filename!r} has a "
                    f"{_local(tag)} of more than {max_children:,} elements, past "
                    "what a spreadsheet can hold; the file is damaged or forged",
                    code="corrupt",
                )
            continue  # read with its row
        element.clear(keep_tail=False)
        if parent is not None:
            while element.getprevious() is not None:
                del parent[0]


def check_sheet_extent(
    sheet: str, rows: int, columns: int, *, max_cells: int = MAX_SHEET_CELLS
) -> None:
    if rows > EXCEL_MAX_ROWS or columns > EXCEL_MAX_COLUMNS:
        raise ContainerRefused(
            f"sheet {sheet} has a cell at row {rows:,}, column {columns:,}, past what a "
            "spreadsheet can hold; the file is damaged or forged",
            code="corrupt",
        )
    if rows * columns > max_cells:
        raise ContainerRefused(
            f"sheet {sheet} spans {rows:,} rows by {columns:,} columns "
            f"({rows * columns:,} cells); we take at most {max_cells:,} cells a sheet "
            "(delete the stray cells far from the data, or split the sheet)",
            code="too_large",
        )


def check_filled_cells(cells: int, *, max_cells: int = MAX_SHEET_CELLS) -> None:
    if cells > max_cells:
        raise ContainerRefused(
            f"the spreadsheet has more than {max_cells:,} filled cells; we take at most "
            f"{max_cells:,} (split it, or export the part you need)",
            code="too_large",
        )


def check_sheet_elements(sheet: str, elements: int, *, max_cells: int = MAX_SHEET_CELLS) -> None:
    limit = ELEMENTS_PER_CELL * max_cells
    if elements > limit:
        raise ContainerRefused(
            f"sheet {sheet} holds more than {limit:,} XML elements (rows, cells, formatting); "
            f"we read at most {ELEMENTS_PER_CELL} for each of the {max_cells:,} cells a sheet "
            "may have (delete the formatting far from the data, or split the sheet)",
            code="too_large",
        )


def _open(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    try:
        return archive.open(info)
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError) as exc:
        raise ContainerRefused(
            f"the part {info.filename!r} cannot be read ({exc})", code="corrupt"
        ) from exc


def chunks(archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, overlap: int = 0) -> Iterator[bytes]:
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
