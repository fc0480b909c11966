"""Writes for users, API keys, and the usage counted against quotas and rate limits."""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models import F
from django.utils import timezone

from webapp.accounts.models import AccountLimits, ApiKey, UsageCounter

logger = logging.getLogger(__name__)

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


def user_get_or_create(*, username: str) -> tuple[User, bool]:
    return get_user_model().objects.get_or_create(username=username)


def api_key_create(*, user: User, name: str = "") -> IssuedKey:
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


def user_ensure_admin(*, username: str, password: str, email: str = "") -> tuple[User, bool]:
    """Create the admin, or make an existing user one with this password (idempotent, so a
    container can run it at every start)."""
    user, created = get_user_model().objects.get_or_create(
        username=username, defaults={"email": email}
    )
    user.is_staff = user.is_superuser = user.is_active = True
    user.set_password(password)
    user.save()
    return user, created


def api_key_revoke_owned(*, user: User, key_id: int) -> bool:
    """Revoke one of ``user``'s keys; ``False`` if there is no such key of theirs."""
    api_key = ApiKey.objects.filter(user=user, pk=key_id).first()
    if api_key is None:
        return False
    api_key_revoke(api_key=api_key)
    return True


# --- quotas and rate limits -------------------------------------------------------------------
#
# Only accepted work counts: a submission is checked early without counting anything
# (``*_check``) and counted inside the transaction that writes its job (``*_take``), so a
# refused document never spends a request or a page.
#
# Requests without a key belong to one shared, inactive account (``anonymous_owner``), but
# that account's quotas are counted per anonymous client (``client``: its address, see
# webapp/core/clients.py), at the anonymous limits: one client cannot spend another's.

ANONYMOUS_USERNAME = "anonymous-reader"


def anonymous_owner() -> User:
    """The owner of Reader jobs sent without a key: an inactive user that cannot log in or
    hold a key, so its jobs are reachable only by the id that the request was answered with."""
    user, _ = get_user_model().objects.get_or_create(
        username=ANONYMOUS_USERNAME, defaults={"is_active": False}
    )
    return user


def is_anonymous_owner(user: User) -> bool:
    return user.username == ANONYMOUS_USERNAME and not user.is_active


class QuotaExceeded(Exception):
    """A submission over the user's rate limit or daily page quota. ``retry_after`` is the
    number of seconds until it could pass, or ``None`` when waiting cannot help (one job
    larger than the whole daily quota)."""

    def __init__(self, message: str, *, retry_after: int | None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Limits:
    pages_per_day: int  # 0: no limit
    requests_per_minute: int


def limits_for(*, user: User) -> Limits:
    if is_anonymous_owner(user):
        # Per anonymous client (the account's own limits row, if any, is not used).
        return Limits(
            pages_per_day=settings.FOLIO_READER_ANON_PAGES_PER_DAY,
            requests_per_minute=settings.FOLIO_READER_ANON_REQUESTS_PER_MINUTE,
        )
    own = AccountLimits.objects.filter(user=user).first()

    def pick(value: int | None, default: int) -> int:
        return default if value is None else value

    return Limits(
        pages_per_day=pick(own.pages_per_day if own else None, settings.FOLIO_PAGES_PER_DAY),
        requests_per_minute=pick(
            own.requests_per_minute if own else None, settings.FOLIO_REQUESTS_PER_MINUTE
        ),
    )


def _who(user: User) -> str:
    return "this client" if is_anonymous_owner(user) else "this account"


def _window(kind: str, now: datetime) -> tuple[datetime, datetime]:
    if kind == UsageCounter.Kind.REQUESTS_MINUTE:
        start = now.replace(second=0, microsecond=0)
        return start, start + timedelta(minutes=1)
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def _seconds_until(end: datetime, now: datetime) -> int:
    return max(1, int((end - now).total_seconds() + 0.999))


def _used(*, user: User, client: str, kind: str, now: datetime) -> int:
    start, _ = _window(kind, now)
    return (
        UsageCounter.objects.filter(user=user, client=client, kind=kind, window_start=start)
        .values_list("count", flat=True)
        .first()
    ) or 0


def _take(
    *, user: User, client: str, kind: str, amount: int, limit: int, now: datetime
) -> int | None:
    """Add ``amount`` to the current window if it stays within ``limit``; otherwise answer the
    seconds until the window ends. One conditional UPDATE: racing requests cannot both pass."""
    start, end = _window(kind, now)
    UsageCounter.objects.get_or_create(user=user, client=client, kind=kind, window_start=start)
    taken = UsageCounter.objects.filter(
        user=user, client=client, kind=kind, window_start=start, count__lte=limit - amount
    ).update(count=F("count") + amount)
    if taken:
        return None
    return _seconds_until(end, now)


def _rate_refusal(*, user: User, client: str, limit: int, wait: int) -> QuotaExceeded:
    return QuotaExceeded(
        f"rate limit reached: at most {limit} requests per minute for {_who(user)}",
        retry_after=wait,
    )


def request_rate_check(
    *, user: User, client: str = "", amount: int = 1, now: datetime | None = None
) -> None:
    """Refuse early, without counting, ``amount`` submissions (one request's jobs, all or
    none) that ``request_rate_take`` would refuse now."""
    limit = limits_for(user=user).requests_per_minute
    if not limit:
        return
    if amount > limit:
        raise QuotaExceeded(
            f"{amount} documents in one request, and {_who(user)} may submit {limit} per "
            "minute; send fewer at a time",
            retry_after=None,
        )
    now = now or timezone.now()
    kind = UsageCounter.Kind.REQUESTS_MINUTE
    if _used(user=user, client=client, kind=kind, now=now) + amount > limit:
        wait = _seconds_until(_window(kind, now)[1], now)
        raise _rate_refusal(user=user, client=client, limit=limit, wait=wait)


def request_rate_take(*, user: User, client: str = "", now: datetime | None = None) -> None:
    """Count one submission against the requests-per-minute limit, or refuse it. Call it
    inside the transaction that creates the job."""
    limit = limits_for(user=user).requests_per_minute
    if not limit:
        return
    now = now or timezone.now()
    kind = UsageCounter.Kind.REQUESTS_MINUTE
    wait = _take(user=user, client=client, kind=kind, amount=1, limit=limit, now=now)
    if wait is not None:
        raise _rate_refusal(user=user, client=client, limit=limit, wait=wait)


# The name the rest of the code base knew it by.
request_rate_admit = request_rate_take


def page_quota_check(
    *, user: User, pages: int, client: str = "", now: datetime | None = None
) -> None:
    """Refuse early, without counting, what ``page_quota_take`` would refuse now (so that a
    refused upload is not even stored)."""
    limit = limits_for(user=user).pages_per_day
    if not limit:
        return
    if pages > limit:
        _refuse_whole_day(user=user, client=client, pages=pages, limit=limit)
    now = now or timezone.now()
    kind = UsageCounter.Kind.PAGES_DAY
    used = _used(user=user, client=client, kind=kind, now=now)
    if used + pages > limit:
        raise _day_refusal(
            used=used, limit=limit, pages=pages, wait=_seconds_until(_window(kind, now)[1], now)
        )


def _day_refusal(*, used: int, limit: int, pages: int, wait: int) -> QuotaExceeded:
    return QuotaExceeded(
        f"daily page quota reached: {used} of {limit} pages used today (UTC) and this job "
        f"has {pages}",
        retry_after=wait,
    )


def _refuse_whole_day(*, user: User, client: str, pages: int, limit: int) -> None:
    raise QuotaExceeded(
        f"this job has {pages} pages and {_who(user)} may submit {limit} pages per "
        "day; select fewer pages (`pages`)",
        retry_after=None,
    )


def page_quota_take(
    *, user: User, pages: int, client: str = "", now: datetime | None = None
) -> None:
    """Count ``pages`` against today's (UTC) page quota, or refuse them. Call it inside the
    transaction that creates the job, so a submission that fails later gives them back."""
    limit = limits_for(user=user).pages_per_day
    if not limit:
        return
    if pages > limit:
        _refuse_whole_day(user=user, client=client, pages=pages, limit=limit)
    now = now or timezone.now()
    kind = UsageCounter.Kind.PAGES_DAY
    wait = _take(user=user, client=client, kind=kind, amount=pages, limit=limit, now=now)
    if wait is not None:
        used = _used(user=user, client=client, kind=kind, now=now)
        raise _day_refusal(used=used, limit=limit, pages=pages, wait=wait)


def quota_check(*, user: User, pages: int, client: str = "", now: datetime | None = None) -> None:
    """Both limits for a submission that does not go through ``job_submit`` (which applies
    them itself): counts one request and ``pages`` pages, or raises ``QuotaExceeded``."""
    request_rate_take(user=user, client=client, now=now)
    page_quota_take(user=user, client=client, pages=pages, now=now)


def usage_counters_prune(*, now: datetime | None = None) -> int:
    """Forget windows that can no longer matter (older than two days)."""
    now = now or timezone.now()
    deleted, _ = UsageCounter.objects.filter(window_start__lt=now - timedelta(days=2)).delete()
    return deleted
