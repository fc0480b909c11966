"""The formats Folio reads beside PDF and images, and how each one is read.

``kind`` says which path a format takes:

- ``structured``: converted to Markdown from its structure (no engine); each unit (a slide,
  a sheet or a bounded part of the text) is a page.
- ``ebook``: laid out by PyMuPDF into PDF pages, which the engine reads like any PDF.
- ``legacy``: saved in its current format by LibreOffice in the worker (DOC and RTF as DOCX,
  XLS as XLSX, PPT as PPTX), then converted from its structure like that format.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    name: str  # what a person calls it: "DOCX", "web page", ...
    mime_type: str
    kind: str  # "structured" | "ebook" | "legacy"
    extension: str  # how the stored file is named (the bytes decided the type)


_OOXML = "application/vnd.openxmlformats-officedocument"
DOCX = Format("DOCX", f"{_OOXML}.wordprocessingml.document", "structured", ".docx")
DOCM = Format("DOCM", "application/vnd.ms-word.document.macroEnabled.12", "structured", ".docm")
PPTX = Format("PPTX", f"{_OOXML}.presentationml.presentation", "structured", ".pptx")
PPTM = Format(
    "PPTM", "application/vnd.ms-powerpoint.presentation.macroEnabled.12", "structured", ".pptm"
)
XLSX = Format("XLSX", f"{_OOXML}.spreadsheetml.sheet", "structured", ".xlsx")
XLSM = Format("XLSM", "application/vnd.ms-excel.sheet.macroEnabled.12", "structured", ".xlsm")
ODT = Format("ODT", "application/vnd.oasis.opendocument.text", "structured", ".odt")
ODS = Format("ODS", "application/vnd.oasis.opendocument.spreadsheet", "structured", ".ods")
ODP = Format("ODP", "application/vnd.oasis.opendocument.presentation", "structured", ".odp")
CSV = Format("CSV", "text/csv", "structured", ".csv")
HTML = Format("HTML", "text/html", "structured", ".html")
MARKDOWN = Format("Markdown", "text/markdown", "structured", ".md")
TEXT = Format("plain text", "text/plain", "structured", ".txt")

EPUB = Format("EPUB", "application/epub+zip", "ebook", ".epub")
XPS = Format("XPS", "application/oxps", "ebook", ".xps")
FB2 = Format("FB2", "application/x-fictionbook+xml", "ebook", ".fb2")
MOBI = Format("MOBI", "application/x-mobipocket-ebook", "ebook", ".mobi")
CBZ = Format("CBZ", "application/vnd.comicbook+zip", "ebook", ".cbz")
SVG = Format("SVG", "image/svg+xml", "ebook", ".svg")

DOC = Format("DOC", "application/msword", "legacy", ".doc")
XLS = Format("XLS", "application/vnd.ms-excel", "legacy", ".xls")
PPT = Format("PPT", "application/vnd.ms-powerpoint", "legacy", ".ppt")
RTF = Format("RTF", "application/rtf", "legacy", ".rtf")

ALL = (
    DOCX, DOCM, PPTX, PPTM, XLSX, XLSM, ODT, ODS, ODP, CSV, HTML, MARKDOWN, TEXT,
    EPUB, XPS, FB2, MOBI, CBZ, SVG, DOC, XLS, PPT, RTF,
)  # fmt: skip
BY_MIME_TYPE = {fmt.mime_type: fmt for fmt in ALL}

# What the refusal of an unknown type lists, beside PDF and images.
ACCEPTED_NAMES = (
    "Word (DOCX, DOC), PowerPoint (PPTX, PPT), Excel (XLSX, XLSM, XLS), OpenDocument "
    "(ODT, ODS, ODP), RTF, CSV, HTML, Markdown, plain text, EPUB, XPS, FB2, MOBI, CBZ, SVG"
)


def format_of(mime_type: str) -> Format | None:
    return BY_MIME_TYPE.get(mime_type)


# Kinds whose pages are units of a structural conversion (no engine; their page images, where
# LibreOffice draws them, come from the worker).
CONVERTED_KINDS = ("structured", "legacy")


def is_converted(mime_type: str) -> bool:
    fmt = format_of(mime_type)
    return fmt is not None and fmt.kind in CONVERTED_KINDS


def has_page_images(mime_type: str) -> bool:
    """Whether a page of the document can be drawn from the document on request: PDFs, images
    and e-books can. A structured document's pages are units of its text: an Office or
    OpenDocument page's image is drawn by the worker when it reads the page, from LibreOffice's
    layout of the document (``model.formats.renditions``), and stored with the results."""
    return not is_converted(mime_type)
