"""Sending delivery messages by task name (the web process imports no worker code)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from kombu.exceptions import OperationalError as BrokerError

from ocr_worker.celery_app import MAINTENANCE_QUEUE, app

logger = logging.getLogger(__name__)

DELIVER_WEBHOOK = "folio.deliver_webhook"


def deliveries_enqueue(*, delivery_ids: Iterable[uuid.UUID], countdown: float = 0) -> bool:
    """One message per delivery; ``False`` if the broker is unreachable (the periodic sweep
    sends them later, since the rows stay pending in the database)."""
    try:
        with app.producer_or_acquire() as producer:
            for delivery_id in delivery_ids:
                app.send_task(
                    DELIVER_WEBHOOK,
                    args=[str(delivery_id)],
                    queue=MAINTENANCE_QUEUE,
                    countdown=countdown or None,
                    producer=producer,
                )
    except BrokerError:
        logger.exception("broker unreachable; the sweep will send these deliveries later")
        return False
    return True
