"""Strict readers for settings taken from the environment: the one way Folio reads them.

Each refuses a malformed value with a ``ConfigError`` naming the variable, instead of running
with a half-understood configuration; a process that reads its settings at start (Django's
settings module, an engine's ``Config.from_env()`` when a worker loads it) stops there, saying
why. Secrets may also come from ``NAME_FILE`` (Docker and Kubernetes secrets).

Nothing here imports Django, Celery or an engine's libraries: the web process, the workers,
the engines and the scripts in ``bench/`` all use it. Every reader takes an optional
``environ`` mapping (tests pass a dict) and reads ``os.environ`` otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """A setting that is missing or malformed; the message names the variable."""


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def env_str(name: str, default: str = "", *, environ: Mapping[str, str] | None = None) -> str:
    """The variable's value, or the contents of the file ``NAME_FILE`` names (stripped)."""
    env = _env(environ)
    file_path = env.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ConfigError(f"{name}_FILE={file_path!r} cannot be read: {exc}") from exc
    return env.get(name, default)


def env_required(name: str, *, what: str, environ: Mapping[str, str] | None = None) -> str:
    """A setting without which the part that reads it cannot work (``what`` says why)."""
    value = env_str(name, environ=environ).strip()
    if not value:
        raise ConfigError(f"{name} is not set: {what}")
    return value


def env_bool(name: str, default: bool = False, *, environ: Mapping[str, str] | None = None) -> bool:
    raw = _env(environ).get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    raw = _env(environ).get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} is below the minimum of {minimum}")
    return value


def env_float(
    name: str,
    default: float,
    *,
    minimum: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> float:
    raw = _env(environ).get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} is below the minimum of {minimum}")
    return value


def env_choice(
    name: str, default: str, choices: tuple[str, ...], *, environ: Mapping[str, str] | None = None
) -> str:
    """One of ``choices`` (compared lower-case); an empty value is the default."""
    value = (_env(environ).get(name) or "").strip().lower() or default
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not one of: {', '.join(choices)}")
    return value


def env_list(
    name: str, default: list[str], *, environ: Mapping[str, str] | None = None
) -> list[str]:
    raw = _env(environ).get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int_list(
    name: str,
    default: list[int],
    *,
    minimum: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[int]:
    """Comma-separated integers, e.g. ``5,300,1800``; an empty list falls back to ``default``."""
    values = []
    for item in env_list(name, [], environ=environ):
        try:
            value = int(item)
        except ValueError:
            raise ConfigError(f"{name}: {item!r} is not an integer") from None
        if minimum is not None and value < minimum:
            raise ConfigError(f"{name}: {value} is below the minimum of {minimum}")
        values.append(value)
    return values or default


def env_json_object(name: str, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A JSON object (``{}`` when unset), e.g. further arguments for a library."""
    raw = (_env(environ).get(name) or "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object")
    return value
