"""The chat endpoint is all or nothing: a request whose images the quota cannot all take is
refused whole, with no job created or charged; an oversized body is an OpenAI-shaped 413."""

from __future__ import annotations

import base64
import hashlib
import io

import pytest
from django.core.files.storage import default_storage
from django.test import override_settings
from PIL import Image

from tests import documents
from tests.conftest import client_for
from webapp.accounts import services as account_services
from webapp.accounts.models import AccountLimits, UsageCounter
from webapp.jobs.models import Document, Job

pytestmark = pytest.mark.django_db


def chat_body(images: int) -> dict:
    url = "data:image/png;base64," + base64.b64encode(documents.png_page()).decode()
    parts = [{"type": "image_url", "image_url": {"url": url}}] * images
    return {
        "model": "local",
        "stream": True,  # answered at once: the test needs no worker
        "messages": [{"role": "user", "content": parts}],
    }


@pytest.mark.usefixtures("one_rate_window")
def test_a_request_over_the_rate_limit_creates_and_charges_nothing(make_user):
    alice = make_user("alice")
    AccountLimits.objects.create(user=alice, requests_per_minute=5)
    chat = client_for(alice)

    accepted = chat.post("/v1/chat/completions", chat_body(3), format="json")
    over = chat.post("/v1/chat/completions", chat_body(3), format="json")
    never = chat.post("/v1/chat/completions", chat_body(8), format="json")

    assert accepted.status_code == 200
    assert over.status_code == 429, over.content
    assert never.status_code == 413, never.content
    for refused in (over, never):
        assert refused.json()["error"]["message"]
    assert Job.objects.count() == 3
    assert UsageCounter.objects.get(user=alice, kind="requests_minute").count == 3


def test_an_oversized_chat_body_is_an_openai_shaped_413(api):
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10_000):
        in_memory = api.post("/v1/chat/completions", chat_body(20), format="json")
    with override_settings(FOLIO_MAX_UPLOAD_BYTES=1_000):
        declared = api.post("/v1/chat/completions", chat_body(20), format="json")

    for response in (in_memory, declared):
        assert response.status_code == 413, response.content
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error" and error["message"]
    assert not Job.objects.exists()


def distinct_pages(count: int, *, seed: int) -> list[bytes]:
    """``count`` page images no other test uploads (each its own stored file)."""
    pages = []
    for index in range(count):
        buffer = io.BytesIO()
        Image.new("L", (320, 200), color=(seed * 37 + index * 11) % 256).save(buffer, "PNG")
        pages.append(buffer.getvalue())
    return pages


def chat_of(pages: list[bytes]) -> dict:
    parts = [
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(page).decode()},
        }
        for page in pages
    ]
    return {"model": "local", "stream": True, "messages": [{"role": "user", "content": parts}]}


def stored(page: bytes) -> bool:
    sha256 = hashlib.sha256(page).hexdigest()
    return default_storage.exists(f"documents/{sha256[:2]}/{sha256}.png")


# Two requests wait at once here: the refused one, and the one that overtakes it.
@override_settings(FOLIO_READER_WAITERS=4)
def test_a_chat_request_refused_after_its_check_leaves_no_stored_file_behind(
    make_user, monkeypatch
):
    """The quota had room when the request was checked; another request of the same account
    took it before this one's jobs were written. The refusal takes back the jobs, the charges
    and the files stored for them: content-addressed files that no document names."""
    alice = make_user("alice")
    AccountLimits.objects.create(user=alice, pages_per_day=3)
    chat = client_for(alice)
    refused_pages, other_pages = distinct_pages(2, seed=1), distinct_pages(2, seed=2)
    checked = account_services.page_quota_check

    def checked_then_overtaken(**kwargs):
        checked(**kwargs)
        if kwargs["pages"] < len(refused_pages):
            return  # one image's own check; the request's whole check comes last
        monkeypatch.setattr(account_services, "page_quota_check", checked)
        # Meanwhile: the same account's other request, accepted and written.
        other = chat.post("/v1/chat/completions", chat_of(other_pages), format="json")
        assert other.status_code == 200, other.content

    monkeypatch.setattr(account_services, "page_quota_check", checked_then_overtaken)
    refused = chat.post("/v1/chat/completions", chat_of(refused_pages), format="json")

    assert refused.status_code == 429, refused.content
    assert refused.json()["error"]["message"]
    assert Job.objects.count() == 2 and Document.objects.count() == 2
    assert all(stored(page) for page in other_pages)
    assert not any(stored(page) for page in refused_pages)
