"""Strict readers for settings taken from the environment.

Each refuses a malformed value at start-up with a message naming the variable, instead of
running with a half-understood configuration. Secrets may also come from ``NAME_FILE``
(Docker and Kubernetes secrets).
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum of {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int_list(name: str, default: list[int], *, minimum: int | None = None) -> list[int]:
    """Comma-separated integers, e.g. ``5,300,1800``; an empty list falls back to ``default``."""
    values = []
    for item in env_list(name, []):
        try:
            value = int(item)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r} is not an integer") from None
        if minimum is not None and value < minimum:
            raise ImproperlyConfigured(f"{name}: {value} is below the minimum of {minimum}")
        values.append(value)
    return values or default
