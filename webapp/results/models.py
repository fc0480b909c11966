from __future__ import annotations

from django.db import models


class CachedPage(models.Model):
    """A page's transcription, reusable by any job that asks for the same page of the same
    bytes from the same engine version with the same options.

    Keyed by content, not by owner: whoever sends these bytes already has everything the
    transcription says. A new engine version (or other options) is a different key, never a
    stale hit."""

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
                fields=["sha256", "engine", "engine_version", "options_key", "page_number"],
                name="one_cached_page_per_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.sha256[:12]} p{self.page_number} {self.engine}@{self.engine_version}"
