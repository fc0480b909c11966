"""Reading stored documents in a worker process."""

from __future__ import annotations

from functools import lru_cache

from django.core.files.storage import default_storage


@lru_cache(maxsize=4)
def document_bytes(name: str) -> bytes:
    """The bytes of a stored document. Stored names are content hashes, so a cached copy can
    never be stale; keeping the last few saves one storage read per page of a long PDF."""
    with default_storage.open(name, "rb") as handle:
        return handle.read()
