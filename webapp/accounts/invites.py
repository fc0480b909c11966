"""Invitations for the ``invite`` sign-up mode: a signed, expiring token naming the account
it may create (``manage.py invite USERNAME``). Bound to one username, an invitation makes at
most one account, with no table to keep."""

from __future__ import annotations

from django.conf import settings
from django.core import signing

SALT = "folio.accounts.invite"


def invite_make(*, username: str) -> str:
    return signing.dumps({"username": username}, salt=SALT)


def invite_username(token: str) -> str | None:
    """The username an invitation is for, or ``None`` if it is forged or expired."""
    try:
        data = signing.loads(token, salt=SALT, max_age=settings.FOLIO_INVITE_DAYS * 24 * 3600)
    except signing.BadSignature:
        return None
    username = data.get("username") if isinstance(data, dict) else None
    return username if isinstance(username, str) else None
