"""A finished job's outputs beyond its Markdown, built from the pages' stored layouts: the
blocks document, chunks for retrieval, the searchable PDF, and the joined Markdown with page
markers. Reads only; nothing here changes a job."""

from __future__ import annotations

from django.core.files.storage import default_storage

from model.documents import MUPDF_LOCK, PDF
from model.formats import ebooks
from model.formats.types import CONVERTED_KINDS, format_of
from model.layout import PageLayout
from model.layout.chunks import DEFAULT_MAX_TOKENS, chunk_document
from model.layout.searchable_pdf import PageText, searchable_pdf
from webapp.jobs.models import Job, Page
from webapp.jobs.selectors import job_pages, page_text

# The joined Markdown's page marker; ``{page}`` is the page number.
DEFAULT_PAGE_MARKER = "<!-- page {page} -->"
PAGE_MARKER_MAX = 200


class OutputNotDrawable(Exception):
    """A searchable PDF asked of a document read from its structure (no page images)."""


class OutputUnavailable(Exception):
    """An output that cannot be made for this job (its file is gone)."""


def block_id(page: int, index: int) -> str:
    """A block's name in every output (chunks cite it, the viewer links by it)."""
    return f"p{page}-b{index}"


def _layouts(job: Job) -> list[tuple[Page, PageLayout | None]]:
    pages = job_pages(job=job).only("number", "status", "layout", "error")
    return [
        (page, PageLayout.from_dict(page.layout) if page.layout.get("blocks") is not None else None)
        for page in pages
    ]


def job_blocks(*, job: Job) -> dict:
    """Every page's blocks in reading order, with boxes in points (origin top-left) and the
    page's size; pages that did not succeed are listed with their status and no blocks."""
    pages = []
    for page, layout in _layouts(job):
        entry: dict = {"page": page.number, "status": page.status}
        if page.status == Page.Status.SUCCEEDED and layout is not None:
            entry.update(
                width=round(layout.width, 2),
                height=round(layout.height, 2),
                source=layout.source,
                blocks=[
                    {"id": block_id(page.number, i), **block.to_dict()}
                    for i, block in enumerate(layout.blocks)
                ],
            )
        else:
            entry.update(blocks=[], error=page.error)
        pages.append(entry)
    return {
        "id": str(job.id),
        "status": job.status,
        "unit": "pt",
        "origin": "top-left",
        "pages": pages,
    }


def job_chunks(*, job: Job, max_tokens: int = DEFAULT_MAX_TOKENS) -> dict:
    succeeded = [
        (page.number, layout)
        for page, layout in _layouts(job)
        if page.status == Page.Status.SUCCEEDED and layout is not None
    ]
    chunks = chunk_document(succeeded, max_tokens=max_tokens)
    for chunk in chunks:
        for box in chunk["boxes"]:
            box["block"] = block_id(box["page"], box["block"])
    return {"id": str(job.id), "status": job.status, "max_tokens": max_tokens, "chunks": chunks}


def job_searchable_pdf(*, job: Job) -> bytes:
    """The job's pages as a searchable PDF (``model.layout.searchable_pdf``); an e-book's
    pages are its PDF layout's."""
    document = job.document
    fmt = format_of(document.mime_type)
    if fmt is not None and fmt.kind in CONVERTED_KINDS:
        raise OutputNotDrawable(
            f"a {fmt.name} file is read from its structure and has no page images to lay the "
            "text over; ask for format=markdown, blocks or chunks"
        )
    if document.file_deleted_at is not None or not default_storage.exists(document.file.name):
        raise OutputUnavailable(
            f"the file of job {job.id} is no longer stored; submit the document again"
        )
    with default_storage.open(document.file.name, "rb") as handle:
        data = handle.read()
    pages = [
        PageText(page.number, layout if page.status == Page.Status.SUCCEEDED else None)
        for page, layout in _layouts(job)
    ]
    if fmt is not None and fmt.kind == "ebook":
        with MUPDF_LOCK:
            data = ebooks.as_pdf(data, fmt)
        return searchable_pdf(data, PDF, pages)
    return searchable_pdf(data, document.mime_type, pages)


def job_markdown_with_markers(*, job: Job, marker: str = DEFAULT_PAGE_MARKER) -> str:
    """The joined Markdown with a marker line before each page, so that it can be split back
    into pages (``marker`` holds ``{page}``, replaced by the page number)."""
    parts = []
    for page in job_pages(job=job).only("number", "status", "markdown", "error"):
        text = page_text(page)
        parts.append(f"{marker.replace('{page}', str(page.number))}\n\n{text}".rstrip())
    return "\n\n".join(parts) + "\n"


def pdf_filename(job: Job) -> str:
    stem = job.document.original_name.rsplit(".", 1)[0] or "document"
    return f"{stem}.searchable.pdf"
