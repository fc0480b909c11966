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
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from model.formats import guards, libreoffice, parts, types, units, webpage
from model.formats.text import normalized_text

logger = logging.getLogger(__name__)

# Pages of a few documents converted last, per process: a worker takes a document's pages one
# task at a time, and converting the whole document for each page would be quadratic.
_CACHE_SIZE = 4
_cache: OrderedDict[str, list[str]] = OrderedDict()
_cache_lock = threading.Lock()


class ConversionError(ValueError):
    """A document docling's backend could not read; the message is for a person."""


@dataclass(frozen=True)
class ConversionOptions:
    """The job's options that change a structural conversion's Markdown."""

    # "markdown": pipe tables (a merged cell's text repeated in each cell it spans, as in
    # docling's own Markdown); "html": every table as HTML (rowspan, colspan); "auto": HTML
    # only for the tables whose cells merge.
    table_format: str = "markdown"
    # A presentation's speaker notes, after each slide's content (PPTX, ODP).
    speaker_notes: bool = False
    # Reviewers' comments (DOCX, PPTX, XLSX, ODF), after the content they belong with.
    comments: bool = False

    @classmethod
    def from_engine_options(cls, options: Any) -> ConversionOptions:
        return cls(
            table_format=options.table_format,
            speaker_notes=options.speaker_notes,
            comments=options.comments,
        )


def document_units(
    data: bytes, fmt: types.Format, options: ConversionOptions | None = None
) -> list[str]:
    """The document's units as Markdown, in order: unit N is page N of the job."""
    options = options or ConversionOptions()
    key = f"{fmt.mime_type}:{hashlib.sha256(data).hexdigest()}:{options}"
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    units = _convert(data, fmt, options)
    with _cache_lock:
        _cache[key] = units
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return units


def _convert(data: bytes, fmt: types.Format, options: ConversionOptions) -> list[str]:
    plan = units.unit_plan(data, fmt)
    if fmt in (types.MARKDOWN, types.TEXT):
        return parts.split_exactly(normalized_text(data), plan[0])
    if fmt is types.HTML:
        content = webpage.main_content(normalized_text(data))
        # With a byte-order mark: the parser then reads UTF-8 whatever the page's own <meta>
        # says (the bytes were decoded with the charset its server declared, or as UTF-8).
        html = b"\xef\xbb\xbf" + content.html.encode("utf-8")
        markdown = _markdown(_docling_document(html, types.HTML), options)
        return parts.split_exactly(markdown, plan[0])
    current = libreoffice.CURRENT.get(fmt, fmt)
    linked = guards.rtf_linked_pictures(data) if fmt is types.RTF else ()
    if fmt.kind == "legacy":
        try:
            data = libreoffice.to_current_format(data, fmt)
        except libreoffice.LibreOfficeError as exc:
            raise ConversionError(str(exc)) from exc
    document = _docling_document(data, current)
    _sort_notes(document, options)
    links = _LinkedImages(document, linked + guards.linked_images(data, current))
    if fmt in (types.PPTX, types.PPTM, types.XLSX, types.XLSM, types.PPT, types.XLS):
        # A slide or a sheet per docling page, in order; each cut to its planned page count.
        slides = _slide_parts(data, current)
        sections = [
            links.after(
                _markdown(document, options, page_no=number, links=links),
                slides[index] if index < len(slides) else None,
            )
            for index, number in enumerate(sorted(document.pages))
        ]
        sections += [""] * (len(plan) - len(sections))
        if len(sections) > len(plan):
            sections[len(plan) - 1 :] = ["\n\n".join(sections[len(plan) - 1 :])]
        return [
            part
            for section, count in zip(sections, plan, strict=True)
            for part in parts.split_exactly(section, count)
        ]
    markdown = links.after(_markdown(document, options, links=links), None)
    return parts.split_exactly(markdown, plan[0])


class _LinkedImages:
    """Where a document's linked images (never fetched) are placeholders naming the link
    (``guards.linked_image_placeholder``). A Word or OpenDocument file's reader keeps each as
    a picture without an image: the pictures without one are the links, in order, when they
    are as many (otherwise the links are named after the text). PowerPoint's reader keeps no
    picture of a linked image: a slide's links are named after its text."""

    def __init__(self, document: Any, linked: tuple[guards.Link, ...]):
        from docling_core.types.doc.document import PictureItem

        self.linked = [link for link in linked if link.kind == "image"]
        imageless = [
            item.self_ref
            for item, _ in document.iterate_items(with_groups=False)
            if isinstance(item, PictureItem) and item.image is None
        ]
        self.in_place: dict[str, str] = {}
        if self.linked and len(imageless) == len(self.linked):
            self.in_place = dict(zip(imageless, (link.target for link in self.linked), strict=True))

    def after(self, markdown: str, part: str | None) -> str:
        """``markdown`` with the placeholders of the links not shown in place: those of
        ``part`` (a slide), or with ``part`` None, those of the whole document."""
        if self.in_place:
            return markdown
        names = [
            guards.linked_image_placeholder(link.target)
            for link in self.linked
            if part is None or link.part == part
        ]
        return "\n\n".join(piece for piece in (markdown, *names) if piece)


def _slide_parts(data: bytes, fmt: types.Format) -> list[str]:
    """A presentation's slide parts in the order of its slides (those python-pptx walks)."""
    if fmt not in (types.PPTX, types.PPTM):
        return []
    import defusedxml.ElementTree as SafeET

    pml = "http://schemas.openxmlformats.org/presentationml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    with zipfile.ZipFile(BytesIO(data)) as archive:
        presentation = SafeET.fromstring(archive.read("ppt/presentation.xml"))
        rels = SafeET.fromstring(archive.read("ppt/_rels/presentation.xml.rels"))
    targets = {item.get("Id"): item.get("Target", "") for item in rels}
    return [
        f"ppt/{targets.get(slide.get(f'{{{rel}}}id'), '').lstrip('/')}"
        for slide in presentation.iter(f"{{{pml}}}sldId")
    ]


def _markdown(
    document: Any,
    options: ConversionOptions,
    page_no: int | None = None,
    links: _LinkedImages | None = None,
) -> str:
    # docling's own export_to_markdown, with the tables' serializer chosen by the table format.
    # Compact tables ("| - |" rules, no padding): what docling's references use, and fewer
    # tokens for the same cells.
    from docling_core.transforms.serializer.markdown import MarkdownDocSerializer, MarkdownParams
    from docling_core.types.doc.document import (
        DOCUMENT_TOKENS_EXPORT_LABELS,
    )

    params = MarkdownParams(
        labels=DOCUMENT_TOKENS_EXPORT_LABELS,
        layers=_layers(options),
        pages={page_no} if page_no is not None else None,
        image_placeholder="",
        compact_tables=True,
    )
    serializer = MarkdownDocSerializer(
        doc=document,
        params=params,
        table_serializer=_table_serializer(options.table_format),
        picture_serializer=_picture_serializer(links.in_place if links else {}),
    )
    return str(serializer.serialize().text).strip()


_NOTES_MARK = "*Speaker notes:* "


def _layers(options: ConversionOptions) -> set[Any]:
    """The body, and docling's notes layer where the options ask for notes or comments."""
    from docling_core.types.doc.document import DEFAULT_CONTENT_LAYERS, ContentLayer

    if options.speaker_notes or options.comments:
        return {*DEFAULT_CONTENT_LAYERS, ContentLayer.NOTES}
    return set(DEFAULT_CONTENT_LAYERS)


def _sort_notes(document: Any, options: ConversionOptions) -> None:
    """Docling's notes layer holds speaker notes and comments alike: a comment is a notes item
    in a comment section, any other is a speaker note. The kind not asked for is moved out of
    the layer; a speaker note is marked, so that a reader does not take it for the slide's own
    text; and a note with no page (a slide's comments) takes the page of the content before
    it, so that it stays with its slide or sheet."""
    from docling_core.types.doc.base import BoundingBox
    from docling_core.types.doc.document import ContentLayer, ProvenanceItem, TextItem
    from docling_core.types.doc.labels import GroupLabel

    if not (options.speaker_notes or options.comments):
        return
    page_no = 1
    for item, _ in document.iterate_items(
        included_content_layers=set(ContentLayer), with_groups=False
    ):
        if item.content_layer != ContentLayer.NOTES:
            page_no = item.prov[0].page_no if getattr(item, "prov", None) else page_no
            continue
        parent = item.parent.resolve(document) if item.parent is not None else None
        comment = getattr(parent, "label", None) == GroupLabel.COMMENT_SECTION
        if not (options.comments if comment else options.speaker_notes):
            item.content_layer = ContentLayer.INVISIBLE
            continue
        if not comment and isinstance(item, TextItem) and item.text:
            item.text = _NOTES_MARK + item.text
        if not item.prov:
            item.prov = [
                ProvenanceItem(
                    page_no=page_no,
                    bbox=BoundingBox(l=0, t=0, r=0, b=0),
                    charspan=(0, len(getattr(item, "text", ""))),
                )
            ]


def _table_serializer(table_format: str) -> Any:
    from docling_core.transforms.serializer.base import SerializationResult
    from docling_core.transforms.serializer.common import create_ser_result
    from docling_core.transforms.serializer.markdown import MarkdownTableSerializer

    class TableSerializer(MarkdownTableSerializer):
        """Pipe tables, or HTML (docling's own) for the tables the table format asks for."""

        def serialize(self, *, item: Any, doc_serializer: Any, doc: Any, **kwargs: Any) -> Any:
            if (
                kwargs.get("_nested_in_table")
                or not _as_html(item, table_format)
                # Another page's table (a slide's, a sheet's): docling's serializer leaves it out.
                or item.self_ref in doc_serializer.get_excluded_refs(**kwargs)
            ):
                return super().serialize(
                    item=item, doc_serializer=doc_serializer, doc=doc, **kwargs
                )
            caption = doc_serializer.serialize_captions(item=item, **kwargs).text
            html = item.export_to_html(doc=doc, add_caption=False)
            text = "\n\n".join(part for part in (caption, html) if part)
            result: SerializationResult = create_ser_result(text=text, span_source=item)
            return result

    return TableSerializer()


def _picture_serializer(in_place: dict[str, str]) -> Any:
    from docling_core.transforms.serializer.common import create_ser_result
    from docling_core.transforms.serializer.markdown import MarkdownPictureSerializer

    class PictureSerializer(MarkdownPictureSerializer):
        """docling's, but a linked image's picture is its placeholder naming the link."""

        def _serialize_image_part(  # type: ignore[override]
            self, item: Any, doc: Any, **kwargs: Any
        ) -> Any:
            if item.self_ref in in_place:
                placeholder = guards.linked_image_placeholder(in_place[item.self_ref])
                return create_ser_result(text=placeholder, span_source=item)
            return super()._serialize_image_part(item=item, doc=doc, **kwargs)

    return PictureSerializer()


def _as_html(table: Any, table_format: str) -> bool:
    if table_format == "html":
        return True
    return table_format == "auto" and any(
        cell.row_span > 1 or cell.col_span > 1 for cell in table.data.table_cells
    )


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
            # The reader's own words (a class's repr, a parser's internals) go to the log; the
            # user is told what happened.
            logger.info("docling could not convert a %s file: %r", fmt.name, exc)
            raise ConversionError(
                f"the {fmt.name} file cannot be read: it is damaged, or made in a way its "
                "reader does not know (saving it again from its program usually mends it)"
            ) from exc


# docling's data model imports Hugging Face ``transformers`` (and with it PyTorch) wherever
# it is installed, for options of its VLM pipelines, which the format backends never use; it
# falls back to a placeholder where the import fails. Measured on 2 cores with the fastmtp
# extra installed: the first Word file took 14.2 s, 0.04 s the second; the import of
# ``docling.datamodel.pipeline_options_vlm_model`` was 14.7 s of it, 7.4 s of that PyTorch.
_DOCLING_IMPORT = threading.Lock()
_HIDDEN_WHILE_DOCLING_IMPORTS = ("transformers", "torch")


def _import_docling() -> None:
    """docling's data model imported with ``transformers`` hidden, unless a process that
    uses it (the transformers engine's worker) has imported it already."""
    import sys

    with _DOCLING_IMPORT:
        if "docling.datamodel.base_models" in sys.modules:
            return
        hidden = [name for name in _HIDDEN_WHILE_DOCLING_IMPORTS if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError
        try:
            import docling.datamodel.base_models  # noqa: F401
        finally:
            for name in hidden:
                if sys.modules.get(name, "") is None:
                    del sys.modules[name]


def _backend(fmt: types.Format) -> tuple[Any, Any]:
    """docling's backend for a format, imported on first use (it is not light). Each backend's
    default options fetch nothing a document points to, remote or local
    (``enable_remote_fetch`` and ``enable_local_fetch`` are off; tests/test_formats.py holds
    them to it)."""
    _import_docling()
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
