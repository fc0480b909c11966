"""The chat endpoint is all or nothing: a request whose images the quota cannot all take is
refused whole, with no job created or charged; an oversized body is an OpenAI-shaped 413."""

from __future__ import annotations

import base64

import pytest
from django.test import override_settings

from tests import documents
from tests.conftest import client_for
from webapp.accounts.models import AccountLimits, UsageCounter
from webapp.jobs.models import Job

pytestmark = pytest.mark.django_db


def chat_body(images: int) -> dict:
    url = "data:image/png;base64," + base64.b64encode(documents.png_page()).decode()
    parts = [{"type": "image_url", "image_url": {"url": url}}] * images
    return {
        "model": "local",
        "stream": True,  # answered at once: the test needs no worker
        "messages": [{"role": "user", "content": parts}],
    }


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
