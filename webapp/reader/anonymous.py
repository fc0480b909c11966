from __future__ import annotations

from django.contrib.auth import get_user_model

ANONYMOUS_USERNAME = "anonymous-reader"


def anonymous_owner():
    """The owner of Reader jobs sent without a key: an inactive user that cannot log in or
    hold a key, so its jobs are reachable only by the id that the request was answered with."""
    user, _ = get_user_model().objects.get_or_create(
        username=ANONYMOUS_USERNAME, defaults={"is_active": False}
    )
    return user
