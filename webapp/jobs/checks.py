"""System checks: refuse a configuration that would misbehave only later, under load."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from model.engines.registry import job_engine_names


@register()
def check_engine_and_limits(app_configs, **kwargs):
    problems: list[CheckMessage] = []
    if settings.FOLIO_DEFAULT_ENGINE not in job_engine_names():
        problems.append(
            Error(
                f"FOLIO_DEFAULT_ENGINE={settings.FOLIO_DEFAULT_ENGINE!r} is not an engine",
                hint=f"use one of: {', '.join(job_engine_names())}",
                id="folio.E001",
            )
        )
    if not 0.0 < settings.FOLIO_AUTO_THRESHOLD <= 1.0:
        problems.append(
            Error(
                f"FOLIO_AUTO_THRESHOLD={settings.FOLIO_AUTO_THRESHOLD} is not a review score",
                hint="a review score is above 0 and at most 1 (docs/QUALITY.md: the auto engine)",
                id="folio.E003",
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
    problems += _output_option_defaults()
    return problems


@register(deploy=True)
def check_https(app_configs, **kwargs):
    """Django's HTTPS checks are silenced while FOLIO_HTTPS is off; this one catches the
    deployment that is reached over HTTPS but forgot to say so."""
    if not settings.FOLIO_HTTPS and settings.FOLIO_PUBLIC_URL.startswith("https://"):
        return [
            Warning(
                "FOLIO_PUBLIC_URL is https but FOLIO_HTTPS is off: session and CSRF cookies "
                "are not marked Secure and no HSTS header is sent",
                hint="set FOLIO_HTTPS=1 (docs/SECURITY.md)",
                id="folio.W010",
            )
        ]
    return []


def _output_option_defaults() -> list[Error]:
    from webapp.jobs.services import JobOptions, SubmissionError

    try:
        JobOptions.parse()
    except SubmissionError as exc:
        return [
            Error(
                f"a default output option is not valid: {exc}",
                hint="see FOLIO_TABLE_FORMAT, FOLIO_HEADERS and FOLIO_NORMALIZE in README.md",
                id="folio.E010",
            )
        ]
    return []
