"""A user's jobs: the list, a job's live page with its page panels and images, downloads,
cancel and delete."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from pathlib import PurePath

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from model.formats.types import has_page_images
from webapp.core.downloads import (
    attachment_response,
    still_preparing,
    stored_attachment_response,
)
from webapp.jobs import outputs as job_outputs
from webapp.jobs import selectors as job_selectors
from webapp.jobs import services as job_services
from webapp.jobs.models import Job, Page
from webapp.ui import selectors, services
from webapp.ui.forms import JobFilterForm
from webapp.ui.markdown import markdown_html

logger = logging.getLogger(__name__)

JOBS_PER_PAGE = 20
# Page panels (image + text) per screen of a job: a 500-page job stays a light page.
PANELS_PER_SCREEN = 10


# The job page's views of its pages: in order (""), the most doubtful first, or only those
# that need review.
REVIEW_VIEWS = {"": "In order", "first": "Most doubtful first", "only": "Needing review"}


def job_row(job: Job) -> dict:
    return {"job": job, "progress": job_selectors.job_progress(job=job)}


@login_required
def job_list(request):
    form = JobFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    jobs = selectors.jobs_for_list(
        owner=request.user,
        status=filters.get("status", ""),
        name=filters.get("q", ""),
        created_after=filters.get("created_after"),
        created_before=filters.get("created_before"),
    )
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "page_obj": page,
        "rows": [job_row(job) for job in page.object_list],
        "query": query.urlencode(),
        "filtered": bool(filters and any(filters.values())),
    }
    return render(request, "jobs/list.html", context)


def _owned_job(request, job_id) -> Job:
    job = job_selectors.job_get(owner=request.user, job_id=job_id)
    if job is None:
        # Another user's job and no job at all look the same, on purpose.
        raise Http404("There is no such job in your account.")
    return job


def _panel(job: Job, page: Page) -> dict:
    html = markdown_html(page.markdown) if page.status == Page.Status.SUCCEEDED else ""
    panel = {"page": page, "html": mark_safe(html), "job": job}  # noqa: S308 (sanitized by nh3)
    panel["image_available"], panel["image_missing"] = _image_availability(job, page)
    layout = page.layout if page.status == Page.Status.SUCCEEDED else {}
    if layout.get("blocks"):
        panel["width"], panel["height"] = layout["width"], layout["height"]
        panel["blocks"] = panel_blocks(page.number, layout)
    return panel


def panel_blocks(number: int, layout: dict) -> list[dict]:
    """The page's text drawn block by block, each tied to its box on the page image (the
    viewer highlights one from the other): what the viewer shows of a stored layout."""
    return [
        {
            "id": job_outputs.block_id(number, index),
            "type": block["type"],
            "bbox": ",".join(f"{value:g}" for value in block["bbox"]),
            "html": mark_safe(markdown_html(block["markdown"])),  # noqa: S308 (nh3)
        }
        for index, block in enumerate(layout["blocks"])
    ]


def _image_availability(job: Job, page: Page) -> tuple[bool, str]:
    """Whether the page's image can be shown, and if not, why (for the placeholder)."""
    if job.document.file_deleted_at is not None or job.is_expired:
        return False, "The page image is no longer kept (the document's file was deleted)."
    if has_page_images(job.document.mime_type):
        return True, ""
    # An Office page: its image is drawn in the worker when the page is read (or, for a page
    # answered from the result cache, when the viewer asks for it).
    if services.stored_page_image(page):
        return True, ""
    if page.status in (Page.Status.QUEUED, Page.Status.RUNNING):
        return False, "The page image is drawn when the page is read."
    if page.status == Page.Status.SUCCEEDED and services.office_images_drawable(
        job.document.mime_type
    ):
        return True, ""
    return False, "This page has no image: the document was read from its structure."


@login_required
def job_detail(request, job_id):
    job = _owned_job(request, job_id)
    review = request.GET.get("review", "")
    if review not in REVIEW_VIEWS:
        review = ""
    pages = list(job_selectors.job_pages_for_review(job=job, view=review))
    screens = Paginator(pages, PANELS_PER_SCREEN)
    screen = screens.get_page(request.GET.get("pages"))
    panels = [_panel(job, page) for page in screen.object_list]
    context = {
        "job": job,
        "progress": job_selectors.job_progress(job=job),
        # Each chip links to the screen of panels that shows its page.
        "page_rows": [(page, index // PANELS_PER_SCREEN + 1) for index, page in enumerate(pages)],
        "panels": panels,
        "screen": screen,
        "review": review,
        "review_views": REVIEW_VIEWS.items(),
        "can_download": job.is_final and not job.is_expired,
        # The page's script asks for the pages that finish after this (webapp/ui/static/ui/job.js).
        "rendered_at": timezone.now(),
    }
    return render(request, "jobs/detail.html", context)


@login_required
def page_panel(request, job_id, number: int):
    """One page's panel, fetched by the job page's script when that page finishes."""
    job = _owned_job(request, job_id)
    page = job_selectors.job_pages(job=job).filter(number=number).first()
    if page is None:
        raise Http404("That page is not part of this job.")
    context = {"panel": _panel(job, page)}
    return render(request, "jobs/_panel.html", context)


@login_required
def page_image(request, job_id, number: int):
    """The page's image as its worker stored it (one size: the viewer's fitted view and its
    zoom both scale it); 202 while it is not drawn yet."""
    job = _owned_job(request, job_id)
    try:
        stored = services.page_image_stored(job=job, number=number)
    except services.PageImageNotReady as exc:
        waiting = HttpResponse(
            f"Not drawn yet: {exc}.", status=202, content_type="text/plain; charset=utf-8"
        )
        return still_preparing(waiting, retry_after=2)
    except services.PageImageUnavailable as exc:
        raise Http404(f"The page image is not available: {exc}.") from exc
    response = FileResponse(stored, content_type=services.image_type(stored))
    response["Cache-Control"] = "private, max-age=86400"
    return response


def _download_refusal(request, job: Job):
    if job.is_expired:
        return render(
            request,
            "error.html",
            {
                "title": "The results were deleted",
                "message": f"The results of this job expired on {job.expired_at:%Y-%m-%d} and "
                "were deleted. Upload the document again to read it again.",
            },
            status=410,
        )
    if not job.is_final:
        return render(
            request,
            "error.html",
            {
                "title": "Not finished yet",
                "message": "This job is still running. The downloads appear on its page "
                "as soon as every page is done.",
                "back": reverse("ui-job", args=[job.id]),
            },
            status=409,
        )
    return None


def finished_job_download(view: Callable[[HttpRequest, Job], HttpResponse]):
    """A download of the user's own finished job: another user's is a 404, one still running
    or expired gets the page that says so; the view is handed the job."""

    @login_required
    @functools.wraps(view)
    def download(request: HttpRequest, job_id) -> HttpResponse:
        job = _owned_job(request, job_id)
        refusal = _download_refusal(request, job)
        return refusal if refusal is not None else view(request, job)

    return download


def _stem(job: Job) -> str:
    return PurePath(job.document.original_name).stem or "document"


@finished_job_download
def download_markdown(request, job: Job):
    return attachment_response(
        job_selectors.job_markdown(job=job),
        content_type="text/markdown; charset=utf-8",
        filename=f"{_stem(job)}.md",
    )


@finished_job_download
def download_blocks(request, job: Job):
    body = json.dumps(job_outputs.job_blocks(job=job), ensure_ascii=False, indent=2)
    return attachment_response(
        body, content_type="application/json", filename=f"{_stem(job)}.blocks.json"
    )


@finished_job_download
def download_chunks(request, job: Job):
    body = json.dumps(job_outputs.job_chunks(job=job), ensure_ascii=False, indent=2)
    return attachment_response(
        body, content_type="application/json", filename=f"{_stem(job)}.chunks.json"
    )


@finished_job_download
def download_pdf(request, job: Job):
    try:
        stored = job_outputs.searchable_pdf_stored(job=job, wait=settings.FOLIO_SEARCHABLE_PDF_WAIT)
    except job_outputs.OutputUnavailable as exc:
        return render(
            request,
            "error.html",
            {"title": "The file was deleted", "message": str(exc).capitalize() + "."},
            status=410,
        )
    except (job_outputs.OutputNotDrawable, job_outputs.OutputRefused) as exc:
        return render(
            request,
            "error.html",
            {
                "title": "No searchable PDF for this job",
                "message": str(exc).capitalize() + ".",
                "back": reverse("ui-job", args=[job.id]),
            },
            status=422,
        )
    except job_outputs.OutputPreparing:
        # Built by a worker: this page asks again by itself until the download comes.
        waiting = render(
            request,
            "error.html",
            {
                "title": "Preparing the searchable PDF",
                "message": "A worker is building it. The download starts by itself when it "
                "is ready.",
                "back": reverse("ui-job", args=[job.id]),
                "refresh": job_outputs.PREPARING_RETRY_AFTER,
            },
            status=202,
        )
        return still_preparing(waiting, retry_after=job_outputs.PREPARING_RETRY_AFTER)
    return stored_attachment_response(
        stored, content_type="application/pdf", filename=job_outputs.pdf_filename(job)
    )


@finished_job_download
def download_zip(request, job: Job):
    return attachment_response(
        services.result_zip(job=job, stem=_stem(job)),
        content_type="application/zip",
        filename=f"{_stem(job)}.zip",
    )


@login_required
@require_POST
def job_cancel(request, job_id):
    job = _owned_job(request, job_id)
    if job_services.job_cancel(job=job):
        messages.success(
            request,
            "Job cancelled. Pages already read are kept; a page being read now still lands.",
        )
    else:
        job.refresh_from_db()
        messages.info(request, f"This job had already ended ({job.get_status_display()}).")
    return redirect("ui-job", job_id=job.id)


@login_required
@require_POST
def job_delete(request, job_id):
    job = _owned_job(request, job_id)
    name = job.document.original_name
    job_services.job_delete(job=job)
    messages.success(request, f"The job for {name} and its results were deleted.")
    return redirect("ui-jobs")
