"""Reads for accounts: keys and the usage counted against a user's limits."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from webapp.accounts.models import ApiKey


def api_keys_of(*, user: User) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user=user).order_by("-created_at")
