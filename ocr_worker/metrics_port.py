"""Who may read a worker's metrics port (``FOLIO_METRICS_PORT``): the same control as the web's
``/metrics`` (``webapp.core.surfaces.metrics_allowed``), a bearer ``FOLIO_METRICS_TOKEN`` or an
address in ``FOLIO_METRICS_ALLOW``. The address is the connecting one: no proxy stands in
front of a worker's port, so no forwarded header is believed."""

from __future__ import annotations

from typing import Any

from webapp.core.surfaces import METRICS_REFUSAL, metrics_allowed

__all__ = ["METRICS_REFUSAL", "scraper_allowed"]


def scraper_allowed(environ: dict[str, Any]) -> bool:
    """Whether the request in this WSGI ``environ`` may read the metrics."""
    return metrics_allowed(
        authorization=environ.get("HTTP_AUTHORIZATION", ""),
        address=environ.get("REMOTE_ADDR", ""),
    )
