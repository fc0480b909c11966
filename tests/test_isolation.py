"""Two users and an anonymous client against every endpoint: each user sees, changes and
deletes only their own jobs, keys, webhook endpoints and deliveries; another user's id is a
404 (indistinguishable from none), and no key at all or the owner's own revoked key is a 401."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests import documents
from tests.conftest import client_for
from tests.test_lifecycle import finish_page
from webapp.accounts.models import ApiKey
from webapp.accounts.services import api_key_create, api_key_revoke
from webapp.jobs import services as job_services
from webapp.jobs.models import Job
from webapp.webhooks import services as webhook_services
from webapp.webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_things(make_user):
    """Alice's finished job with a delivery, her endpoint and her key."""
    alice = make_user("alice")
    job = job_services.job_submit(owner=alice, data=documents.png_page(), filename="p.png")
    endpoint = WebhookEndpoint.objects.create(
        owner=alice,
        url="https://example.com/h",
        events=["job.succeeded"],
        secret=webhook_services.secret_generate(),
    )
    finish_page(job.pages.get())
    return {
        "job": job.pk,
        "endpoint": endpoint.pk,
        "delivery": WebhookDelivery.objects.get(endpoint=endpoint).pk,
        "key": ApiKey.objects.create(user=alice, prefix="folio_x", digest="d" * 64).pk,
        "user": alice,
    }


OWNED = [
    ("get", "/v1/jobs/{job}"),
    ("get", "/v1/jobs/{job}/result"),
    ("get", "/v1/jobs/{job}/deliveries"),
    ("post", "/v1/jobs/{job}/cancel"),
    ("delete", "/v1/jobs/{job}"),
    ("get", "/v1/webhooks/{endpoint}"),
    ("patch", "/v1/webhooks/{endpoint}"),
    ("delete", "/v1/webhooks/{endpoint}"),
    ("post", "/v1/webhooks/{endpoint}/rotate-secret"),
    ("get", "/v1/webhooks/{endpoint}/deliveries"),
    ("get", "/v1/deliveries/{delivery}"),
    ("post", "/v1/deliveries/{delivery}/redeliver"),
    ("delete", "/v1/keys/{key}"),
]
LISTS = ["/v1/jobs", "/v1/keys", "/v1/webhooks"]


@pytest.mark.parametrize(("method", "path"), OWNED)
def test_another_users_object_is_not_found_and_left_alone(alice_things, make_user, method, path):
    bob = client_for(make_user("bob"))
    secret_before = WebhookEndpoint.objects.get(pk=alice_things["endpoint"]).secret

    response = getattr(bob, method)(path.format(**alice_things), {}, format="json")

    assert response.status_code == 404, response.content
    assert response.json()["status"] == 40401
    assert Job.objects.get(pk=alice_things["job"]).status == "succeeded"
    assert WebhookEndpoint.objects.get(pk=alice_things["endpoint"]).secret == secret_before
    assert ApiKey.objects.get(pk=alice_things["key"]).revoked_at is None
    assert WebhookDelivery.objects.count() == 1


@pytest.mark.parametrize(("method", "path"), [*OWNED, *(("get", path) for path in LISTS)])
def test_an_anonymous_client_gets_a_401_everywhere(alice_things, method, path):
    response = getattr(APIClient(), method)(path.format(**alice_things), {}, format="json")

    assert response.status_code == 401
    assert response.json()["status"] == 40103


@pytest.mark.parametrize(("method", "path"), [*OWNED, *(("get", path) for path in LISTS)])
def test_the_owners_own_key_once_revoked_gets_a_401_everywhere_and_changes_nothing(
    alice_things, method, path
):
    issued = api_key_create(user=alice_things["user"])
    api_key_revoke(api_key=issued.api_key)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")

    response = getattr(client, method)(path.format(**alice_things), {}, format="json")

    assert response.status_code == 401, response.content
    assert response.json()["status"] == 40103
    assert Job.objects.get(pk=alice_things["job"]).status == "succeeded"
    assert ApiKey.objects.get(pk=alice_things["key"]).revoked_at is None
    assert WebhookEndpoint.objects.filter(pk=alice_things["endpoint"]).exists()


@pytest.mark.parametrize("path", LISTS)
def test_another_users_lists_are_empty_of_alices_things(alice_things, make_user, path):
    bob = client_for(make_user("bob"))

    results = bob.get(path).json()["results"]

    ids = {str(value) for value in alice_things.values()}
    # bob's own list holds only the key he is using
    assert not ids & {str(item["id"]) for item in results}


def test_the_owner_reaches_every_one_of_her_objects(alice_things):
    alice = client_for(alice_things["user"])

    for method, path in OWNED:
        if method == "get":
            response = alice.get(path.format(**alice_things))
            assert response.status_code == 200, (path, response.content)
