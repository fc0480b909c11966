"""Django's SECRET_KEY (it signs sessions, CSRF tokens and the Reader's poll links), read at
start. A deployment gives its own (``FOLIO_SECRET_KEY`` or ``FOLIO_SECRET_KEY_FILE``) and a
process refuses to start without one; the embedded mode (`make run`, SQLite under ``var/``)
makes a random one per install the first time and keeps it in ``var/secret_key``. An empty
key, from the variable or its file, is an error: never a silent fallback to a known value."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from model.config import ConfigError

NAME = "FOLIO_SECRET_KEY"
KEY_FILE = "secret_key"
# Django's check --deploy wants at least 50 characters and 5 distinct ones.
MIN_LENGTH = 50


def secret_key(*, var_dir: Path, embedded: bool, environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    if f"{NAME}_FILE" in env:
        return _checked(_read(Path(env[f"{NAME}_FILE"]), f"{NAME}_FILE"), f"{NAME}_FILE")
    if NAME in env:
        return _checked(env[NAME].strip(), NAME)
    if not embedded:
        raise ConfigError(
            f"{NAME} (or {NAME}_FILE) is not set: a deployment needs a secret key of its own, "
            f"at least {MIN_LENGTH} random characters (python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(48))')"
        )
    return _embedded_key(var_dir / KEY_FILE)


def _read(path: Path, name: str) -> str:
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise ConfigError(f"{name}={str(path)!r} cannot be read: {exc}") from exc


def _checked(key: str, name: str) -> str:
    if not key:
        raise ConfigError(f"{name} is empty: set a secret key of at least {MIN_LENGTH} characters")
    if len(key) < MIN_LENGTH:
        raise ConfigError(f"{name} is {len(key)} characters; use at least {MIN_LENGTH}")
    return key


def _embedded_key(path: Path) -> str:
    """This install's key: made once, readable by its owner only. Created exclusively, so
    two processes starting together agree on one key."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process of this install made it first
        else:
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_urlsafe(48) + "\n")
    return _checked(_read(path, str(path)), str(path))
