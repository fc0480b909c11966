from __future__ import annotations

from django.conf import settings
from django.db import models


class CachedPage(models.Model):
    """A page's transcription, reusable by any job that asks for the same page of the same
    bytes from the same engine version with the same options.

    Each entry belongs to the user whose job read it (``owner``), and by default only that
    user's jobs are answered from it: an instant answer with ``method: cache`` would tell
    anyone else that somebody converted the same file. ``FOLIO_RESULT_CACHE_SHARED`` lets
    every user's jobs share all entries. A new engine version (or other options) is a
    different key, never a stale hit."""

    # Empty in entries stored before the cache was scoped: those are used only when shared.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
    )

    sha256 = models.CharField(max_length=64)
    engine = models.CharField(max_length=50)
    engine_version = models.CharField(max_length=50)
    options_key = models.CharField(max_length=64, help_text="a digest of the output options")
    page_number = models.PositiveIntegerField()
    markdown = models.TextField()
    # The page's layout (blocks and boxes); empty in entries stored before layouts existed,
    # which are then not reused.
    layout = models.JSONField(default=dict, blank=True)
    method = models.CharField(max_length=30, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # The page's quality report (signals, review score): a hit says as much as the reading.
    quality = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "owner",
                    "sha256",
                    "engine",
                    "engine_version",
                    "options_key",
                    "page_number",
                ],
                name="one_cached_page_per_owner_and_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.sha256[:12]} p{self.page_number} {self.engine}@{self.engine_version}"
