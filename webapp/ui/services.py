"""Files the browser interface serves: the page images the workers stored, and the result
zip."""

from __future__ import annotations

import io
import json
import logging
import zipfile
from pathlib import PurePath

from django.core.files import File
from django.core.files.storage import default_storage

from model.formats import renditions
from model.formats.types import CONVERTED_KINDS, format_of
from webapp.jobs import selectors as job_selectors
from webapp.jobs import services as job_services
from webapp.jobs.models import Job, Page

logger = logging.getLogger(__name__)


class PageImageUnavailable(Exception):
    """The page has no image and will not get one; the message says why."""


class PageImageNotReady(Exception):
    """A worker has not drawn the page yet (it is waiting, or being drawn on request)."""


# What a stored page image is, by its name: one WebP a page (model.page_images), or the
# JPEG of a job read before (its panel's, the smaller of its two).
IMAGE_TYPES = {".webp": "image/webp", ".jpg": "image/jpeg"}


def page_image_stored(*, job: Job, number: int) -> File:
    """The page's image as the worker stored it, open for reading (its type:
    ``image_type``). Nothing is drawn here: a page's drawing can take minutes
    (docs/RELIABILITY.md), and the web process must answer everyone else meanwhile."""
    document = job.document
    if document.file_deleted_at is not None or job.is_expired:
        raise PageImageUnavailable("the document's file was deleted when its results expired")
    page = job.pages.filter(number=number).only("status", "extra").first()
    if page is None:
        raise PageImageUnavailable("that page is not part of this job")
    fmt = format_of(document.mime_type)
    if fmt is not None and fmt.kind in CONVERTED_KINDS:
        return _stored_office_page_image(job, page, name=fmt.name)
    name = job_services.page_image_name(job_id=job.pk, number=number)
    for stored in (name, name.removesuffix(PurePath(name).suffix) + ".jpg"):
        try:
            return default_storage.open(stored, "rb")
        except FileNotFoundError:
            pass
    if page.status in (Page.Status.QUEUED, Page.Status.RUNNING):
        raise PageImageNotReady("the page is drawn when a worker reads it")
    if page.status == Page.Status.SUCCEEDED:
        # Answered from the result cache, or read before images were stored: ask for it.
        job_services.page_image_render_request(job=job, number=number)
        raise PageImageNotReady("the page is being drawn")
    raise PageImageUnavailable("this page could not be drawn")


def image_type(stored: File) -> str:
    return IMAGE_TYPES.get(PurePath(stored.name or "").suffix, "application/octet-stream")


def stored_page_image(page: Page) -> dict:
    """Where the worker stored an Office page's image ({} where it drew none)."""
    image = page.extra.get("page_image") if isinstance(page.extra, dict) else None
    return image if isinstance(image, dict) else {}


def office_images_drawable(mime_type: str) -> bool:
    """Whether this server draws the pages of an Office or OpenDocument file: the workers run
    from the same installation as the web process (one image), so LibreOffice here means
    LibreOffice there."""
    fmt = format_of(mime_type)
    return fmt is not None and renditions.rendered(fmt)


def _stored_office_page_image(job: Job, page: Page, *, name: str) -> File:
    """An Office or OpenDocument page's image, drawn by the worker from LibreOffice's layout
    of the document (model.formats.renditions) and stored with the job's results; a page that
    no worker read (answered from the result cache) is drawn on request."""
    path = stored_page_image(page).get("path")
    if not path and page.status in (Page.Status.QUEUED, Page.Status.RUNNING):
        raise PageImageNotReady("the page is drawn when a worker reads it")
    if (
        not path
        and page.status == Page.Status.SUCCEEDED
        and office_images_drawable(job.document.mime_type)
    ):
        job_services.page_image_render_request(job=job, number=page.number)
        raise PageImageNotReady("the page is being drawn")
    if not path:
        raise PageImageUnavailable(
            f"a {name} page is drawn by LibreOffice in the worker, and this one was not"
        )
    try:
        return default_storage.open(path, "rb")
    except FileNotFoundError as exc:
        raise PageImageUnavailable("the page image is no longer stored") from exc


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
