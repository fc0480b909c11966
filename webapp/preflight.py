"""Checks every process of a deployment runs before it starts serving (deploy/entrypoint.sh):

1. the configuration: the settings are read, and a malformed or missing value stops it
   naming its variable (Django's system checks run in the migrate step, before the others);
2. the services it needs answer: the database, the broker and the file storage, waited for
   up to ``--wait`` seconds, as they may still be starting beside it.

    python -m webapp.preflight [--wait SECONDS] [--create-bucket] [--no-storage]

Exit status: 0 ready; 78 (EX_CONFIG) the configuration is wrong, which waiting cannot fix;
69 (EX_UNAVAILABLE) a service still did not answer when the wait ran out. The message names
the variable to look at.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

EX_UNAVAILABLE = 69
EX_CONFIG = 78
RETRY_SECONDS = 1.0


def say(message: str) -> None:
    print(f"folio preflight: {message}", file=sys.stderr, flush=True)


def configuration_error() -> str | None:
    """Read the settings; what is wrong with them, or ``None``."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    try:
        import django

        django.setup()
    except Exception as exc:  # any error reading settings is a configuration error
        return f"{type(exc).__name__}: {exc}"
    return None


def database_check() -> None:
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        connection.close()
        raise RuntimeError(f"the database (DATABASE_URL) does not answer: {exc}") from exc


def broker_check() -> None:
    from ocr_worker.celery_app import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=3)
    except Exception as exc:
        raise RuntimeError(f"the broker (FOLIO_BROKER_URL) does not answer: {exc}") from exc


def storage_check(*, create_bucket: bool) -> Callable[[], None]:
    def check() -> None:
        from django.conf import settings

        from webapp.core.storage import StorageUnavailable, bucket_ensure, storage_probe

        try:
            if create_bucket and settings.FOLIO_STORAGE == "s3" and bucket_ensure():
                say(f"created the bucket {settings.STORAGES['default']['OPTIONS']['bucket_name']}")
            storage_probe()
        except StorageUnavailable as exc:
            raise RuntimeError(f"the file storage is not usable: {exc}") from exc
        except Exception as exc:
            raise RuntimeError(f"the file storage (FOLIO_S3_*) does not answer: {exc}") from exc

    return check


def wait_for(checks: list[Callable[[], None]], *, seconds: float) -> str | None:
    """Run each check until it passes or the time is up; the last error, or ``None``."""
    deadline = time.monotonic() + seconds
    for check in checks:
        last = None
        while True:
            try:
                check()
                break
            except RuntimeError as exc:
                if str(exc) != last:
                    say(f"waiting: {exc}")
                    last = str(exc)
                if time.monotonic() >= deadline:
                    return str(exc)
                time.sleep(RETRY_SECONDS)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webapp.preflight")
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for services")
    parser.add_argument(
        "--create-bucket", action="store_true", help="create the S3 bucket if it is missing"
    )
    parser.add_argument("--no-storage", action="store_true", help="do not check the storage")
    args = parser.parse_args(argv)

    error = configuration_error()
    if error:
        say(f"configuration error: {error}")
        return EX_CONFIG
    checks = [database_check, broker_check]
    if not args.no_storage:
        checks.append(storage_check(create_bucket=args.create_bucket))
    failure = wait_for(checks, seconds=args.wait)
    if failure:
        say(f"gave up after {args.wait:g} s: {failure}")
        return EX_UNAVAILABLE
    from webapp.core.storage import storage_describe

    say(f"ready: database, broker and storage ({storage_describe()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
