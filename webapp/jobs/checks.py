"""System checks: refuse a configuration that would misbehave only later, under load."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register

from model.engines.registry import engine_names


@register()
def check_engine_and_limits(app_configs, **kwargs):
    problems = []
    if settings.FOLIO_DEFAULT_ENGINE not in engine_names():
        problems.append(
            Error(
                f"FOLIO_DEFAULT_ENGINE={settings.FOLIO_DEFAULT_ENGINE!r} is not an engine",
                hint=f"use one of: {', '.join(engine_names())}",
                id="folio.E001",
            )
        )
    if settings.FOLIO_PAGE_TIME_LIMIT <= settings.FOLIO_PAGE_SOFT_TIME_LIMIT:
        problems.append(
            Error(
                "FOLIO_PAGE_TIME_LIMIT must be above FOLIO_PAGE_SOFT_TIME_LIMIT",
                hint="the soft limit lets a page fail cleanly before the hard limit kills it",
                id="folio.E002",
            )
        )
    if settings.FOLIO_BROKER_VISIBILITY_TIMEOUT <= settings.FOLIO_PAGE_TIME_LIMIT:
        problems.append(
            Warning(
                "FOLIO_BROKER_VISIBILITY_TIMEOUT is not longer than FOLIO_PAGE_TIME_LIMIT",
                hint="a page still running when its message becomes visible again runs twice",
                id="folio.W001",
            )
        )
    return problems
