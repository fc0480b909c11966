"""Small display helpers for the browser interface's templates."""

from __future__ import annotations

from django import template

register = template.Library()

STATUS_LABELS = {
    "queued": "Queued",
    "running": "Running",
    "succeeded": "Done",
    "partially_failed": "Partly failed",
    "failed": "Failed",
    "cancelled": "Cancelled",
    "pending": "Pending",
}


@register.filter
def duration(seconds) -> str:
    """``75.2`` → ``1 min 15 s``; empty for no value."""
    if seconds is None or seconds == "":
        return ""
    seconds = round(float(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


@register.filter
def status_label(status: str) -> str:
    return STATUS_LABELS.get(str(status), str(status).replace("_", " ").capitalize())


@register.filter
def secret_hint(secret: str) -> str:
    """Enough of a secret to recognise it, not to use it."""
    return f"{secret[:10]}…" if secret else ""
