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


class AccountLimits(models.Model):
    """One user's own quota and rate limit; an empty field means the server's default
    (FOLIO_PAGES_PER_DAY, FOLIO_REQUESTS_PER_MINUTE) and 0 means no limit."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="limits"
    )
    pages_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text="pages submitted per UTC day; empty: the default"
    )
    requests_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="submissions per minute; empty: the default"
    )

    class Meta:
        verbose_name_plural = "account limits"

    def __str__(self) -> str:
        return f"limits of {self.user}"


class UsageCounter(models.Model):
    """What a user consumed in one window (a minute of requests, a day of pages). Counted by
    conditional UPDATE, so concurrent requests cannot both take the last unit; never
    derived from jobs, so deleting a job does not hand its pages back."""

    class Kind(models.TextChoices):
        REQUESTS_MINUTE = "requests_minute"
        PAGES_DAY = "pages_day"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # Empty for an account; for the shared anonymous account, the anonymous client counted
    # (its address or IPv6 /64): each anonymous client has quotas of its own.
    client = models.CharField(max_length=64, blank=True, default="")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "client", "kind", "window_start"],
                name="one_counter_per_user_client_kind_window",
            )
        ]
        indexes = [models.Index(fields=["window_start"])]

    def __str__(self) -> str:
        return f"{self.user} {self.kind} {self.window_start:%Y-%m-%d %H:%M}: {self.count}"
