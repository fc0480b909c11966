"""deploy/backup.sh and deploy/restore.sh on one host, with no network namespaces (the
multi-host test runs them too, over S3, but skips where namespaces cannot be made): a job a
real worker transcribed is backed up from the test database and its storage folder with
pg_dump, restored with pg_restore into a new, empty PostgreSQL database and an empty folder,
migrated as a release would be, and a fresh Django process on the restored pair serves the
job's result to the same API key. Then what a restore refuses, naming the file: a folder that
is no backup, a backup file whose bytes are not the manifest's, and a storage that already
holds other bytes under a name."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from tests import documents
from tests.conftest import client_for, wait_for_job
from webapp.accounts.services import api_key_create
from webapp.jobs.models import Document

REPOSITORY = Path(__file__).resolve().parents[1]

# The restored deployment's web, as a request reaches it: Django's own handler in a process
# that has only the restored database and folder.
SERVE_RESULT = """
import sys
import django
django.setup()
from django.test import Client
job_id, secret = sys.argv[1:3]
response = Client().get(
    f"/v1/jobs/{job_id}/result", HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_HOST="localhost"
)
print(response.status_code)
sys.stdout.write(response.content.decode())
"""


def database_url(name: str) -> str:
    """The URL of database ``name`` on the test database's server, as DATABASE_URL takes it."""
    conf = connection.settings_dict
    user = quote(conf["USER"] or "", safe="")
    password = f":{quote(conf['PASSWORD'], safe='')}" if conf["PASSWORD"] else ""
    host, port = conf["HOST"] or "localhost", conf["PORT"] or 5432
    return f"postgres://{user}{password}@{host}:{port}/{name}"


@contextlib.contextmanager
def empty_database() -> Iterator[str]:
    """A new database with nothing in it on the same server, dropped afterwards."""
    name = f"{connection.settings_dict['NAME']}_restored_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(name)
    finally:
        with psycopg.connect(database_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def deployment_env(*, database: str, media: Path) -> dict[str, str]:
    """What a Folio process of that deployment is given: its database and its storage folder
    (the interpreter running the tests first on PATH, as `python3` for the scripts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_S3_")}
    env |= {
        "DATABASE_URL": database,
        "FOLIO_STORAGE": "filesystem",
        "FOLIO_MEDIA_ROOT": str(media),
        "FOLIO_ALLOWED_HOSTS": "localhost",
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    }
    return env


def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=REPOSITORY, env=env, capture_output=True, text=True, timeout=300
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_backup_restored_into_an_empty_database_and_storage_serves_the_job_result(
    tmp_path, make_user, worker
):
    if connection.vendor != "postgresql":
        pytest.skip("deploy/backup.sh dumps PostgreSQL; the embedded SQLite mode has none")
    issued = api_key_create(user=make_user("alice"))
    client = client_for(issued.api_key.user)
    upload = SimpleUploadedFile("report.pdf", documents.born_digital_pdf())
    response = client.post("/v1/jobs", {"file": upload}, format="multipart")
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    assert wait_for_job(client, job_id)["status"] == "succeeded"
    result = client.get(f"/v1/jobs/{job_id}/result").content.decode()
    assert result.strip()

    source_media = Path(settings.MEDIA_ROOT)
    source = deployment_env(database=database_url(connection.settings_dict["NAME"]),
                            media=source_media)  # fmt: skip
    backup = tmp_path / "backup"
    made = run(["sh", "deploy/backup.sh", str(backup)], source)
    assert made.returncode == 0, made.stderr[-3000:]
    manifest = json.loads((backup / "files" / "manifest.json").read_text())
    assert Document.objects.get(jobs__pk=job_id).file.name in manifest  # the upload

    with empty_database() as restored_database:
        restored_media = tmp_path / "restored-media"
        restored = deployment_env(database=restored_database, media=restored_media)
        put_back = run(["sh", "deploy/restore.sh", str(backup)], restored)
        assert put_back.returncode == 0, put_back.stderr[-3000:]
        migrated = run([sys.executable, "manage.py", "migrate", "--no-input"], restored)
        assert migrated.returncode == 0, migrated.stderr[-3000:]

        served = run([sys.executable, "-c", SERVE_RESULT, job_id, issued.secret], restored)
        assert served.returncode == 0, served.stderr[-3000:]
        status, body = served.stdout.split("\n", 1)
        assert (status, body) == ("200", result)
        for name, digest in manifest.items():  # every file back under its name, same bytes
            assert sha256(restored_media / name) == digest == sha256(source_media / name), name


def test_a_folder_that_is_no_backup_is_refused_before_anything_is_restored(tmp_path):
    env = deployment_env(database=database_url("never-reached"), media=tmp_path / "media")
    refused = run(["sh", "deploy/restore.sh", str(tmp_path)], env)
    assert refused.returncode == 66
    assert f"{tmp_path}/folio.dump is missing: not a backup" in refused.stderr
    assert not (tmp_path / "media").exists()


@pytest.fixture
def storage(tmp_path, monkeypatch) -> FileSystemStorage:
    """An empty storage folder for the restore to fill."""
    store = FileSystemStorage(location=tmp_path / "storage")
    monkeypatch.setattr("webapp.jobs.backup.default_storage", store)
    return store


def a_backup(folder: Path, files: dict[str, bytes]) -> Path:
    """A files backup as backupfiles writes it: each file under its name, and the manifest."""
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    manifest = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_backup_file_whose_bytes_differ_from_its_manifest_is_refused_by_name(tmp_path, storage):
    backup = a_backup(tmp_path / "files", {"documents/ab/upload.pdf": b"%PDF-1.7 the upload"})
    (backup / "documents/ab/upload.pdf").write_bytes(b"%PDF-1.7 damaged in the backup")
    with pytest.raises(CommandError, match="documents/ab/upload.pdf: its bytes differ"):
        call_command("restorefiles", str(backup))
    assert not storage.exists("documents/ab/upload.pdf")


def test_a_storage_holding_other_bytes_under_a_name_stops_the_restore_naming_it(tmp_path, storage):
    files = {"documents/ab/upload.pdf": b"%PDF-1.7 the upload", "results/j/figures/f.png": b"png"}
    backup = a_backup(tmp_path / "files", files)
    storage.save("documents/ab/upload.pdf", SimpleUploadedFile("upload.pdf", b"another file"))
    with pytest.raises(CommandError, match="documents/ab/upload.pdf: the storage holds other"):
        call_command("restorefiles", str(backup))
    with storage.open("documents/ab/upload.pdf") as kept:
        assert kept.read() == b"another file"  # never overwritten


def test_a_restore_run_again_keeps_what_it_put_back_and_adds_nothing(tmp_path, storage):
    files = {"documents/ab/upload.pdf": b"%PDF-1.7 the upload", "results/j/figures/f.png": b"png"}
    backup = a_backup(tmp_path / "files", files)
    call_command("restorefiles", str(backup))
    call_command("restorefiles", str(backup))
    stored = sorted(p.relative_to(storage.location).as_posix()
                    for p in Path(storage.location).rglob("*") if p.is_file())  # fmt: skip
    assert stored == sorted(files)
    for name, data in files.items():
        with storage.open(name) as handle:
            assert handle.read() == data
