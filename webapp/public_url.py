"""The address clients reach this service at (``FOLIO_PUBLIC_URL``), which links printed or
sent elsewhere are made of: webhook bodies, ``manage.py invite``'s sign-up link.

A deployment sets it. ``make run`` serves on ``127.0.0.1:$PORT`` and records that address in
``var/public_url`` as it starts, so that a command run beside it in another shell (where
PORT is not set) still prints links to the port the server runs on."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

NAME = "FOLIO_PUBLIC_URL"
RECORD_FILE = "public_url"
DEFAULT = "http://127.0.0.1:8000"


def public_url_record(*, var_dir: Path, port: str) -> str:
    """Record the address ``make run`` serves on; the address."""
    address = f"http://127.0.0.1:{port}"
    (var_dir / RECORD_FILE).write_text(address + "\n")
    return address


def public_url(
    *, var_dir: Path, embedded: bool, environ: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """The public URL and where it came from: the variable, the address ``make run``
    recorded (embedded mode only), else the default."""
    env = os.environ if environ is None else environ
    if env.get(NAME, "").strip():
        return env[NAME].strip().rstrip("/"), NAME
    record = var_dir / RECORD_FILE
    if embedded and record.is_file():
        recorded = record.read_text().strip()
        if recorded:
            return recorded.rstrip("/"), f"the address `make run` serves on ({record})"
    return DEFAULT, "the default"
