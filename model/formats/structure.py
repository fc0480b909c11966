"""Office, OpenDocument, HTML and CSV documents to Markdown with docling's format backends
(docling-slim: the declarative backends alone, no models, nothing fetched), cut into units:
a slide or a sheet where the format has them, else bounded parts of the text.

Chosen by measurement against docling's own reference Markdown (docs/QUALITY.md): markitdown,
mammoth and plain markdownify kept less of the structure (merged cells, equations, lists).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import warnings
import zipfile
from collections import OrderedDict
from io import BytesIO
from typing import Any

from model.formats import libreoffice, parts, types, units, webpage
from model.formats.text import normalized_text

logger = logging.getLogger(__name__)

# Pages of a few documents converted last, per process: a worker takes a document's pages one
# task at a time, and converting the whole document for each page would be quadratic.
_CACHE_SIZE = 4
_cache: OrderedDict[str, list[str]] = OrderedDict()
_cache_lock = threading.Lock()


class ConversionError(ValueError):
    """A document docling's backend could not read; the message is for a person."""


def document_units(data: bytes, fmt: types.Format) -> list[str]:
    """The document's units as Markdown, in order: unit N is page N of the job."""
    key = f"{fmt.mime_type}:{hashlib.sha256(data).hexdigest()}"
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    units = _convert(data, fmt)
    with _cache_lock:
        _cache[key] = units
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return units


def _convert(data: bytes, fmt: types.Format) -> list[str]:
    plan = units.unit_plan(data, fmt)
    if fmt in (types.MARKDOWN, types.TEXT):
        return parts.split_exactly(normalized_text(data), plan[0])
    if fmt is types.HTML:
        content = webpage.main_content(normalized_text(data))
        # With a byte-order mark: the parser then reads UTF-8 whatever the page's own <meta>
        # says (the bytes were decoded with the charset its server declared, or as UTF-8).
        html = b"\xef\xbb\xbf" + content.html.encode("utf-8")
        markdown = _markdown(_docling_document(html, types.HTML))
        return parts.split_exactly(markdown, plan[0])
    if fmt.kind == "legacy":
        try:
            data = libreoffice.to_current_format(data, fmt)
        except libreoffice.LibreOfficeError as exc:
            raise ConversionError(str(exc)) from exc
        document = _docling_document(data, libreoffice.CURRENT[fmt])
    else:
        document = _docling_document(data, fmt)
    if fmt in (types.PPTX, types.PPTM, types.XLSX, types.XLSM, types.PPT, types.XLS):
        # A slide or a sheet per docling page, in order; each cut to its planned page count.
        sections = [_markdown(document, page_no=number) for number in sorted(document.pages)]
        sections += [""] * (len(plan) - len(sections))
        if len(sections) > len(plan):
            sections[len(plan) - 1 :] = ["\n\n".join(sections[len(plan) - 1 :])]
        return [
            part
            for section, count in zip(sections, plan, strict=True)
            for part in parts.split_exactly(section, count)
        ]
    return parts.split_exactly(_markdown(document), plan[0])


def _markdown(document: Any, page_no: int | None = None) -> str:
    # Compact tables ("| - |" rules, no padding): what docling's references use, and fewer
    # tokens for the same cells.
    return str(
        document.export_to_markdown(page_no=page_no, image_placeholder="", compact_tables=True)
    ).strip()


# The main part's content type in a macro-enabled file, and in the plain one docling reads.
_MACRO_MAIN_TYPES = {
    types.DOCM: (
        b"application/vnd.ms-word.document.macroEnabled.main+xml",
        b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    ),
    types.PPTM: (
        b"application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml",
        b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
    ),
}


def _without_macros(data: bytes, fmt: types.Format) -> bytes:
    """A macro-enabled Word or PowerPoint file as the plain one its content is: the main
    part's content type changed and the VBA project left out. Its macros are never run
    either way; python-docx and python-pptx refuse the macro-enabled content type."""
    macro_type, plain_type = _MACRO_MAIN_TYPES[fmt]
    out = BytesIO()
    with (
        zipfile.ZipFile(BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            if info.filename.lower().endswith("vbaproject.bin"):
                continue
            content = source.read(info)
            if info.filename == "[Content_Types].xml":
                content = content.replace(macro_type, plain_type)
            target.writestr(info, content)
    return out.getvalue()


def _docling_document(data: bytes, fmt: types.Format) -> Any:
    if fmt in _MACRO_MAIN_TYPES:
        data = _without_macros(data, fmt)
    input_format, backend = _backend(fmt)
    from docling.datamodel.document import InputDocument

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            source = InputDocument(
                path_or_stream=BytesIO(data),
                format=input_format,
                backend=backend,
                filename=f"document{fmt.extension}",
            )
            if not source.valid:
                raise ConversionError(f"the {fmt.name} file cannot be read (it may be damaged)")
            reader: Any = source._backend
            return reader.convert()
        except ConversionError:
            raise
        except Exception as exc:
            logger.info("docling could not convert a %s file: %s", fmt.name, exc)
            raise ConversionError(
                f"the {fmt.name} file cannot be read (it may be damaged): {exc}"
            ) from exc


def _backend(fmt: types.Format) -> tuple[Any, Any]:
    """docling's backend for a format, imported on first use (it is not light). Each backend's
    default options fetch nothing a document points to, remote or local
    (``enable_remote_fetch`` and ``enable_local_fetch`` are off; tests/test_formats.py holds
    them to it)."""
    from docling.datamodel.base_models import InputFormat

    if fmt in (types.DOCX, types.DOCM):
        from docling.backend.msword_backend import MsWordDocumentBackend

        return InputFormat.DOCX, MsWordDocumentBackend
    if fmt in (types.PPTX, types.PPTM):
        from docling.backend.mspowerpoint_backend import MsPowerpointDocumentBackend

        return InputFormat.PPTX, MsPowerpointDocumentBackend
    if fmt in (types.XLSX, types.XLSM):
        from docling.backend.msexcel_backend import MsExcelDocumentBackend

        return InputFormat.XLSX, MsExcelDocumentBackend
    if fmt in (types.ODT, types.ODS, types.ODP):
        from docling.backend import opendocument_backend as odf

        return {
            types.ODT: (InputFormat.ODT, odf.OdtDocumentBackend),
            types.ODS: (InputFormat.ODS, odf.OdsDocumentBackend),
            types.ODP: (InputFormat.ODP, odf.OdpDocumentBackend),
        }[fmt]
    if fmt is types.HTML:
        from docling.backend.html_backend import HTMLDocumentBackend

        return InputFormat.HTML, HTMLDocumentBackend
    if fmt is types.CSV:
        from docling.backend.csv_backend import CsvDocumentBackend

        return InputFormat.CSV, CsvDocumentBackend
    raise ConversionError(f"{fmt.name} is not converted from its structure")
