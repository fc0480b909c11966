"""Where Folio keeps its files (uploads, page images, figure crops, results), read from the
environment: a local folder, or an S3-compatible bucket through django-storages.

Every setting the chosen storage needs is checked here, when the settings are read, so a
process with a half-configured storage stops at start naming the variable instead of failing
on its first upload or, worse, writing to a local disk that the other hosts cannot see.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from model.config import ConfigError, env_str

STORAGE_KINDS = ("filesystem", "s3")
ADDRESSING_STYLES = ("auto", "path", "virtual")


def storage_kind(*, environ: Mapping[str, str] | None = None) -> str:
    """``FOLIO_STORAGE``; without it, ``s3`` when a bucket is named (as before the variable
    existed) and ``filesystem`` otherwise."""
    kind = env_str("FOLIO_STORAGE", environ=environ).strip().lower()
    if not kind:
        return "s3" if env_str("FOLIO_S3_BUCKET", environ=environ) else "filesystem"
    if kind not in STORAGE_KINDS:
        raise ConfigError(f"FOLIO_STORAGE={kind!r} must be one of {', '.join(STORAGE_KINDS)}")
    return kind


def default_storage_config(*, media_root: Path, environ: Mapping[str, str] | None = None) -> dict:
    """The ``STORAGES["default"]`` entry for the chosen storage."""
    if storage_kind(environ=environ) == "filesystem":
        return {
            # Django's, writing each file under a temporary name first (a full disk leaves
            # no truncated file behind).
            "BACKEND": "webapp.core.atomic_storage.AtomicFileSystemStorage",
            "OPTIONS": {"location": str(media_root)},
        }
    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": _s3_options(environ)}


def _s3_options(environ: Mapping[str, str] | None) -> dict:
    bucket = env_str("FOLIO_S3_BUCKET", environ=environ).strip()
    if not bucket:
        raise ConfigError(
            "FOLIO_S3_BUCKET is not set: FOLIO_STORAGE=s3 needs the bucket that holds "
            "uploads, page images, figures and results"
        )
    access_key = env_str("FOLIO_S3_ACCESS_KEY", environ=environ).strip()
    secret_key = env_str("FOLIO_S3_SECRET_KEY", environ=environ).strip()
    # Both or neither: without them boto3 finds credentials itself (instance or pod role).
    if access_key and not secret_key:
        raise ConfigError(
            "FOLIO_S3_SECRET_KEY (or FOLIO_S3_SECRET_KEY_FILE) is not set, but "
            "FOLIO_S3_ACCESS_KEY is: set both, or neither to use the host's role"
        )
    if secret_key and not access_key:
        raise ConfigError(
            "FOLIO_S3_ACCESS_KEY is not set, but FOLIO_S3_SECRET_KEY is: set both, or neither "
            "to use the host's role"
        )
    endpoint = env_str("FOLIO_S3_ENDPOINT_URL", environ=environ).strip()
    parts = urlsplit(endpoint)
    if endpoint and (parts.scheme not in ("http", "https") or not parts.netloc):
        raise ConfigError(
            f"FOLIO_S3_ENDPOINT_URL={endpoint!r} is not an http(s) URL (e.g. http://minio:9000)"
        )
    style = env_str("FOLIO_S3_ADDRESSING_STYLE", "auto", environ=environ).strip().lower()
    if style not in ADDRESSING_STYLES:
        raise ConfigError(
            f"FOLIO_S3_ADDRESSING_STYLE={style!r} must be one of {', '.join(ADDRESSING_STYLES)}"
        )
    return {
        "bucket_name": bucket,
        "endpoint_url": endpoint or None,
        "region_name": env_str("FOLIO_S3_REGION", environ=environ).strip() or None,
        "access_key": access_key or None,
        "secret_key": secret_key or None,
        # Names are content hashes or per-job paths: an existing name is the same file.
        "file_overwrite": False,
        "default_acl": None,
        # Files are served through the API (checked per user), never by a public link.
        "querystring_auth": True,
        "addressing_style": None if style == "auto" else style,
        # Everything under one prefix, so a bucket can be shared with other data.
        "location": env_str("FOLIO_S3_PREFIX", environ=environ).strip().strip("/"),
    }
