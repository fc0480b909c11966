"""Failed log-ins throttled per account and per address, in the shared cache (every web
process sees the same counts). Enforced in the authentication backend, so every password
log-in (the account pages, the admin) is covered; while locked even the right password is
refused, so guessing learns nothing. A success clears the account's count, not the
address's (one address trying many accounts stays throttled)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver

from webapp.core.clients import client_identity

logger = logging.getLogger(__name__)

BACKEND = "webapp.accounts.login_throttle.ThrottledModelBackend"


def _keys(request, username: str) -> list[tuple[str, int]]:
    keys = [(f"login-failures:account:{username.strip().lower()}", settings.FOLIO_LOGIN_FAILURES)]
    if request is not None:
        keys.append(
            (
                f"login-failures:address:{client_identity(request)}",
                settings.FOLIO_LOGIN_FAILURES_PER_ADDRESS,
            )
        )
    return keys


def login_locked(request, username: str) -> bool:
    try:
        return any((cache.get(key) or 0) >= limit for key, limit in _keys(request, username))
    except Exception:  # the cache is down: log-ins work, unthrottled, rather than not at all
        logger.exception("log-in throttle cache unavailable")
        return False


class ThrottledModelBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is not None and login_locked(request, username):
            # authenticate() stops at PermissionDenied: no other backend is asked.
            raise PermissionDenied("too many failed log-ins")
        return super().authenticate(request, username=username, password=password, **kwargs)


@receiver(user_login_failed)
def _count_failure(sender, credentials, request=None, **kwargs):
    username = credentials.get("username")
    if not username:
        return
    try:
        for key, _ in _keys(request, username):
            cache.add(key, 0, timeout=settings.FOLIO_LOGIN_LOCKOUT_SECONDS)
            cache.incr(key)
    except Exception:
        logger.exception("log-in throttle cache unavailable")


@receiver(user_logged_in)
def _clear_account(sender, request, user, **kwargs):
    try:
        cache.delete(_keys(None, user.get_username())[0][0])
    except Exception:
        logger.exception("log-in throttle cache unavailable")
