"""A job after submission: cancel, delete, and retention's expiry."""

from __future__ import annotations

import logging
import uuid
from pathlib import PurePath

from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from webapp.core.storage import stored_content_lock
from webapp.core.storage import tree_delete as storage_tree_delete
from webapp.jobs.models import Document, Job, Page
from webapp.jobs.queueing import pages_revoke
from webapp.jobs.services.page_lifecycle import escalated_pages_settle, retention_expiry
from webapp.results.services import cached_pages_forget
from webapp.webhooks import services as webhook_services

logger = logging.getLogger(__name__)


def job_cancel(*, job: Job) -> bool:
    """Cancel a queued or running job: its queued pages are cancelled and their messages
    revoked (the workers drop them unrun; any that slip through are no-ops at claim), pages
    running now may still finish and are kept. An ``auto`` job's page waiting for its VLM
    pass keeps the local reading it holds. ``False`` if the job had already ended."""
    now = timezone.now()
    with transaction.atomic():
        cancelled = Job.objects.filter(pk=job.pk, status__in=Job.ACTIVE).update(
            status=Job.Status.CANCELLED,
            finished_at=now,
            expires_at=retention_expiry(finished_at=now),
        )
        if not cancelled:
            return False
        queued = Page.objects.filter(job_id=job.pk, status=Page.Status.QUEUED)
        task_ids = list(queued.values_list("task_id", flat=True))
        escalated_pages_settle(
            pages=Page.objects.filter(job_id=job.pk),
            why="the job was cancelled before the VLM read the page",
        )
        pages = queued.update(
            status=Page.Status.CANCELLED, finished_at=now, error="the job was cancelled"
        )
        # Their messages are dropped by the workers unrun, not claimed one by one.
        transaction.on_commit(lambda: pages_revoke(task_ids))
        Job.objects.filter(pk=job.pk).update(pages_cancelled=F("pages_cancelled") + pages)
        webhook_services.job_event_record(job_id=job.pk)
    logger.info("job %s cancelled (%d pages not transcribed)", job.pk, pages)
    return True


def job_delete(*, job: Job) -> None:
    """Delete a job with its pages and deliveries, its document if no other job of the owner
    uses it, and the stored file if no other document needs it. A worker still on one of
    its pages finds nothing to save."""
    with transaction.atomic():
        document_id, name = job.document_id, job.document.file.name
        Job.objects.filter(pk=job.pk).delete()
        if not Job.objects.filter(document_id=document_id).exists():
            Document.objects.filter(pk=document_id).delete()
        transaction.on_commit(lambda: stored_files_delete_unused(names=[name]))
        transaction.on_commit(lambda: job_files_delete(job_id=job.pk))
    logger.info("job %s deleted", job.pk)


def stored_files_delete_unused(*, names) -> int:
    """Delete stored files that no document with a live file refers to (files are shared by
    content between users, so one user's deletion must not take another's file)."""
    deleted = 0
    for name in set(names):
        sha256 = PurePath(name).stem
        with transaction.atomic():
            stored_content_lock(sha256)  # a submission taking this file commits first
            if Document.objects.filter(file=name, file_deleted_at__isnull=True).exists():
                continue
            default_storage.delete(name)
        # What was read from the file goes with it: a deleted or expired document must not
        # be answered from the result cache.
        cached_pages_forget(sha256=sha256)
        deleted += 1
    return deleted


def job_files_delete(*, job_id: uuid.UUID) -> int:
    """Delete what was stored for one job (figure crops, page images: ``results/<job id>/``)."""
    return storage_tree_delete(f"results/{job_id}")


def jobs_expire(*, now=None, batch: int = 500) -> int:
    """Retention: delete the results of jobs past ``expires_at`` and then the files that no
    unexpired job needs. Runs from beat; safe to run twice (each step is conditional)."""
    now = now or timezone.now()
    due = list(
        Job.objects.filter(
            expires_at__lte=now, expired_at__isnull=True, status__in=Job.FINAL
        ).values_list("pk", "document_id")[:batch]
    )
    expired = 0
    for job_id, _ in due:
        with transaction.atomic():
            if Job.objects.filter(pk=job_id, expired_at__isnull=True).update(expired_at=now):
                Page.objects.filter(job_id=job_id).update(markdown="", layout={})
                expired += 1
        # Outside the transaction: storage is not transactional, and the job's results are
        # already unreachable (expired_at is set), so a file deleted here is never wanted.
        job_files_delete(job_id=job_id)
    names = []
    for document in Document.objects.filter(
        pk__in={document_id for _, document_id in due}, file_deleted_at__isnull=True
    ):
        if Job.objects.filter(document=document, expired_at__isnull=True).exists():
            continue  # a newer job of the same document still needs the file
        if Document.objects.filter(pk=document.pk, file_deleted_at__isnull=True).update(
            file_deleted_at=now
        ):
            names.append(document.file.name)
    files = stored_files_delete_unused(names=names)
    if expired:
        logger.info("retention: expired %d jobs, deleted %d files", expired, files)
    return expired
