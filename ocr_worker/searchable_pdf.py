"""Building a finished job's searchable PDF in the worker, in a child process with a
wall-clock limit (``model.layout.searchable_pdf.searchable_pdf_bounded``), and storing it for
the web process to serve (``webapp/jobs/services/searchable_pdf.py``)."""

from __future__ import annotations

import logging
import uuid

from django.conf import settings

from model.bounded_child import ChildFailed, ChildTimeout
from model.layout.searchable_pdf import searchable_pdf_bounded
from ocr_worker.documents import document_bytes
from webapp.jobs import outputs
from webapp.jobs.models import Job
from webapp.jobs.services import searchable_pdf as builds

logger = logging.getLogger(__name__)


def searchable_pdf_make(*, job_id: uuid.UUID, fingerprint: str) -> str:
    """Build and store the PDF of the job's pages as ``fingerprint`` names them; what became
    of it, in a word."""
    job = Job.objects.select_related("document").filter(pk=job_id).first()
    if job is None or job.is_expired or not job.is_final:
        return "gone"
    try:
        outputs.searchable_pdf_check(job=job)
    except (outputs.OutputNotDrawable, outputs.OutputUnavailable):
        return "gone"
    current, pages = outputs.job_page_texts(job_id=job.pk)
    if current != fingerprint:
        return "stale"  # a page landed since it was asked for: a new request names the new pages
    if builds.searchable_pdf_lookup(job_id=job.pk, fingerprint=fingerprint) != builds.StoredBuild():
        return "stored"  # a second message for the same build
    limit = settings.FOLIO_SEARCHABLE_PDF_TIMEOUT
    data = document_bytes(job.document.file.name)
    try:
        pdf = searchable_pdf_bounded(data, job.document.mime_type, pages, timeout=limit)
    except ChildTimeout:
        logger.warning("job %s: searchable PDF not built within %s s", job.pk, limit)
        reason = (
            f"building the searchable PDF took longer than {limit} s, the limit "
            "(FOLIO_SEARCHABLE_PDF_TIMEOUT): the document is too complex; ask for "
            "format=markdown, blocks or chunks"
        )
        builds.searchable_pdf_refusal_save(job_id=job.pk, fingerprint=fingerprint, reason=reason)
        return "refused"
    except ChildFailed as exc:
        logger.warning("job %s: searchable PDF not built: %s", job.pk, exc)
        reason = (
            f"building the searchable PDF exhausted the builder ({exc})"
            if exc.crashed
            else f"the document cannot be made into a searchable PDF: {exc}"
        )
        builds.searchable_pdf_refusal_save(job_id=job.pk, fingerprint=fingerprint, reason=reason)
        return "refused"
    builds.searchable_pdf_save(job_id=job.pk, fingerprint=fingerprint, data=pdf)
    return "built"
