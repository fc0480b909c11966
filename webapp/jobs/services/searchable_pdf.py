"""A finished job's searchable PDF: built by a worker (``ocr_worker/searchable_pdf.py``) in a
child process with a wall-clock limit, stored with the job's other files
(``results/<job id>/searchable/``, so deleting the job or its retention deletes it too), and
served as stored by the web process, which never builds one: building takes MuPDF through
every page of the document, which a hostile one can make last minutes (docs/RELIABILITY.md).

A build is named by the job's pages as they were read (``pages_fingerprint``): a page that
lands after the job ended (one that was being read when the job was cancelled) changes the
name, so an out-of-date build is never served; storing a new build deletes the older ones. A
build that could not be made (past its limit, or the document refused) is stored as its
reason, so that the same pages are not built again and again."""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from model.engines.auto import reading_engine
from ocr_worker.celery_app import app
from webapp.core.queues import engine_queue
from webapp.core.storage import tree_delete
from webapp.jobs.models import Job, Page

logger = logging.getLogger(__name__)

BUILD_SEARCHABLE_PDF = "folio.build_searchable_pdf"
# One build request per job and fingerprint in this many seconds however often it is asked
# for; a lost message is sent again after it (the build's own limit is added).
REQUEST_SECONDS = 120


def pages_fingerprint(rows: Iterable[tuple[int, str, object]]) -> str:
    """What a build depends on, as a name: each page's number, status and when it finished
    (a page's reading changes only when it finishes)."""
    digest = hashlib.sha256()
    for number, status, finished_at in sorted(rows, key=lambda row: row[0]):
        stamp = finished_at.isoformat() if finished_at is not None else ""  # type: ignore[attr-defined]
        digest.update(f"{number}:{status}:{stamp};".encode())
    return digest.hexdigest()[:32]


def job_pages_fingerprint(*, job_id: uuid.UUID) -> str:
    rows = Page.objects.filter(job_id=job_id).values_list("number", "status", "finished_at")
    return pages_fingerprint(rows)


def _folder(job_id: uuid.UUID) -> str:
    return f"results/{job_id}/searchable"


def searchable_pdf_name(*, job_id: uuid.UUID, fingerprint: str) -> str:
    return f"{_folder(job_id)}/{fingerprint}.pdf"


def _refusal_name(*, job_id: uuid.UUID, fingerprint: str) -> str:
    return f"{_folder(job_id)}/{fingerprint}.refused.txt"


@dataclass(frozen=True)
class StoredBuild:
    """What storage holds for one fingerprint: the PDF's name, or why it could not be
    built, or neither (``None`` both: not built yet)."""

    name: str | None = None
    refusal: str | None = None


def searchable_pdf_lookup(*, job_id: uuid.UUID, fingerprint: str) -> StoredBuild:
    name = searchable_pdf_name(job_id=job_id, fingerprint=fingerprint)
    if default_storage.exists(name):
        return StoredBuild(name=name)
    refused = _refusal_name(job_id=job_id, fingerprint=fingerprint)
    if default_storage.exists(refused):
        with default_storage.open(refused, "rb") as handle:
            return StoredBuild(refusal=handle.read().decode("utf-8", "replace"))
    return StoredBuild()


def searchable_pdf_request(*, job: Job, fingerprint: str, build_seconds: int) -> bool:
    """Ask a worker of the job's engine to build it; ``False`` when one was asked for
    recently (or the broker is away: the next request asks again)."""
    key = f"searchable-pdf:{job.pk}:{fingerprint}"
    if not cache.add(key, 1, REQUEST_SECONDS + build_seconds):
        return False
    try:
        app.send_task(
            BUILD_SEARCHABLE_PDF,
            args=[str(job.pk), fingerprint],
            queue=engine_queue(reading_engine(job.engine)),
        )
    except Exception:
        logger.exception("could not ask for the searchable PDF of job %s", job.pk)
        cache.delete(key)
        return False
    return True


def searchable_pdf_save(*, job_id: uuid.UUID, fingerprint: str, data: bytes) -> None:
    name = searchable_pdf_name(job_id=job_id, fingerprint=fingerprint)
    _store_replacing_others(job_id, name, data)


def searchable_pdf_refusal_save(*, job_id: uuid.UUID, fingerprint: str, reason: str) -> None:
    name = _refusal_name(job_id=job_id, fingerprint=fingerprint)
    _store_replacing_others(job_id, name, reason.encode())


def _store_replacing_others(job_id: uuid.UUID, name: str, data: bytes) -> None:
    tree_delete(_folder(job_id))  # builds of pages as they were before: never served again
    default_storage.save(name, ContentFile(data))
    # Deleted or expired while it was built: retention has already passed this folder.
    if not Job.objects.filter(pk=job_id, expired_at__isnull=True).exists():
        tree_delete(_folder(job_id))
