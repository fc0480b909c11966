"""Writes for users and API keys."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from webapp.accounts.models import ApiKey

KEY_PREFIX = "folio_"
PREFIX_LENGTH = len(KEY_PREFIX) + 6
# Writing last_used_at on every request would make every read a write; minute precision is plenty.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    secret: str  # the full key: shown once, never stored


def key_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def user_get_or_create(*, username: str) -> tuple[AbstractBaseUser, bool]:
    return get_user_model().objects.get_or_create(username=username)


def api_key_create(*, user: AbstractBaseUser, name: str = "") -> IssuedKey:
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    api_key = ApiKey.objects.create(
        user=user, name=name, prefix=secret[:PREFIX_LENGTH], digest=key_digest(secret)
    )
    return IssuedKey(api_key=api_key, secret=secret)


def api_key_authenticate(*, secret: str) -> ApiKey | None:
    api_key = (
        ApiKey.objects.select_related("user")
        .filter(digest=key_digest(secret), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if api_key is None:
        return None
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    return api_key


def api_key_revoke(*, api_key: ApiKey) -> None:
    ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
