"""What the public port shows besides the API is the operator's to decide: /metrics only to
a bearer token or allowed addresses, the API docs, the browsable API and the admin can be
turned off, and every answer carries the Content-Security-Policy."""

from __future__ import annotations

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
