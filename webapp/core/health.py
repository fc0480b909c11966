"""Liveness and readiness probes."""

from __future__ import annotations

import logging

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from webapp.core.workers import serving_engines

logger = logging.getLogger(__name__)


@require_GET
def healthz(request):
    """The process is up and answering."""
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request):
    """Ready to take work: the database answers, the broker answers, and at least one
    worker consumes an engine queue."""
    checks: dict[str, dict] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = {"ok": True}
    except Exception as exc:  # any failure means not ready; say which
        checks["database"] = {"ok": False, "error": str(exc)}
    try:
        engines = serving_engines()
        checks["broker"] = {"ok": True}
        checks["workers"] = {"ok": bool(engines), "engines": sorted(engines)}
        if not engines:
            checks["workers"]["error"] = "no worker is consuming an engine queue"
    except Exception as exc:
        checks["broker"] = {"ok": False, "error": str(exc)}
        checks["workers"] = {"ok": False, "error": "unknown while the broker is unreachable"}
    ready = all(check["ok"] for check in checks.values())
    return JsonResponse(
        {"status": "ready" if ready else "not ready", "checks": checks},
        status=200 if ready else 503,
    )
