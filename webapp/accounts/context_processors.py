"""What every page's template needs to know about accounts."""

from __future__ import annotations

from django.conf import settings


def signup(request) -> dict:
    """The sign-up mode: the navigation offers no sign-up where it is switched off."""
    return {"signup_mode": settings.FOLIO_SIGNUP}
