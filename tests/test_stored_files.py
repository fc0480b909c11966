"""Stored files are shared by content: a deletion of unused files never takes one from under a
submission that has found it stored and is writing the document that needs it. Two real
PostgreSQL connections (one per thread) race for the same file."""

from __future__ import annotations

import hashlib
import threading

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, transaction

from tests import documents
from webapp.core.storage import stored_content_lock
from webapp.jobs.models import Document
from webapp.jobs.services.job_lifecycle import stored_files_delete_unused

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_file_a_submission_is_taking_outlives_a_deletion_that_found_it_unused(make_user):
    if connection.vendor != "postgresql":
        pytest.skip("the lock is PostgreSQL's; the embedded SQLite mode goes without")
    alice = make_user("alice")
    data = documents.png_page()
    sha256 = hashlib.sha256(data).hexdigest()
    name = default_storage.save(f"documents/{sha256[:2]}/{sha256}.png", ContentFile(data))
    holding, commit = threading.Event(), threading.Event()

    def submission() -> None:
        # What job_create does once it has found the file stored: the document that needs it
        # is written, and commits a moment later.
        try:
            with transaction.atomic():
                stored_content_lock(sha256)
                Document.objects.create(
                    owner=alice,
                    sha256=sha256,
                    file=name,
                    mime_type="image/png",
                    page_count=1,
                    size=len(data),
                )
                holding.set()
                commit.wait(10)
        finally:
            connection.close()

    deleted: list[int] = []

    def deletion() -> None:
        try:
            deleted.append(stored_files_delete_unused(names=[name]))
        finally:
            connection.close()

    submitter = threading.Thread(target=submission)
    submitter.start()
    assert holding.wait(10)
    deleter = threading.Thread(target=deletion)
    deleter.start()
    deleter.join(1.0)
    waited = deleter.is_alive()  # for the submission's commit, not deciding without it
    commit.set()
    submitter.join(10)
    deleter.join(10)

    assert waited
    assert deleted == [0]
    assert default_storage.exists(name)


def test_a_file_no_document_needs_is_deleted(make_user):
    data = documents.png_page()
    sha256 = hashlib.sha256(data).hexdigest()
    name = default_storage.save(f"documents/{sha256[:2]}/{sha256}.png", ContentFile(data))

    assert stored_files_delete_unused(names=[name]) == 1
    assert not default_storage.exists(name)


def test_the_lock_belongs_to_a_transaction():
    with pytest.raises(RuntimeError, match="inside one"):
        stored_content_lock("ab" * 32)
