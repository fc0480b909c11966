"""Writes and files the browser interface makes: a webhook test event, page images, and the
result zip."""

from __future__ import annotations

import io
import json
import logging
import uuid
import zipfile
from datetime import UTC

from django.db import transaction
from django.utils import timezone

from model.rendering import open_page_image
from webapp.jobs import selectors as job_selectors
from webapp.jobs.models import Job, Page
from webapp.webhooks.models import WebhookDelivery, WebhookEndpoint
from webapp.webhooks.queueing import deliveries_enqueue
from webapp.webhooks.services import WebhookError

logger = logging.getLogger(__name__)

TEST_EVENT = "webhook.test"
# Big enough to read the page beside its text on a large screen, small enough to send fast.
PAGE_IMAGE_LONG_SIDE = 1400


def endpoint_test_send(*, endpoint: WebhookEndpoint) -> WebhookDelivery:
    """A signed ``webhook.test`` event for one endpoint, through the same outbox, retries and
    delivery log as real events, so that a receiver can be checked before a job ends."""
    if endpoint.disabled_at is not None:
        raise WebhookError(
            f"this endpoint is disabled ({endpoint.disabled_reason or 'no reason given'}); "
            "enable it first"
        )
    now = timezone.now()
    payload = {
        "type": TEST_EVENT,
        "timestamp": now.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "data": {"endpoint_id": str(endpoint.pk), "message": "A test event sent from Folio."},
    }
    with transaction.atomic():
        delivery = WebhookDelivery.objects.create(
            endpoint=endpoint,
            job=None,
            event=TEST_EVENT,
            message_id=f"msg_{uuid.uuid4().hex}",
            payload=payload,
            next_attempt_at=now,
            enqueued_at=now,
        )

        def send() -> None:
            # Unsent, it stays pending and the periodic sweep sends it once the broker is back.
            if not deliveries_enqueue(delivery_ids=[delivery.pk]):
                WebhookDelivery.objects.filter(pk=delivery.pk).update(enqueued_at=None)

        transaction.on_commit(send)
    logger.info("test event %s for endpoint %s", delivery.pk, endpoint.pk)
    return delivery


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
