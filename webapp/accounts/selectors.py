"""Reads for accounts: keys and the usage counted against a user's limits."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from webapp.accounts.models import ApiKey


def api_keys_of(*, user: AbstractBaseUser) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user=user).order_by("-created_at")
