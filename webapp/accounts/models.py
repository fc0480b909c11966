from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiKey(models.Model):
    """A bearer key for the API. Only a SHA-256 digest of the key is stored: keys are long
    random strings, so a fast hash is enough and lets every request find its key by index.
    ``prefix`` is the key's visible start, for people to tell their keys apart."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
