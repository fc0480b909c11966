"""Storage writes are whole or absent, and a stored file is reused only once verified.

The full disk is real where this process may mount one: a 1 MiB tmpfs over the media
folder's ``documents/``, filled to the last byte (the test is skipped, saying why, where
mounting is not allowed). Without it, the same refusals are checked with a write that fails
as a full disk fails it, at the storage's boundary.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from tests import documents
from tests.conftest import client_for, wait_for_job
from webapp.core.atomic_storage import TEMPORARY_PREFIX
from webapp.jobs.models import Document, Job, Page


def stored_name(data: bytes) -> str:
    sha = hashlib.sha256(data).hexdigest()
    return f"documents/{sha[:2]}/{sha}.pdf"


def leftovers(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.name.startswith(TEMPORARY_PREFIX)]


def a_pdf() -> bytes:
    # Bytes of its own for each test: content addresses are shared across the run's tests.
    return documents.one_page_pdf() + f"\n% {uuid.uuid4()}\n".encode()


class FailingContent(ContentFile):
    """A file whose second chunk cannot be written: the disk filled up mid-write."""

    def chunks(self, chunk_size=None):
        yield b"%PDF-1.7 first part"
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_write_that_fails_half_way_leaves_no_file_and_no_temporary_one():
    name = f"documents/zz/{uuid.uuid4().hex}.pdf"

    with pytest.raises(OSError, match="No space left"):
        default_storage.save(name, FailingContent(b""))

    assert not default_storage.exists(name)
    assert leftovers(Path(settings.MEDIA_ROOT)) == []


def test_a_saved_file_appears_whole_under_its_name_and_a_taken_name_is_never_overwritten():
    name = f"documents/zz/{uuid.uuid4().hex}.txt"
    first = default_storage.save(name, ContentFile(b"first"))
    second = default_storage.save(name, ContentFile(b"second"))

    assert first == name and second != name
    assert default_storage.open(name).read() == b"first"
    assert default_storage.open(second).read() == b"second"
    default_storage.replace(name, ContentFile(b"replaced"))
    assert default_storage.open(name).read() == b"replaced"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "damage", [b"", b"%PDF-1.7 cut", None], ids=["empty", "truncated", "same size, other bytes"]
)
def test_a_damaged_file_at_the_content_address_is_stored_again_not_reused(api, damage):
    data = a_pdf()
    name = stored_name(data)
    if damage is None:
        damage = bytes(len(data))  # as long as the real bytes, all zeros
    path = Path(default_storage.path(name))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(damage)  # what the storage before atomic writes left at a full disk

    response = api.post("/v1/jobs", {"file": SimpleUploadedFile("again.pdf", data)})

    assert response.status_code == 202, response.content
    assert path.read_bytes() == data


@pytest.mark.django_db
def test_a_full_disk_is_a_507_with_retry_after_and_writes_nothing(api, monkeypatch):
    from webapp.core import atomic_storage

    def no_room(self, directory, content):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic_storage.AtomicFileSystemStorage, "_written", no_room)
    data = a_pdf()

    response = api.post("/v1/jobs", {"file": SimpleUploadedFile("full.pdf", data)})
    reader = api.post("/", {"file": SimpleUploadedFile("full.pdf", data)}, format="multipart")

    for answer in (response, reader):
        assert answer.status_code == 507, answer.content
        assert answer["Retry-After"] == "60"
        body = answer.json()
        assert body["status"] == 50701
        assert "the file storage is full" in body["message"]
        assert "nothing was saved" in body["message"]
    assert not Job.objects.exists() and not Document.objects.exists()
    assert not default_storage.exists(stored_name(data))


@pytest.mark.django_db
def test_a_failing_storage_is_a_503_with_retry_after(api, monkeypatch):
    from webapp.core import atomic_storage

    def broken(self, directory, content):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(atomic_storage.AtomicFileSystemStorage, "_written", broken)

    response = api.post("/v1/jobs", {"file": SimpleUploadedFile("io.pdf", a_pdf())})

    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "60"
    assert response.json()["status"] == 50303
    assert not Job.objects.exists()


# --- a real full disk -------------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted over ``folder``; skips the test where mount is refused."""
    folder.mkdir(parents=True, exist_ok=True)  # files there are hidden while it is mounted
    if not shutil.which("mount") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
        capture_output=True, text=True,
    )  # fmt: skip
    if mounted.returncode:
        pytest.skip(f"mount -t tmpfs is not allowed here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """Write a file until the disk has no byte left; the file."""
    filler = folder / "filler"
    with contextlib.suppress(OSError), filler.open("wb") as out:
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    return filler


@pytest.mark.slow  # a worker reads the page from the disk that was full
@pytest.mark.django_db(transaction=True)
def test_a_full_disk_refuses_cleanly_and_once_freed_the_same_bytes_succeed_for_another_user(
    make_user,
):
    from tests.workers import WorkerProcess, purge_queues

    media = Path(settings.MEDIA_ROOT)
    data = a_pdf()
    alice, bob = client_for(make_user("alice")), client_for(make_user("bob"))
    with small_disk(media / "documents") as disk:
        filler = fill(disk)

        refused = alice.post("/v1/jobs", {"file": SimpleUploadedFile("maxwell.pdf", data)})

        assert refused.status_code == 507, refused.content
        assert refused["Retry-After"] == "60"
        assert not Job.objects.exists() and not Page.objects.exists()
        assert not Document.objects.exists()
        assert not (media / stored_name(data)).exists()  # no 0-byte file to poison it
        assert leftovers(disk) == []

        filler.unlink()  # the operator frees space
        purge_queues("ocr.local", "folio")
        with WorkerProcess(concurrency=1):
            accepted = bob.post("/v1/jobs", {"file": SimpleUploadedFile("same.pdf", data)})
            assert accepted.status_code == 202, accepted.content
            job = wait_for_job(bob, accepted.json()["id"])
        assert job["status"] == "succeeded", job
        assert (media / stored_name(data)).read_bytes() == data
