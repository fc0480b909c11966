"""Issue 26's findings outside the converters: deeply nested JSON is a 400 on every JSON
endpoint (anonymous too), users' error texts say what happened in words, ``var/`` is this
user's alone under ``make run``, and a large submission answers before all its messages are
out (the rest follow in batches, all of them)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from rest_framework.test import APIClient

from model.engines import EngineError
from tests import hostile

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("path", ["/", "/v1/webhooks", "/v1/keys", "/v1/chat/completions"])
@pytest.mark.parametrize("who", ["a key", "anonymous"])
def test_deeply_nested_json_is_a_400_saying_so(api, path, who):
    client = api if who == "a key" else APIClient()
    body = '{"url": ' + DEEP + "}"

    response = client.post(
        path, body, content_type="application/json", HTTP_ACCEPT="application/json"
    )

    if who == "anonymous" and path != "/":
        assert response.status_code in (401, 403), response.content  # asked for a key first
        return
    assert response.status_code == 400, response.content
    assert "levels deep" in response.content.decode()


def test_json_nested_a_little_is_still_read():
    from webapp.core.parsers import MAX_JSON_DEPTH, depth_over

    assert not depth_over({"messages": [{"content": [{"type": "text"}]}]}, MAX_JSON_DEPTH)
    assert depth_over(eval("[" * 40 + "]" * 40), MAX_JSON_DEPTH)


def test_an_engine_error_from_the_soft_time_limit_reads_as_the_time_limit():
    from ocr_worker.tasks import _past_soft_limit, _timed_out

    try:
        try:
            raise SoftTimeLimitExceeded()
        except Exception as exc:  # an engine that wraps every failure, as the local one does
            raise EngineError(f"page 1 could not be transcribed ({exc!r})") from exc
    except EngineError as wrapped:
        assert _timed_out(wrapped)
    assert not _timed_out(EngineError("the page is blank"))
    assert "SoftTimeLimitExceeded" not in _past_soft_limit()


def test_a_document_its_reader_cannot_read_is_told_in_words():
    from model.formats import structure, types
    from tests import office

    # A Word file whose main part is not Word's: the reader fails deep inside.
    broken = office.rezip(
        office.corpus("docx/sources/lorem_ipsum.docx"),
        replace={"word/document.xml": b'<?xml version="1.0"?><w:x xmlns:w="urn:other"/>'},
    )
    with pytest.raises(structure.ConversionError) as refused:
        structure.document_units(broken, types.DOCX)

    message = str(refused.value)
    assert message.startswith("the DOCX file cannot be read")
    assert "<" not in message and "object" not in message and "Error" not in message


def test_var_is_closed_to_other_users(tmp_path, monkeypatch):
    from webapp.embedded import private_var_dir

    var = tmp_path / "var"
    (var / "media").mkdir(parents=True)
    var.chmod(0o755)
    (var / "media").chmod(0o755)
    monkeypatch.delenv("FOLIO_MEDIA_ROOT", raising=False)
    before = os.umask(0o022)
    try:
        private_var_dir(var)
        made = var / "folio.sqlite3"
        made.write_bytes(b"")
    finally:
        os.umask(before)

    assert stat.S_IMODE(var.stat().st_mode) == 0o700
    assert stat.S_IMODE((var / "media").stat().st_mode) == 0o700
    assert stat.S_IMODE(made.stat().st_mode) == 0o600


def test_under_make_run_an_upload_is_stored_for_this_user_only(tmp_path):
    """The embedded settings (no DATABASE_URL): Django would chmod uploads to 0644."""
    code = (
        "import django; django.setup();"
        "from django.core.files.base import ContentFile;"
        "from django.core.files.storage import default_storage;"
        "print(default_storage.path(default_storage.save('documents/ab/x.pdf',"
        " ContentFile(b'%PDF'))))"
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "FOLIO_MEDIA_ROOT", "FOLIO_STORAGE")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="webapp.settings",
        FOLIO_VAR_DIR=str(tmp_path / "var"),
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    stored = Path(done.stdout.strip().splitlines()[-1])

    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700


@pytest.mark.django_db(transaction=True)
def test_a_long_submission_sends_its_pages_in_batches_all_of_them(make_user, monkeypatch):
    """The first pages in the request, the rest from a thread in batches: here 10 and then
    batches of 50 of a 230-page PDF, the service's 100 and 500 scaled down (what it saves
    at 2,000 pages is bench/submission.py's)."""
    import time

    from tests.workers import purge_queues
    from webapp.jobs import queueing
    from webapp.jobs.models import Page
    from webapp.jobs.services import job_submit, sending, submission

    monkeypatch.setattr(submission, "_engine_served_check", lambda engine: None)
    sends: list[int] = []
    real = queueing.pages_enqueue

    def counting(*, engine, pages, plain=False):
        pages = list(pages)
        sends.append(len(pages))
        return real(engine=engine, pages=pages, plain=plain)

    monkeypatch.setattr(sending, "pages_enqueue", counting)
    monkeypatch.setattr(sending, "SEND_IN_REQUEST", 10)
    monkeypatch.setattr(sending, "SEND_BATCH", 50)
    purge_queues("ocr.local")

    job = job_submit(owner=make_user(), data=hostile.many_pages_pdf(230), filename="b.pdf")
    deadline = time.monotonic() + 60
    while Page.objects.filter(job=job, sent_at__isnull=True).exists():
        assert time.monotonic() < deadline, "pages still unsent"
        time.sleep(0.2)

    assert sends == [10, 50, 50, 50, 50, 20]  # in the request; the rest from a thread
    purge_queues("ocr.local")
