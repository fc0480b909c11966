"""A backup's stored files: every object in the storage that the database refers to (each
document's upload, and everything under each job's ``results/<job id>/``: page images,
figure crops, searchable PDFs), copied to a folder with a manifest of their SHA-256, and put
back from it into an empty storage under the same names.

The database itself is dumped and restored with PostgreSQL's own tools; deploy/backup.sh and
deploy/restore.sh run both halves in order (docs/DEPLOY.md, "Backups").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from django.core.files import File
from django.core.files.storage import default_storage

MANIFEST = "manifest.json"


class RestoreError(Exception):
    """The backup cannot be put back as it was; the message says which file and why."""


def _tree(prefix: str) -> Iterator[str]:
    try:
        folders, files = default_storage.listdir(prefix)
    except FileNotFoundError:
        return
    for name in files:
        yield f"{prefix}/{name}"
    for folder in folders:
        yield from _tree(f"{prefix}/{folder}")


def referenced_names() -> Iterator[str]:
    """The storage names the database refers to, each once."""
    from webapp.jobs.models import Document, Job

    seen: set[str] = set()
    for name in Document.objects.exclude(file="").values_list("file", flat=True).iterator():
        if name not in seen and default_storage.exists(name):
            seen.add(name)
            yield name
    for job_id in Job.objects.values_list("pk", flat=True).iterator():
        for name in _tree(f"results/{job_id}"):
            if name not in seen:
                seen.add(name)
                yield name


def _sha256(handle) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: handle.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def export_files(folder: Path) -> int:
    """Copy every referenced object under ``folder`` (by its storage name); the count."""
    manifest: dict[str, str] = {}
    for name in referenced_names():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with default_storage.open(name, "rb") as source, target.open("wb") as copy:
            for chunk in iter(lambda: source.read(1 << 20), b""):
                copy.write(chunk)
        with target.open("rb") as copied:
            manifest[name] = _sha256(copied)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return len(manifest)


def import_files(folder: Path) -> int:
    """Put every file of the backup back under its name; the count. An object already there
    with the same bytes is kept; one with other bytes stops the restore, naming it."""
    manifest_path = folder / MANIFEST
    if not manifest_path.exists():
        raise RestoreError(f"{manifest_path} is missing: not a folder written by backupfiles")
    manifest: dict[str, str] = json.loads(manifest_path.read_text())
    for name, digest in manifest.items():
        path = folder / name
        if not path.is_file():
            raise RestoreError(f"{name}: listed in the manifest but missing from the backup")
        with path.open("rb") as handle:
            if _sha256(handle) != digest:
                raise RestoreError(f"{name}: its bytes differ from the manifest's SHA-256")
        if default_storage.exists(name):
            with default_storage.open(name, "rb") as stored:
                if _sha256(stored) != digest:
                    raise RestoreError(f"{name}: the storage holds other bytes under this name")
            continue
        with path.open("rb") as handle:
            saved = default_storage.save(name, File(handle, name=name))
        if saved != name:
            raise RestoreError(f"{name}: the storage saved it as {saved}")
    return len(manifest)
