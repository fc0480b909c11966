"""Page images for the job page's viewer (one WebP a page, ``model.page_images``): drawn and
stored by the worker that reads the page
(``ocr_worker/page_images.py``), served as stored by the web process, which never draws or
decodes a page (a hostile page could hold it for minutes: docs/RELIABILITY.md).

They live with the job's other files (``results/<job id>/pages/``), so deleting the job or
its retention deletes them too."""

from __future__ import annotations

import logging
import uuid

from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from model.engines.auto import reading_engine
from model.layout import PageLayout
from model.page_images import PageImage
from ocr_worker.celery_app import app
from webapp.core.queues import engine_queue
from webapp.jobs.models import Job, Page
from webapp.jobs.services.options import JobOptions
from webapp.jobs.services.page_lifecycle import office_page_images_store, page_image_storage_name
from webapp.results.models import CachedPage
from webapp.results.services import options_key

logger = logging.getLogger(__name__)

# A finished page with no stored image (answered from the result cache, or read before
# images were stored) gets one render request per this many seconds, however often it is
# asked for.
RENDER_REQUEST_SECONDS = 60
RENDER_PAGE_IMAGE = "folio.render_page_image"


def page_image_name(*, job_id: uuid.UUID, number: int) -> str:
    # The same name as an Office page's image (stored by office_page_images_store).
    return page_image_storage_name(job_id=job_id, number=number)


def page_images_save(*, job_id: uuid.UUID, number: int, image: PageImage) -> None:
    name = page_image_name(job_id=job_id, number=number)
    if default_storage.exists(name):
        default_storage.delete(name)  # a rerun of the page: the same drawing, replaced
    default_storage.save(name, ContentFile(image.webp))


def office_page_images_record(
    *,
    job_id: uuid.UUID,
    number: int,
    image: bytes,
    size: tuple[float, float] | None = None,
) -> None:
    """An Office page's image, drawn once its text is saved (or on request, for a page
    answered from the result cache): stored, and recorded in the page for the viewer. The
    page's layout, and its copy in the result cache, take the drawn page's ``size`` (points)
    in place of the nominal page a structured page is saved with (``model.pipeline``)."""
    stored = office_page_images_store(job_id=job_id, number=number, image=image)
    page = (
        Page.objects.filter(job_id=job_id, number=number)
        .select_related("job__document")
        .only(
            "extra",
            "layout",
            "number",
            "engine",
            "job__engine",
            "job__options",
            "job__document__sha256",
        )
        .first()
    )
    if page is None:
        return
    extra = page.extra if isinstance(page.extra, dict) else {}
    fields: dict = {"extra": {**extra, "page_image": stored}}
    drawn = _drawn_layout(page.layout, size)
    if drawn is not None:
        fields["layout"] = drawn
        job = page.job
        CachedPage.objects.filter(
            sha256=job.document.sha256,
            engine=page.engine or job.engine,
            options_key=options_key(JobOptions.from_dict(job.options).output_options()),
            page_number=number,
            layout=page.layout,
        ).update(layout=drawn)
    Page.objects.filter(pk=page.pk).update(**fields)


def _drawn_layout(layout: dict, size: tuple[float, float] | None) -> dict | None:
    """A structured page's layout on the page drawn for it, or ``None`` to keep it: only a
    layout with no geometry of its own (``source`` "page", one block over the whole page)
    takes another page's size."""
    if size is None or not isinstance(layout, dict) or layout.get("source") != "page":
        return None
    if not layout.get("width") or not layout.get("height") or min(size) <= 0:
        return None
    return PageLayout.from_dict(layout).resized(*size).to_dict()


def page_image_drawing_claim(*, job_id: uuid.UUID, number: int) -> bool:
    """A worker about to draw a page after saving it (an Office page) says so, so that the
    viewer's requests meanwhile do not ask another worker for the same drawing."""
    return bool(cache.add(_request_key(job_id, number), 1, RENDER_REQUEST_SECONDS))


def _request_key(job_id: uuid.UUID, number: int) -> str:
    return f"page-image:{job_id}:{number}"


def page_image_render_request(*, job: Job, number: int) -> bool:
    """Ask a worker of the job's engine (``local`` for an ``auto`` job) to draw a page that
    has no stored image; ``False`` when one was asked for recently (or the broker is away)."""
    if not cache.add(_request_key(job.pk, number), 1, RENDER_REQUEST_SECONDS):
        return False
    try:
        app.send_task(
            RENDER_PAGE_IMAGE,
            args=[str(job.pk), number],
            queue=engine_queue(reading_engine(job.engine)),
        )
    except Exception:  # the broker is away: the viewer asks again later
        logger.exception("could not ask for the image of page %s of job %s", number, job.pk)
        cache.delete(_request_key(job.pk, number))
        return False
    return True
