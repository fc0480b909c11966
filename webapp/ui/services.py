"""Files the browser interface makes: page images and the result zip."""

from __future__ import annotations

import io
import json
import logging
import zipfile

import pymupdf
from django.core.files.storage import default_storage
from PIL import Image

from model.documents import MUPDF_LOCK, PDF
from model.formats.types import CONVERTED_KINDS, format_of
from model.rendering import open_page_image, open_pdf_page
from webapp.jobs import selectors as job_selectors
from webapp.jobs.models import Job, Page

logger = logging.getLogger(__name__)

# Big enough to read the page beside its text on a large screen, small enough to send fast.
PAGE_IMAGE_LONG_SIDE = 1400
# The zoomed page view loads the page drawn for 200 % (twice 96 dpi), its long side capped.
PAGE_IMAGE_FULL_DPI = 192
PAGE_IMAGE_FULL_LONG_SIDE = 2400


class PageImageUnavailable(Exception):
    """The document's file is gone (retention or deletion); the message says so."""


def page_image_jpeg(*, job: Job, number: int, full: bool = False) -> bytes:
    """A page as JPEG: panel-sized, or with ``full`` at the zoomable view's resolution."""
    document = job.document
    if document.file_deleted_at is not None or job.is_expired:
        raise PageImageUnavailable("the document's file was deleted when its results expired")
    fmt = format_of(document.mime_type)
    if fmt is not None and fmt.kind in CONVERTED_KINDS:
        return _stored_page_image(job=job, number=number, full=full, name=fmt.name)
    try:
        with document.file.open("rb") as handle:
            data = handle.read()
    except FileNotFoundError as exc:
        raise PageImageUnavailable("the document's file is no longer stored") from exc
    if full and document.mime_type == PDF:
        image = _pdf_page_full(data, number)
    else:
        long_side = PAGE_IMAGE_FULL_LONG_SIDE if full else PAGE_IMAGE_LONG_SIDE
        image = open_page_image(data, document.mime_type, number, long_side=long_side)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85, optimize=True)
    return buffer.getvalue()


def stored_page_image(page: Page) -> dict:
    """Where the worker stored an Office page's images ({} where it drew none)."""
    image = page.extra.get("page_image") if isinstance(page.extra, dict) else None
    return image if isinstance(image, dict) else {}


def _stored_page_image(*, job: Job, number: int, full: bool, name: str) -> bytes:
    """An Office or OpenDocument page's image, drawn by the worker from LibreOffice's layout
    of the document (model.formats.renditions) and stored with the job's results."""
    page = job.pages.filter(number=number).first()
    path = stored_page_image(page).get("full_path" if full else "path") if page else None
    if not path:
        raise PageImageUnavailable(
            f"a {name} page is drawn by LibreOffice in the worker when it is read, and this "
            "one was not (not read yet, or the worker has no LibreOffice)"
        )
    try:
        with default_storage.open(path, "rb") as handle:
            return bytes(handle.read())
    except FileNotFoundError as exc:
        raise PageImageUnavailable("the page image is no longer stored") from exc


def _pdf_page_full(data: bytes, number: int) -> Image.Image:
    """A PDF page drawn at PAGE_IMAGE_FULL_DPI (the engines' renderer stops at 144 dpi, which
    a 200 % view would show blurred), long side at most PAGE_IMAGE_FULL_LONG_SIDE."""
    with MUPDF_LOCK:
        doc = open_pdf_page(data, number)
        try:
            rect = doc[0].rect
            zoom = min(
                PAGE_IMAGE_FULL_DPI / 72, PAGE_IMAGE_FULL_LONG_SIDE / max(rect.width, rect.height)
            )
            pix = doc[0].get_pixmap(
                matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace="rgb"
            )
            return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
        finally:
            doc.close()


def result_zip(*, job: Job, stem: str) -> bytes:
    """The joined Markdown, each finished page's Markdown, and a manifest of every page.

    Figure crops are not in it: the pipeline keeps no figure images for a page today."""
    pages = list(job_selectors.job_pages(job=job))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{stem}.md", job_selectors.job_markdown(job=job))
        for page in pages:
            if page.status == Page.Status.SUCCEEDED:
                archive.writestr(f"pages/page-{page.number:04d}.md", page.markdown.strip() + "\n")
        manifest = {
            "job": str(job.id),
            "document": job.document.original_name,
            "engine": job.engine,
            "status": job.status,
            "pages": [
                {"number": page.number, "status": page.status, "error": page.error or None}
                for page in pages
            ],
        }
        archive.writestr("manifest.json", json.dumps(manifest, indent=2) + "\n")
    return buffer.getvalue()
