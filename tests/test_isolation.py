"""Two users and an anonymous client against every endpoint: each user sees, changes and
deletes only their own jobs, keys, webhook endpoints and deliveries; another user's id is a
404 (indistinguishable from none), and no key at all or the owner's own revoked key is a 401."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from rest_framework.test import APIClient

from tests import documents
from tests.conftest import client_for
from tests.test_lifecycle import finish_page
from webapp.accounts.models import AccountLimits, ApiKey
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


# --- anonymous clients ------------------------------------------------------------------------
# Requests without a key share one inactive account, but each client (its address) has
# quotas of its own, and only accepted work counts against them.


def ANON_LIMITS(test):  # noqa: N802 - reads as the settings decorator it wraps
    """Two anonymous requests a minute, counted inside one clock minute (``one_rate_window``)."""
    limits = override_settings(
        FOLIO_READER_ANON_REQUESTS_PER_MINUTE=2, FOLIO_READER_ANON_PAGES_PER_DAY=100
    )
    return pytest.mark.usefixtures("one_rate_window")(limits(test))


def anonymous_read(data: bytes, *, address: str, **headers):
    upload = SimpleUploadedFile("page.png", data)
    return APIClient().post(
        "/",
        {"file": upload},
        format="multipart",
        HTTP_PREFER="respond-async",
        HTTP_ACCEPT="application/json",
        REMOTE_ADDR=address,
        **headers,
    )


@ANON_LIMITS
def test_a_spoofed_x_forwarded_for_does_not_escape_the_anonymous_limit():
    answers = [
        anonymous_read(documents.png_page(), address="203.0.113.7", HTTP_X_FORWARDED_FOR=spoof)
        for spoof in ("198.51.100.1", "198.51.100.2", "198.51.100.3")
    ]

    assert [answer.status_code for answer in answers] == [202, 202, 429]
    assert answers[2].json()["status"] == 42903
    assert int(answers[2]["Retry-After"]) > 0


@ANON_LIMITS
@override_settings(FOLIO_TRUSTED_PROXIES=1)
def test_behind_a_trusted_proxy_the_address_it_saw_is_the_client():
    # The proxy (203.0.113.1) appends the address it was connected from; what the client
    # wrote before it is ignored.
    def via_proxy(client: str, spoof: str):
        forwarded = f"{spoof}, {client}"
        return anonymous_read(
            documents.png_page(), address="203.0.113.1", HTTP_X_FORWARDED_FOR=forwarded
        )

    first = [via_proxy("198.51.100.7", spoof).status_code for spoof in ("1.1.1.1", "2.2.2.2")]
    third = via_proxy("198.51.100.7", "3.3.3.3")
    other_client = via_proxy("198.51.100.8", "1.1.1.1")

    assert first == [202, 202]
    assert third.status_code == 429
    assert other_client.status_code == 202


@ANON_LIMITS
def test_one_anonymous_client_at_its_limit_leaves_the_others_theirs():
    for _ in range(2):
        assert anonymous_read(documents.png_page(), address="198.51.100.20").status_code == 202
    assert anonymous_read(documents.png_page(), address="198.51.100.20").status_code == 429

    assert anonymous_read(documents.png_page(), address="198.51.100.21").status_code == 202
    # An IPv6 client is its /64: another address in it is the same client.
    for _ in range(2):
        assert anonymous_read(documents.png_page(), address="2001:db8:1:2::1").status_code == 202
    assert anonymous_read(documents.png_page(), address="2001:db8:1:2::ffff").status_code == 429


@ANON_LIMITS
def test_refused_documents_do_not_spend_an_anonymous_clients_quota():
    refused = [
        anonymous_read(documents.corrupt_pdf(), address="198.51.100.30").status_code
        for _ in range(5)
    ]
    accepted = [
        anonymous_read(documents.png_page(), address="198.51.100.30").status_code for _ in range(3)
    ]

    assert refused == [422] * 5
    assert accepted == [202, 202, 429]
    assert Job.objects.count() == 2


@override_settings(FOLIO_READER_ANON_REQUESTS_PER_MINUTE=0, FOLIO_READER_ANON_PAGES_PER_DAY=3)
@pytest.mark.usefixtures("one_rate_window")
def test_the_anonymous_daily_page_quota_is_per_client():
    three_pages = documents.born_digital_pdf()

    first = anonymous_read(three_pages, address="198.51.100.40")
    again = anonymous_read(three_pages, address="198.51.100.40")
    other = anonymous_read(three_pages, address="198.51.100.41")

    assert (first.status_code, again.status_code, other.status_code) == (202, 429, 202)
    assert "daily page quota" in again.json()["message"]


def test_refused_documents_do_not_spend_an_accounts_rate_limit(make_user):
    alice = make_user("alice")
    AccountLimits.objects.create(user=alice, requests_per_minute=2)
    client = client_for(alice)

    def submit(data: bytes):
        upload = SimpleUploadedFile("p.png", data)
        return client.post("/v1/jobs", {"file": upload}, format="multipart").status_code

    refused = [submit(documents.corrupt_pdf()) for _ in range(4)]
    accepted = [submit(documents.png_page()) for _ in range(3)]

    assert refused == [422] * 4
    assert accepted == [202, 202, 429]


# --- the result cache -----------------------------------------------------------------------
# A cache hit answers at once with `method: cache`: by default it comes only from the same
# user's earlier readings, or it would tell anyone that someone converted the same file.


def test_another_users_cached_reading_does_not_answer_and_sharing_is_a_server_setting(
    make_user,
):
    from tests.test_reader_api import cache_page_one

    make_user("alice")
    bob = client_for(make_user("bob"))
    data = documents.png_page()
    cache_page_one(data, markdown="alice's reading", owner="alice")

    def bob_reads():
        upload = SimpleUploadedFile("p.png", data)
        job_id = bob.post("/v1/jobs", {"file": upload}, format="multipart").json()["id"]
        return Job.objects.get(pk=job_id).pages.get().method

    assert bob_reads() != "cache"
    with override_settings(FOLIO_RESULT_CACHE_SHARED=True):
        assert bob_reads() == "cache"


def test_anonymous_clients_are_not_answered_from_each_others_readings(make_user):
    from tests.test_reader_api import cache_page_one
    from webapp.accounts.services import ANONYMOUS_USERNAME, anonymous_owner

    anonymous_owner()
    data = documents.png_page()
    cache_page_one(data, markdown="another client's reading", owner=ANONYMOUS_USERNAME)

    response = anonymous_read(data, address="198.51.100.50")

    assert response.status_code == 202, response.content
    assert Job.objects.get().pages.get().method != "cache"


def test_a_reader_link_followed_with_only_a_session_cookie_runs_anonymously(make_user):
    """Any site can make a logged-in browser follow GET /<url>: the cookie must not make it
    the user's request, spending the user's quota."""
    from django.test import Client

    from tests.document_server import document_server
    from webapp.accounts.models import UsageCounter
    from webapp.accounts.services import ANONYMOUS_USERNAME

    alice = make_user("alice")
    browser = Client()
    browser.force_login(alice)
    with document_server() as base_url, override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"]):
        response = browser.get(
            f"/{base_url}/report.pdf", HTTP_PREFER="respond-async", HTTP_ACCEPT="application/json"
        )

    assert response.status_code == 202, response.content
    assert Job.objects.get().owner.username == ANONYMOUS_USERNAME
    assert not UsageCounter.objects.filter(user=alice).exists()
