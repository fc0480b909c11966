"""Drawing a page's image in the worker, in a child process with a wall-clock limit
(``model.page_images``), before its engine reads the page.

The drawing serves the job page's viewer, and it is also the page's test of good behaviour:
a page that cannot be drawn within ``FOLIO_PAGE_RENDER_TIMEOUT`` is one no engine will read
within its time limit either (drawing is most of what reading a page costs), so it fails at
once with that reason, unretried, instead of holding the worker process in C code until the
hard kill."""

from __future__ import annotations

import logging
import uuid

from django.conf import settings

from model import pipeline
from model.engines.base import EngineOptions, PageInput
from model.formats.types import has_page_images
from model.page_images import RenderFailed, RenderTimeout, render_page_image
from webapp.jobs import services

logger = logging.getLogger(__name__)


def page_images_make(*, job_id: uuid.UUID, number: int, data: bytes, mime_type: str) -> str | None:
    """Draw and store the page's image; the reason to fail the page now, or ``None`` (drawn,
    nothing to draw, or a document error the engine will state in its own words)."""
    if not has_page_images(mime_type):
        return None
    limit = settings.FOLIO_PAGE_RENDER_TIMEOUT
    try:
        image = render_page_image(data, mime_type, number, timeout=limit)
    except RenderTimeout:
        logger.warning("page %s of job %s: not drawn within %s s", number, job_id, limit)
        return (
            f"drawing this page took longer than {limit} s, the limit "
            "(FOLIO_PAGE_RENDER_TIMEOUT): the page is too complex to read; not retried"
        )
    except RenderFailed as exc:
        if exc.crashed and ("MemoryError" in str(exc) or "signal" in str(exc)):
            return f"drawing this page exhausted the renderer ({exc}); not retried"
        # The document's own error (the engine says it in its words), or a renderer problem
        # that must not cost the page its transcription: the engine runs under the page's
        # time limit either way.
        logger.warning("page %s of job %s: no page image: %s", number, job_id, exc)
        return None
    try:
        services.page_images_save(job_id=job_id, number=number, image=image)
    except Exception:  # the viewer lacks a picture; the page's reading is not at stake
        logger.exception("page %s of job %s: its image could not be stored", number, job_id)
    return None


def office_page_images_make(
    *, job_id: uuid.UUID, number: int, data: bytes, mime_type: str, options: dict
) -> bool:
    """Draw and store an Office or OpenDocument page's images from LibreOffice's layout of the
    document (the page's units as the job's options make them), the page's layout taking the
    drawn page's size; ``False`` where there are none to draw (no LibreOffice here, or it
    failed: the page keeps its text and its nominal page)."""
    drawn = pipeline.office_page_image(
        PageInput(data=data, mime_type=mime_type, page_number=number),
        EngineOptions.from_dict(options),
        timeout=settings.FOLIO_PAGE_RENDER_TIMEOUT,
    )
    if drawn is None:
        return False
    services.office_page_images_record(
        job_id=job_id, number=number, image=drawn.webp, size=drawn.size
    )
    return True
