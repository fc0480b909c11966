"""Webhook secrets are shown when made (creation, rotation) and never again; redelivery is
throttled and never stacks copies of one message; an endpoint can be made to prove at
registration that it is the registrant's (a signed challenge it must echo)."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from django.test import override_settings
from standardwebhooks.webhooks import Webhook

from tests.conftest import client_for
from tests.receiver import Receiver
from tests.test_isolation import alice_things  # noqa: F401  (a fixture)
from webapp.webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db

LOCAL = override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"])


@LOCAL
def test_a_secret_is_shown_at_creation_and_rotation_only(api):
    with Receiver() as receiver:
        created = api.post(
            "/v1/webhooks", {"url": receiver.url, "events": ["job.succeeded"]}, format="json"
        )
    endpoint_id = created.json()["id"]
    rotated = api.post(f"/v1/webhooks/{endpoint_id}/rotate-secret")

    assert created.status_code == 201 and created.json()["secret"].startswith("whsec_")
    assert rotated.json()["secret"] != created.json()["secret"]
    assert "secret" not in api.get(f"/v1/webhooks/{endpoint_id}").json()
    assert all("secret" not in item for item in api.get("/v1/webhooks").json()["results"])
    patched = api.patch(f"/v1/webhooks/{endpoint_id}", {"description": "x"}, format="json")
    assert "secret" not in patched.json()


@override_settings(FOLIO_WEBHOOK_REDELIVER_RATE="1/min")
def test_redelivery_never_stacks_copies_and_is_throttled(alice_things):  # noqa: F811
    alice = client_for(alice_things["user"])
    # Counted in the shared cache, which outlives the test database (ids come back).
    cache.delete(f"webhook-redeliveries:{alice_things['user'].pk}")
    WebhookDelivery.objects.filter(pk=alice_things["delivery"]).update(status="succeeded")
    path = f"/v1/deliveries/{alice_things['delivery']}/redeliver"

    first = alice.post(path)
    again = alice.post(path)  # the copy is still waiting to be sent
    WebhookDelivery.objects.filter(status="pending").update(status="succeeded")
    third = alice.post(path)  # over the rate

    assert first.status_code == 202, first.content
    assert again.status_code == 409 and "already on its way" in again.json()["message"]
    assert third.status_code == 429
    assert WebhookDelivery.objects.count() == 2


@LOCAL
def test_a_verified_registration_needs_the_challenge_echoed(api):
    with Receiver(echo_challenge=True) as echoing, Receiver() as accepting_anything:
        passed = api.post(
            "/v1/webhooks",
            {"url": echoing.url, "events": ["job.succeeded"], "verify": True},
            format="json",
        )
        refused = api.post(
            "/v1/webhooks",
            {"url": accepting_anything.url, "events": ["job.succeeded"], "verify": True},
            format="json",
        )
        sent = echoing.received[0]

    assert passed.status_code == 201, passed.content
    event = Webhook(passed.json()["secret"]).verify(sent.body, sent.headers)
    assert event["type"] == "webhook.verification" and event["data"]["challenge"]
    assert json.loads(sent.body)["data"]["challenge"] == event["data"]["challenge"]
    assert refused.status_code == 400
    assert "challenge" in refused.json()["message"]
    assert WebhookEndpoint.objects.count() == 1
