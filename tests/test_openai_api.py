"""The OpenAI-compatible endpoint, driven by the official `openai` package over real HTTP."""

from __future__ import annotations

import base64

import openai
import pytest

from tests import documents
from webapp.accounts.services import api_key_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(live_server, make_user) -> openai.OpenAI:
    key = api_key_create(user=make_user("alice")).secret
    return openai.OpenAI(base_url=f"{live_server.url}/v1", api_key=key, max_retries=0, timeout=120)


def image_message(data: bytes, mime_type: str = "image/png") -> list[dict]:
    url = f"data:{mime_type};base64,{base64.b64encode(data).decode()}"
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Transcribe this page."},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        }
    ]


@pytest.mark.slow
def test_a_chat_completion_reads_the_image_and_counts_tokens(client, worker):
    completion = client.chat.completions.create(
        model="local", messages=image_message(documents.png_page())
    )

    text = completion.choices[0].message.content
    for word in documents.SCAN_WORDS:
        assert word.lower() in text.lower()
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.completion_tokens > 0
    assert (
        completion.usage.total_tokens
        == completion.usage.prompt_tokens + completion.usage.completion_tokens
    )


@pytest.mark.slow
def test_a_streamed_completion_arrives_in_chunks_that_add_up(client, worker):
    stream = client.chat.completions.create(
        model="local",
        messages=image_message(documents.born_digital_pdf(), "application/pdf"),
        stream=True,
    )

    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert chunks[-1].choices[0].finish_reason == "stop"
    for marker in documents.BORN_DIGITAL_PAGE_MARKERS:
        assert marker in text
    assert text.index(documents.BORN_DIGITAL_PAGE_MARKERS[0]) < text.index(
        documents.BORN_DIGITAL_PAGE_MARKERS[2]
    )


@pytest.mark.slow
def test_models_lists_the_engines_that_workers_serve(client, worker):
    assert "local" in [model.id for model in client.models.list()]


def test_an_unknown_model_is_a_404_the_client_understands(client):
    with pytest.raises(openai.NotFoundError) as error:
        client.chat.completions.create(model="gpt-9", messages=image_message(documents.png_page()))

    assert "gpt-9" in error.value.body["message"]


def test_a_message_without_an_image_is_a_400_that_says_so(client):
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(
            model="local", messages=[{"role": "user", "content": "hello"}]
        )

    assert "image_url" in error.value.body["message"]


def test_a_wrong_key_is_a_401(live_server):
    client = openai.OpenAI(base_url=f"{live_server.url}/v1", api_key="folio_wrong", max_retries=0)

    with pytest.raises(openai.AuthenticationError):
        client.models.list()
