"""Schemathesis against the OpenAPI schema: generated requests to every operation, with a
real key, must never meet a 5xx or a response the schema does not describe."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from django.test import override_settings
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

RESPONSE_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

# Django's own WSGI handler, not the web entry point (webapp/wsgi.py): that one refuses to load
# once PyMuPDF's layout model is imported, which the test process does for other tests; it has
# a test of its own in a fresh process (tests/test_engine_registry.py).
schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())


@pytest.fixture
def key(make_user) -> str:
    from webapp.accounts.services import api_key_create

    return api_key_create(user=make_user("schemathesis")).secret


@pytest.mark.slow  # fuzzing every operation: half a minute
@pytest.mark.django_db(transaction=True)  # the WSGI app closes connections per request
@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_no_generated_request_breaks_the_api(case, key):
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {key}"}
    # Generated requests must not hang the run: no job here can finish (no worker), and no
    # generated URL may wait on the network.
    if "X-Timeout" in case.headers:
        case.headers["X-Timeout"] = "1"
    with override_settings(FOLIO_READER_TIMEOUT=1, FOLIO_FETCH_TIMEOUT=2):
        # What the answers may be, not how strict validation is: the schema cannot say that a
        # PDF must be readable (so refusing a schema-valid body can be right), and lenient
        # parsing of a loose value is not a defect.
        case.call_and_validate(checks=RESPONSE_CHECKS)
