"""Liveness and readiness probes.

- ``/healthz``: the process is up and answering (a liveness probe: restarting the process
  would not bring a database back).
- ``/readyz/web``: this web process can serve: the database and the broker answer now (the
  web's readiness probe in every manifest).
- ``/readyz``: the service can take work: the same, and a live worker serves an engine.

Every check is made on each request, never from a cache: a probe must not report a broker or
a database it cannot reach."""

from __future__ import annotations

import logging

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from webapp.core.workers import engines_served

logger = logging.getLogger(__name__)


@require_GET
def healthz(request):
    """The process is up and answering."""
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request):
    """Ready to take work: the database answers, the broker answers, and at least one
    worker consumes an engine queue."""
    return _readiness(workers_needed=True)


@require_GET
def readyz_web(request):
    """This web process is ready to serve: the database and the broker answer. The workers
    are listed, not required (without them the service still answers and refuses jobs for
    engines nobody serves, saying so)."""
    return _readiness(workers_needed=False)


def _readiness(*, workers_needed: bool) -> JsonResponse:
    checks: dict[str, dict] = {"database": _database_check()}
    try:
        served = engines_served(fresh=True)  # a round trip to the broker
        checks["broker"] = {"ok": True}
        workers: dict = {
            "ok": bool(served) or not workers_needed,
            "engines": sorted(served),
            "workers": {name: engine.workers for name, engine in sorted(served.items())},
        }
        if not served:
            workers["error"] = "no worker is consuming an engine queue"
        checks["workers"] = workers
    except Exception as exc:
        checks["broker"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        checks["workers"] = {
            "ok": not workers_needed,
            "error": "unknown while the broker is unreachable",
        }
    ready = all(check["ok"] for check in checks.values())
    return JsonResponse(
        {"status": "ready" if ready else "not ready", "checks": checks},
        status=200 if ready else 503,
    )


def _database_check() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True}
    except Exception as exc:  # any failure means not ready; say which
        # A broken connection is not reused by the next request of this thread.
        connection.close_if_unusable_or_obsolete()
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
