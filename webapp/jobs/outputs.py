"""A finished job's outputs beyond its Markdown, built from the pages' stored layouts: the
blocks document, chunks for retrieval, the joined Markdown with page markers, and the
searchable PDF, which a worker builds and stores (``services/searchable_pdf.py``) and this
serves. Reads only; nothing here changes a job."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage

from model.formats.types import CONVERTED_KINDS, format_of
from model.layout import PageLayout
from model.layout.chunks import DEFAULT_MAX_TOKENS, chunk_document
from model.layout.searchable_pdf import PageText
from webapp.jobs.models import Job, Page
from webapp.jobs.selectors import job_pages, page_text
from webapp.jobs.services import searchable_pdf as builds
from webapp.jobs.waiting import POLL_MAX_SECONDS, POLL_START_SECONDS, WaiterSlot

# The joined Markdown's page marker; ``{page}`` is the page number.
DEFAULT_PAGE_MARKER = "<!-- page {page} -->"
PAGE_MARKER_MAX = 200


class OutputNotDrawable(Exception):
    """A searchable PDF asked of a document read from its structure (no page images)."""


class OutputUnavailable(Exception):
    """An output that cannot be made for this job (its file is gone)."""


class OutputPreparing(Exception):
    """A worker is building the output; ask again in ``PREPARING_RETRY_AFTER`` seconds."""


class OutputRefused(Exception):
    """The output could not be built for these pages (past its time limit, or the document
    refused); the message says why."""


# Seconds a client is told to wait before asking again for an output being built.
PREPARING_RETRY_AFTER = 2


def block_id(page: int, index: int) -> str:
    """A block's name in every output (chunks cite it, the viewer links by it)."""
    return f"p{page}-b{index}"


def _stored_layout(page: Page) -> PageLayout | None:
    """The page's layout as its worker saved it; ``None`` where it holds none."""
    return PageLayout.from_dict(page.layout) if page.layout.get("blocks") is not None else None


def _layouts(job: Job) -> list[tuple[Page, PageLayout | None]]:
    pages = job_pages(job=job).only("number", "status", "layout", "error")
    return [(page, _stored_layout(page)) for page in pages]


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


def searchable_pdf_check(*, job: Job) -> None:
    """Refuse what no build can give: a document read from its structure (no page images),
    or one whose file is gone."""
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


def searchable_pdf_stored(*, job: Job, wait: float) -> File:
    """The finished job's searchable PDF as a worker stored it, open for reading. Nothing is
    built here (``services/searchable_pdf.py``): a worker is asked to, and this waits for it at
    most ``wait`` seconds (holding one of the process's waiting slots; none left, no wait),
    then raises ``OutputPreparing``. ``OutputRefused`` when it could not be built."""
    searchable_pdf_check(job=job)
    fingerprint = builds.job_pages_fingerprint(job_id=job.pk)
    build_seconds = settings.FOLIO_SEARCHABLE_PDF_TIMEOUT
    with WaiterSlot() as slot:
        deadline = time.monotonic() + (wait if slot.taken else 0.0)
        interval = POLL_START_SECONDS
        requested = False
        while True:
            stored = builds.searchable_pdf_lookup(job_id=job.pk, fingerprint=fingerprint)
            if stored.name is not None:
                try:
                    return default_storage.open(stored.name, "rb")
                except FileNotFoundError:  # replaced meanwhile by a build of newer pages
                    pass
            if stored.refusal is not None:
                raise OutputRefused(stored.refusal)
            if not requested:
                builds.searchable_pdf_request(
                    job=job, fingerprint=fingerprint, build_seconds=build_seconds
                )
                requested = True
            left = deadline - time.monotonic()
            if left <= 0:
                raise OutputPreparing(
                    f"the searchable PDF of job {job.id} is being built by a worker; ask again "
                    f"in {PREPARING_RETRY_AFTER} s"
                )
            time.sleep(min(interval, left))
            interval = min(interval * 2, POLL_MAX_SECONDS)


def job_page_texts(*, job_id) -> tuple[str, list[PageText]]:
    """What a searchable PDF is built from: each page's reading (``None`` for a page that did
    not succeed: it is kept as it was), and the fingerprint of the pages read in the same
    query (``builds.pages_fingerprint``)."""
    pages = list(
        Page.objects.filter(job_id=job_id)
        .order_by("number")
        .only("number", "status", "finished_at", "layout")
    )
    fingerprint = builds.pages_fingerprint(
        (page.number, page.status, page.finished_at) for page in pages
    )
    succeeded = Page.Status.SUCCEEDED
    texts = [
        PageText(page.number, _stored_layout(page) if page.status == succeeded else None)
        for page in pages
    ]
    return fingerprint, texts


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
