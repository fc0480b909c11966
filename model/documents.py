"""What an uploaded document is, proved from its bytes: type, page count, readability.

Nothing here trusts a file name or a declared content type; the type is sniffed from the
content and the document is opened far enough to count its pages and load one.
"""

from __future__ import annotations

import io
import logging
import re
import threading
import unicodedata
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pymupdf
from PIL import Image, UnidentifiedImageError

from model.formats import ebooks, guards, libreoffice, sniff, text, units, webpage
from model.formats import types as formats

logger = logging.getLogger(__name__)

# 100 megapixels: an A0 poster at 300 dpi is about 140 MP, a phone photo 12-50 MP. Anything
# bigger is far more likely a decompression bomb than a page, and would not OCR better anyway.
MAX_IMAGE_PIXELS = 100_000_000
# A multi-frame image past this is not a scanned bundle but an attack on our memory and time.
MAX_IMAGE_FRAMES = 2000

PDF = "application/pdf"
IMAGE_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "TIFF": "image/tiff", "WEBP": "image/webp"}
ACCEPTED_TYPES = f"PDF, PNG, JPEG, TIFF (also multi-page), WebP, {formats.ACCEPTED_NAMES}"

# MuPDF keeps global state and is not safe to call from two threads at once; the web process
# (threaded gunicorn) and a threaded worker pool both do. Every PyMuPDF call in model/ that can
# run beside another holds this lock (re-entrant: helpers that hold it call each other).
MUPDF_LOCK = threading.RLock()

# PDF readers accept a header anywhere in the first 1024 bytes (junk before it is common).
_PDF_HEADER_WINDOW = 1024


class DocumentError(ValueError):
    """A document we will not process; ``code`` is stable, the message is for a person."""

    code = "invalid"


class EmptyDocument(DocumentError):
    code = "empty"


class UnsupportedDocument(DocumentError):
    code = "unsupported"


class CorruptDocument(DocumentError):
    code = "corrupt"


class EncryptedDocument(DocumentError):
    code = "encrypted"


class NoPages(DocumentError):
    code = "no_pages"


class DocumentTooLarge(DocumentError):
    code = "too_large"


class UnsafeDocument(DocumentError):
    """A document that would make a reader expand entities or fetch what it points to."""

    code = "unsafe"


@dataclass(frozen=True)
class DocumentInfo:
    mime_type: str
    page_count: int
    kind: str  # "pdf" | "image" | "structured" | "ebook" | "legacy" (model.formats.types)
    # The title the document's own metadata gives (a PDF's /Title), "" when it names none.
    title: str = ""


def sniff_mime_type(data: bytes) -> str | None:
    """The MIME type that the leading bytes prove, or None for anything we do not accept."""
    if b"%PDF-" in data[:_PDF_HEADER_WINDOW]:
        return PDF
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return IMAGE_TYPES["PNG"]
    if data.startswith(b"\xff\xd8\xff"):
        return IMAGE_TYPES["JPEG"]
    if data[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):  # classic and BigTIFF
        return IMAGE_TYPES["TIFF"]
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return IMAGE_TYPES["WEBP"]
    fmt = sniff.sniff_format(data)  # raises for encrypted Office files and damaged zips
    return fmt.mime_type if fmt else None


def inspect_document(
    data: bytes, *, max_sheet_cells: int = guards.MAX_SHEET_CELLS, max_pages: int | None = None
) -> DocumentInfo:
    """What the document is and how many pages it has. ``max_sheet_cells`` and ``max_pages``
    (the pages a job may take) bound what a spreadsheet's count reads: a workbook whose
    sheets pass either is refused (``DocumentTooLarge``) where its count passes it, unread
    past that; other documents are counted whole (a long PDF may be taken a page range at a
    time)."""
    if not data:
        raise EmptyDocument("the file is empty (0 bytes); upload the document itself")
    try:
        mime_type = sniff_mime_type(data)
    except sniff.EncryptedOffice as exc:
        raise EncryptedDocument(_OFFICE_PASSWORD) from exc
    except sniff.DamagedContainer as exc:
        raise CorruptDocument(
            f"the file is a damaged zip container (an Office, OpenDocument or e-book file cut "
            f"short?) and cannot be read ({exc})"
        ) from exc
    if mime_type is None:
        if data.startswith(sniff.OLE_MAGIC):
            _refuse_encrypted_office(data)
        raise UnsupportedDocument(
            f"this is not a document type we read; we accept {ACCEPTED_TYPES}"
        )
    if mime_type == PDF:
        with MUPDF_LOCK:
            page_count, title = _inspect_pdf(data)
        return DocumentInfo(mime_type=PDF, page_count=page_count, kind="pdf", title=title)
    fmt = formats.format_of(mime_type)
    if fmt is not None:
        return DocumentInfo(
            mime_type=mime_type,
            page_count=_inspect_format(data, fmt, max_cells=max_sheet_cells, max_pages=max_pages),
            kind=fmt.kind,
        )
    return DocumentInfo(mime_type=mime_type, page_count=_inspect_image(data), kind="image")


_OFFICE_PASSWORD = (
    "the Office file is protected by a password; we do not take passwords, so please upload "
    "a copy saved without one"
)


def _refuse_encrypted_office(data: bytes) -> None:
    try:
        sniff.sniff_format(data)
    except sniff.EncryptedOffice as exc:
        raise EncryptedDocument(_OFFICE_PASSWORD) from exc


def _inspect_format(
    data: bytes, fmt: formats.Format, *, max_cells: int, max_pages: int | None
) -> int:
    """Pages of an Office, OpenDocument, web, text or e-book document, counted without
    converting it; the refusals (model.formats.guards) come first. A spreadsheet is read only
    as far as ``max_cells`` (its limit) allows, so a refusal and a count both cost what
    reading up to the limit costs."""
    if fmt.kind == "legacy" and libreoffice.program() is None:
        raise UnsupportedDocument(
            f"{fmt.name} files are read with {libreoffice.INSTALL_HINT}; or save the file as "
            f"{libreoffice.CURRENT[fmt].name} and upload that"
        )
    try:
        if data.startswith(sniff.ZIP_MAGIC):
            guards.check_container(data, fmt, max_cells=max_cells)
        if fmt.kind == "ebook":
            with MUPDF_LOCK:
                doc = ebooks.open_ebook(data, fmt)
                try:
                    page_count = doc.page_count
                finally:
                    doc.close()
            if page_count < 1:
                raise NoPages(f"the {fmt.name} file has no pages that can be read")
            return int(page_count)
        return sum(units.unit_plan(data, fmt, max_cells=max_cells, max_pages=max_pages))
    except guards.ContainerRefused as exc:
        error = {"too_large": DocumentTooLarge, "unsafe": UnsafeDocument}.get(
            exc.code, CorruptDocument
        )
        raise error(str(exc)) from exc
    except ebooks.EbookError as exc:
        raise CorruptDocument(str(exc)) from exc
    except webpage.PageTooLarge as exc:
        raise DocumentTooLarge(str(exc)) from exc
    except (text.NotText, zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        if isinstance(exc, DocumentError):
            raise
        raise CorruptDocument(f"the {fmt.name} file is damaged and cannot be read ({exc})") from exc


def open_pdf(data: bytes) -> pymupdf.Document:
    """Open PDF bytes, turning PyMuPDF's failures into DocumentErrors."""
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise CorruptDocument(f"the PDF is damaged and cannot be read ({exc})") from exc
    if doc.needs_pass:
        doc.close()
        raise EncryptedDocument(
            "the PDF is protected by a password; we do not take passwords, so please "
            "upload a copy saved without one"
        )
    return doc


def _inspect_pdf(data: bytes) -> tuple[int, str]:
    """The page count and the metadata title of a PDF that holds together."""
    doc = open_pdf(data)
    try:
        page_count = doc.page_count
        if page_count < 1:
            raise NoPages("the PDF has no pages that can be read (it may be damaged)")
        # Loading the first and last page proves the page tree holds together; PyMuPDF
        # repairs what it can and raises on what it cannot.
        for index in {0, page_count - 1}:
            page = doc.load_page(index)
            if page.rect.is_empty:
                raise CorruptDocument(f"page {index + 1} of the PDF has no size")
        return int(page_count), metadata_title(doc.metadata)
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        if isinstance(exc, DocumentError):
            raise
        raise CorruptDocument(f"the PDF is damaged and cannot be read ({exc})") from exc
    finally:
        doc.close()


# Producers write placeholders where no title was given; they name no document.
_PLACEHOLDER_TITLES = {"untitled", "untitled document", "no title", "title", "document"}
MAX_TITLE_LENGTH = 300


def metadata_title(metadata: Mapping[str, Any] | None) -> str:
    """A PDF's /Title, one line, or "" when it has none worth showing."""
    title = " ".join(str((metadata or {}).get("title") or "").split())[:MAX_TITLE_LENGTH]
    return "" if title.lower() in _PLACEHOLDER_TITLES else title


def _inspect_image(data: bytes) -> int:
    try:
        with _open_image(data) as image:
            frames = getattr(image, "n_frames", 1)
            if frames > MAX_IMAGE_FRAMES:
                raise DocumentTooLarge(
                    f"the image has {frames} frames; we take at most {MAX_IMAGE_FRAMES}"
                )
            # Headers only: each frame's size is checked, no frame is decoded. Decoding is
            # the worker's (one page each, under its time limit); in the web process a
            # 2,000-frame scan decoded frame by frame held a request for over a minute. A
            # frame whose pixels turn out damaged fails as its page, saying so.
            for index in range(frames):
                image.seek(index)
                check_pixel_count(image.size)
        with _open_image(data) as image:
            # The file's own structure, where its format checks one without decoding (PNG:
            # every chunk and its checksum, so a truncated file is refused here).
            image.verify()
        return frames
    except DocumentError:
        raise
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise CorruptDocument(f"the image is damaged and cannot be read ({exc})") from exc


def open_image(data: bytes) -> Image.Image:
    """Open image bytes lazily with our pixel limit, turning failures into DocumentErrors."""
    try:
        return _open_image(data)
    except DocumentError:
        raise
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise CorruptDocument(f"the image is damaged and cannot be read ({exc})") from exc


def _open_image(data: bytes) -> Image.Image:
    # Pillow's own bomb guard warns at ~89 MP and raises at twice that; ours is the only limit
    # that should speak, so silence the warning and check the size before decoding pixels.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data))
        except Image.DecompressionBombError as exc:
            raise DocumentTooLarge(_too_large_message()) from exc
        except UnidentifiedImageError as exc:
            raise CorruptDocument("the image is damaged or not really an image") from exc
    if image.format not in IMAGE_TYPES:
        image.close()
        raise UnsupportedDocument(
            f"this is not a document type we read; we accept {ACCEPTED_TYPES}"
        )
    check_pixel_count(image.size)
    return image


def check_pixel_count(size: tuple[int, int]) -> None:
    width, height = size
    if width < 1 or height < 1:
        raise CorruptDocument(f"the image has no pixels ({width}x{height})")
    if width * height > MAX_IMAGE_PIXELS:
        raise DocumentTooLarge(_too_large_message(width, height))


def _too_large_message(width: int | None = None, height: int | None = None) -> str:
    limit = f"at most {MAX_IMAGE_PIXELS // 1_000_000} megapixels per page"
    if width is None or height is None:
        return f"the image is too large; we take {limit}"
    return f"the image is too large ({width}x{height} pixels); we take {limit}"


# --- file names ----------------------------------------------------------

MAX_FILENAME_LENGTH = 200
_MAX_EXTENSION_LENGTH = 16


def safe_filename(name: str | None, *, default: str = "document") -> str:
    """A file name fit to store and show: no path, no control characters, bounded length."""
    if not name:
        return default
    base = re.split(r"[/\\]", name)[-1]
    base = re.sub(r"\s", " ", base)  # a tab or newline in a name was meant as a space
    base = "".join(ch for ch in base if unicodedata.category(ch)[0] != "C")
    base = re.sub(r"\s+", " ", base).strip()
    if base.strip(".") == "":
        return default
    return _shorten(base)


def _shorten(name: str) -> str:
    if len(name) <= MAX_FILENAME_LENGTH:
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem or len(extension) > _MAX_EXTENSION_LENGTH:
        return name[:MAX_FILENAME_LENGTH].rstrip()
    keep = MAX_FILENAME_LENGTH - len(extension) - 1
    return f"{stem[:keep].rstrip()}.{extension}"
