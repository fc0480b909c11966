"""The page result cache: looked up at submission, filled when a page succeeds."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from functools import cache

from django.conf import settings
from django.utils import timezone

from model.engines.registry import engine_spec
from webapp.results.models import CachedPage


@cache
def engine_version(engine: str) -> str:
    return engine_spec(engine).version


def options_key(options: dict) -> str:
    return hashlib.sha256(json.dumps(options, sort_keys=True).encode()).hexdigest()


def cached_pages(
    *,
    sha256: str,
    engine: str,
    options: dict,
    pages: list[int],
    max_age: timedelta | None,
    owner_id: int | None,
) -> dict[int, CachedPage]:
    """The cached transcriptions of ``pages``, by page number; ``max_age`` None means any.
    Only ``owner_id``'s own entries, unless the server shares the cache between users
    (``FOLIO_RESULT_CACHE_SHARED``); ``owner_id`` None with an unshared cache: none at all."""
    shared = settings.FOLIO_RESULT_CACHE_SHARED
    if owner_id is None and not shared:
        return {}
    entries = CachedPage.objects.filter(
        sha256=sha256,
        engine=engine,
        engine_version=engine_version(engine),
        options_key=options_key(options),
        page_number__in=pages,
        # Entries from before layouts were kept would give a page without blocks.
        layout__has_key="blocks",
    )
    if not shared:
        entries = entries.filter(owner_id=owner_id)
    if max_age is not None:
        entries = entries.filter(created_at__gte=timezone.now() - max_age)
    # Shared, several users may have read a page: the newest reading answers.
    return {entry.page_number: entry for entry in entries.order_by("created_at")}


def cached_page_store(
    *,
    sha256: str,
    engine: str,
    engine_version: str,
    options: dict,
    page_number: int,
    markdown: str,
    layout: dict,
    method: str,
    input_tokens: int,
    output_tokens: int,
    quality: dict | None = None,
    now: datetime | None = None,
    owner_id: int | None = None,
) -> None:
    CachedPage.objects.update_or_create(
        owner_id=owner_id,
        sha256=sha256,
        engine=engine,
        engine_version=engine_version,
        options_key=options_key(options),
        page_number=page_number,
        defaults={
            "markdown": markdown,
            "layout": layout,
            "method": method,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "quality": quality or {},
            "created_at": now or timezone.now(),
        },
    )


def cached_pages_forget(*, sha256: str) -> int:
    deleted, _ = CachedPage.objects.filter(sha256=sha256).delete()
    return deleted
