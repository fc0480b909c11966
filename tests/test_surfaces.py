"""What the public port shows besides the API is the operator's to decide: /metrics only to
a bearer token or allowed addresses, the API docs, the browsable API and the admin can be
turned off, and every answer carries the Content-Security-Policy."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-for-the-test"


@pytest.mark.parametrize(
    ("settings", "address", "headers", "status"),
    [
        ({}, "127.0.0.1", {}, 200),
        ({}, "10.1.2.3", {}, 200),  # a scraper on a private network
        ({}, "203.0.113.9", {}, 403),  # anyone else
        ({"FOLIO_METRICS_TOKEN": TOKEN, "FOLIO_METRICS_ALLOW": []}, "127.0.0.1", {}, 403),
        (
            {"FOLIO_METRICS_TOKEN": TOKEN, "FOLIO_METRICS_ALLOW": []},
            "203.0.113.9",
            {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"},
            200,
        ),
        (
            {"FOLIO_METRICS_TOKEN": TOKEN, "FOLIO_METRICS_ALLOW": []},
            "203.0.113.9",
            {"HTTP_AUTHORIZATION": "Bearer wrong"},
            403,
        ),
    ],
    ids=["loopback", "private", "public", "token unsent", "token", "wrong token"],
)
def test_metrics_answer_only_an_allowed_address_or_the_token(settings, address, headers, status):
    with override_settings(**settings):
        response = Client().get("/metrics", REMOTE_ADDR=address, **headers)

    assert response.status_code == status, response.content
    if status == 200:
        assert b"django_http_requests" in response.content


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def scrape(port: int, **headers) -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


@pytest.mark.parametrize(
    ("settings", "headers", "status"),
    [
        ({}, {}, 200),  # loopback is allowed by default
        ({"FOLIO_METRICS_ALLOW": ["10.0.0.0/8"]}, {}, 403),
        ({"FOLIO_METRICS_TOKEN": TOKEN, "FOLIO_METRICS_ALLOW": []}, {}, 403),
        (
            {"FOLIO_METRICS_TOKEN": TOKEN, "FOLIO_METRICS_ALLOW": []},
            {"Authorization": f"Bearer {TOKEN}"},
            200,
        ),
        (
            {"FOLIO_METRICS_TOKEN": TOKEN, "FOLIO_METRICS_ALLOW": []},
            {"Authorization": "Bearer wrong"},
            403,
        ),
    ],
    ids=["loopback", "address not allowed", "token unsent", "token", "wrong token"],
)
def test_a_workers_metrics_port_answers_only_an_allowed_address_or_the_token(
    settings, headers, status
):
    """The exporter a worker starts on FOLIO_METRICS_PORT, in this process: the same control
    as the web's /metrics."""
    from model.engines.vllm.metrics import serve_registry
    from ocr_worker.metrics_port import METRICS_REFUSAL, scraper_allowed

    port = free_port()
    server = serve_registry(port, allowed=scraper_allowed, refusal=METRICS_REFUSAL, address="")
    try:
        with override_settings(**settings):
            code, body = scrape(port, **headers)
    finally:
        server.shutdown()
        server.server_close()

    assert code == status, body
    assert (b"python_info" in body) == (status == 200)
    if status == 403:
        assert b"FOLIO_METRICS_TOKEN" in body


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_started_with_a_metrics_token_serves_its_port_to_the_token_alone():
    from tests.workers import WorkerProcess

    port = free_port()
    env = {
        "FOLIO_METRICS_PORT": str(port),
        "FOLIO_METRICS_TOKEN": TOKEN,
        "FOLIO_METRICS_ALLOW": "",
    }
    # The exporter runs in the worker's own process: an in-process pool.
    with WorkerProcess(queues="ocr.local", pool="threads", env=env):
        refused, _ = scrape(port)
        served, body = scrape(port, Authorization=f"Bearer {TOKEN}")

    assert (refused, served) == (403, 200)
    assert b"folio_engine_pages" in body


def test_a_forged_forwarded_address_does_not_open_the_metrics():
    response = Client().get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="10.0.0.1")

    assert response.status_code == 403


@pytest.mark.parametrize(
    ("setting", "path"),
    [
        ("FOLIO_API_DOCS", "/api/docs/"),
        ("FOLIO_API_DOCS", "/api/schema/"),
        ("FOLIO_API_DOCS", "/v1/openapi.json"),
        ("FOLIO_ADMIN", "/admin/login/"),
    ],
)
def test_an_operator_can_turn_off_the_docs_and_the_admin(setting, path):
    with override_settings(**{setting: False}):
        off = Client().get(path)

    assert off.status_code == 404
    if path == "/api/docs/" or path == "/admin/login/":
        assert Client().get(path).status_code == 200


BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_an_operator_can_turn_off_the_browsable_api(make_user):
    client = Client()
    client.force_login(make_user("alice"))

    browsable = client.get("/v1/jobs", HTTP_ACCEPT=BROWSER_ACCEPT)
    with override_settings(FOLIO_BROWSABLE_API=False):
        plain = client.get("/v1/jobs", HTTP_ACCEPT=BROWSER_ACCEPT)

    assert browsable["Content-Type"].startswith("text/html")
    assert plain.status_code == 200
    assert plain["Content-Type"].startswith("application/json")


@pytest.mark.parametrize(
    "path",
    ["/account/login/", "/api/docs/", "/admin/login/", "/v1/jobs", "/no/such/page", "/healthz"],
)
def test_every_page_carries_the_content_security_policy(make_user, path):
    client = Client()
    client.force_login(make_user("alice"))

    response = client.get(path, HTTP_ACCEPT="text/html")

    assert "script-src 'self'" in response["Content-Security-Policy"], path


def test_the_api_docs_page_runs_no_inline_script():
    page = Client().get("/api/docs/").content.decode()

    assert "<script>" not in page and "<script src=" in page
