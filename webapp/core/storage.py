"""What the processes ask of the file storage besides reading and writing files: is it there
(start-up and readiness), make the bucket (first start), delete a folder (retention), hold
one content-addressed file while it is taken or let go, and store one verified.

Writes are whole or absent: the folder storage writes under a temporary name and renames
(``core/atomic_storage.py``); an S3 upload is one PUT, or a multipart upload that s3transfer
aborts when a part fails (``CreateMultipartUploadTask`` registers the abort as its failure
clean-up), so no object appears until it is complete."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection

logger = logging.getLogger(__name__)

# Errors of a disk or quota with no room left.
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _s3_storage() -> Any:
    """The default storage as django-storages' S3 backend, whose attributes (bucket_name,
    connection, ...) Django's Storage type does not declare; only called when FOLIO_STORAGE=s3."""
    return default_storage


class StorageUnavailable(Exception):
    """The configured storage cannot be used; the message says which setting to look at."""


class StorageFull(Exception):
    """The storage has no room for the file (a full disk or quota); nothing was stored."""


class StorageFailed(Exception):
    """The storage refused or failed a write for another reason; nothing was stored."""


@contextlib.contextmanager
def storage_errors() -> Iterator[None]:
    """Storage failures as ``StorageFull`` or ``StorageFailed``, each saying what happened."""
    try:
        yield
    except OSError as exc:
        if exc.errno in NO_ROOM:
            raise StorageFull(f"the file storage is full ({exc.strerror})") from exc
        raise StorageFailed(f"the file storage failed ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:
        if type(exc).__module__.split(".")[0] not in ("botocore", "boto3", "s3transfer"):
            raise
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        if code in ("QuotaExceeded", "XMinioStorageFull", "InsufficientStorage"):
            raise StorageFull(f"the bucket is full ({code})") from exc
        raise StorageFailed(f"the bucket failed ({type(exc).__name__}: {exc})") from exc


def content_store(name: str, data: bytes, *, sha256: str) -> bool:
    """Store ``data`` under ``name``, its content address, once: a file already there is
    reused only when its size and SHA-256 are the data's; one that is not (cut short by a
    full disk before writes were atomic) is replaced whole. Whether this call wrote the
    file. Raises ``StorageFull`` or ``StorageFailed``, with nothing stored."""
    with storage_errors():
        if default_storage.exists(name):
            if stored_file_matches(name, size=len(data), sha256=sha256):
                return False
            logger.warning("stored file %s does not hold its bytes: stored again", name)
            _replace(name, data)
            return True
        saved = default_storage.save(name, ContentFile(data))
        if saved != name:
            # Someone stored the same bytes between our look and our save, whole: keep theirs.
            default_storage.delete(saved)
            return False
        return True


def stored_file_matches(name: str, *, size: int, sha256: str) -> bool:
    """Whether the stored file ``name`` is ``size`` bytes whose SHA-256 is ``sha256``."""
    if default_storage.size(name) != size:
        return False
    digest = hashlib.sha256()
    with default_storage.open(name, "rb") as stored:
        while chunk := stored.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest() == sha256


def _replace(name: str, data: bytes) -> None:
    if settings.FOLIO_STORAGE == "s3":
        # One PUT to the same key replaces the object whole (file_overwrite is off, so
        # save() would pick another name).
        _s3_storage()._save(name, ContentFile(data))
    else:
        default_storage.replace(name, ContentFile(data))  # type: ignore[attr-defined]


def storage_describe() -> str:
    if settings.FOLIO_STORAGE == "s3":
        endpoint = _s3_storage().endpoint_url or "AWS S3"
        return f"bucket {_s3_storage().bucket_name!r} at {endpoint}"
    return f"folder {settings.MEDIA_ROOT}"


def storage_probe() -> None:
    """Raise ``StorageUnavailable`` unless files can be stored now."""
    if settings.FOLIO_STORAGE == "s3":
        _bucket_probe()
    else:
        _folder_probe(Path(settings.MEDIA_ROOT))


def _bucket_probe() -> None:
    from botocore.exceptions import BotoCoreError, ClientError

    client = _s3_storage().connection.meta.client
    try:
        client.head_bucket(Bucket=_s3_storage().bucket_name)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("404", "NoSuchBucket", "NotFound"):
            raise StorageUnavailable(
                f"the bucket FOLIO_S3_BUCKET={_s3_storage().bucket_name!r} does not exist "
                f"(the migrate step creates it when FOLIO_S3_CREATE_BUCKET=1)"
            ) from exc
        if code in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            raise StorageUnavailable(
                f"access to bucket {_s3_storage().bucket_name!r} was refused ({code}): "
                "check FOLIO_S3_ACCESS_KEY and FOLIO_S3_SECRET_KEY"
            ) from exc
        raise StorageUnavailable(f"{storage_describe()}: {exc}") from exc
    except BotoCoreError as exc:
        raise StorageUnavailable(
            f"{storage_describe()} cannot be reached (FOLIO_S3_ENDPOINT_URL): {exc}"
        ) from exc


def _folder_probe(folder: Path) -> None:
    # Writing a file is the only honest test: a volume mounted over the folder may belong to
    # another user, and os.access() answers yes to root whatever the owner.
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError as exc:
        raise StorageUnavailable(
            f"FOLIO_MEDIA_ROOT={str(folder)!r} is not writable by this process "
            f"(uid {os.getuid()}): {exc.strerror}"
        ) from exc


def bucket_ensure() -> bool:
    """Create the bucket when it does not exist; ``True`` if it was created."""
    from botocore.exceptions import ClientError

    client = _s3_storage().connection.meta.client
    try:
        client.head_bucket(Bucket=_s3_storage().bucket_name)
        return False
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise
    region = _s3_storage().region_name
    config = (
        {"CreateBucketConfiguration": {"LocationConstraint": region}}
        if region and region != "us-east-1"
        else {}
    )
    try:
        client.create_bucket(Bucket=_s3_storage().bucket_name, **config)
    except ClientError as exc:
        # Another process made it between our look and our create.
        if exc.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
            raise
        return False
    return True


def tree_delete(prefix: str) -> int:
    """Delete every file under ``prefix`` (a folder of the storage); the count deleted."""
    try:
        folders, files = default_storage.listdir(prefix)
    except FileNotFoundError:
        return 0
    deleted = 0
    for name in files:
        default_storage.delete(f"{prefix}/{name}")
        deleted += 1
    for folder in folders:
        deleted += tree_delete(f"{prefix}/{folder}")
    if settings.FOLIO_STORAGE == "filesystem":
        # A bucket has no folders; a disk keeps empty ones unless they are removed.
        with contextlib.suppress(OSError):
            os.rmdir(default_storage.path(prefix))
    return deleted


def stored_content_lock(sha256: str) -> None:
    """Hold, until the current transaction ends, the lock on the stored file of these bytes.

    Files are shared by content, and each side of a race checks before it acts: a submission
    finds the file already there and reuses it, while a deletion finds no committed document
    that needs it. Without the lock, a deletion between the submission's check and its
    commit takes the file from under the document it is writing. With it, a submission
    holds the lock from its check to its commit and a deletion from its check to its delete,
    so one waits for the other. A PostgreSQL advisory lock; SQLite, the single-machine
    embedded mode, goes without."""
    if not connection.in_atomic_block:
        raise RuntimeError("stored_content_lock is held by a transaction: call it inside one")
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        # 60 bits of the digest: a bigint key, and a collision only makes two files share a lock.
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int(sha256[:15], 16)])
