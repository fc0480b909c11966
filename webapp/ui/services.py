"""Files the browser interface makes: page images and the result zip."""

from __future__ import annotations

import io
import json
import logging
import zipfile

from model.rendering import open_page_image
from webapp.jobs import selectors as job_selectors
from webapp.jobs.models import Job, Page

logger = logging.getLogger(__name__)

# Big enough to read the page beside its text on a large screen, small enough to send fast.
PAGE_IMAGE_LONG_SIDE = 1400


class PageImageUnavailable(Exception):
    """The document's file is gone (retention or deletion); the message says so."""


def page_image_jpeg(*, job: Job, number: int) -> bytes:
    document = job.document
    if document.file_deleted_at is not None or job.is_expired:
        raise PageImageUnavailable("the document's file was deleted when its results expired")
    try:
        with document.file.open("rb") as handle:
            data = handle.read()
    except FileNotFoundError as exc:
        raise PageImageUnavailable("the document's file is no longer stored") from exc
    image = open_page_image(data, document.mime_type, number, long_side=PAGE_IMAGE_LONG_SIDE)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85, optimize=True)
    return buffer.getvalue()


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
