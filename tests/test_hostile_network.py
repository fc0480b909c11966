"""Servers and names that never answer, or answer too much: a document fetched from a URL or
a webhook delivered to one gives up at its deadline and reads no more than its limit, the
lookup or the answer still unfinished (docs/RELIABILITY.md). The servers are real, on
loopback (``tests/hostile_servers.py``); a name that never resolves is a stub of the system
resolver for that name alone."""

from __future__ import annotations

import threading

import pytest
from django.test import override_settings

from tests import documents, hostile_servers
from webapp.core.fetch import FetchError, fetch_document

pytestmark = pytest.mark.django_db


@override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"], FOLIO_FETCH_TIMEOUT=2)
def test_a_url_whose_server_trickles_its_headers_is_given_up_at_the_fetch_deadline():
    """Each header line comes within the per-read timeout; only a total deadline ends it."""
    with hostile_servers.hostile_server("trickle") as server:
        with pytest.raises(FetchError, match="within 2 s"):
            fetch_document(server.url)

        # It hung up with 30 s of headers still to come (read to their end, the fetch would
        # have got an answer, not this error).
        assert server.hung_up.wait(10)


# A name no server answers for: the system resolver (getaddrinfo) is stubbed for it alone,
# and holds the lookup as a name server that never answers would (the resolver's own
# retries); every other name resolves as usual.
SILENT_NAME = "silent-dns.example"


@pytest.fixture
def silent_name_server(monkeypatch):
    import socket

    real = socket.getaddrinfo
    release = threading.Event()
    lookups = SilentLookups()

    def getaddrinfo(host, *args, **kwargs):
        if host != SILENT_NAME:
            return real(host, *args, **kwargs)
        lookups.asked.append(host)
        release.wait(20)
        lookups.answered.append(host)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield lookups
    release.set()


class SilentLookups:
    """The lookups of SILENT_NAME asked, and those the stub resolver has answered (it
    answers only once the test is over): a caller that returned while its lookup is
    unanswered gave up on it, at its own deadline."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.answered: list[str] = []


@override_settings(FOLIO_FETCH_TIMEOUT=2)
def test_a_url_whose_name_never_resolves_is_given_up_at_the_fetch_deadline(silent_name_server):
    with pytest.raises(FetchError, match="within 2 s"):
        fetch_document(f"http://{SILENT_NAME}/a.pdf")

    assert silent_name_server.asked == [SILENT_NAME]
    assert silent_name_server.answered == []  # given up, the lookup still unanswered


@override_settings(FOLIO_WEBHOOK_TIMEOUT=2)
def test_a_webhook_whose_name_never_resolves_holds_neither_registration_nor_delivery(
    make_user, silent_name_server
):
    from webapp.jobs import services as job_services
    from webapp.webhooks import services as webhook_services
    from webapp.webhooks.models import WebhookDelivery, WebhookEndpoint

    url = f"http://{SILENT_NAME}/hook"
    with pytest.raises(webhook_services.WebhookError, match="did not resolve within 2 s"):
        webhook_services.webhook_url_validate(url=url)
    assert silent_name_server.answered == []

    # An endpoint whose name stopped answering after it was registered.
    owner = make_user()
    job = job_services.job_submit(owner=owner, data=documents.png_page(), filename="p.png")
    job_services.job_cancel(job=job)
    WebhookEndpoint.objects.create(
        owner=owner, url=url, events=["job.cancelled"], secret=webhook_services.secret_generate()
    )
    webhook_services.job_event_record(job_id=job.pk)
    delivery = WebhookDelivery.objects.get(endpoint__url=url)
    outcome = webhook_services.delivery_attempt(delivery_id=delivery.pk)

    assert outcome.startswith("retry"), outcome
    assert silent_name_server.asked == [SILENT_NAME, SILENT_NAME]
    assert silent_name_server.answered == []  # both given up, their lookups unanswered
    assert "within 2 s" in delivery.attempt_log.get().error


@pytest.mark.parametrize("behaviour", ["trickle", "huge"])
@override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"], FOLIO_WEBHOOK_TIMEOUT=2)
def test_a_webhook_receiver_can_neither_hold_a_delivery_nor_make_it_read_a_huge_answer(
    make_user, behaviour
):
    from webapp.jobs import services as job_services
    from webapp.webhooks import services as webhook_services
    from webapp.webhooks.models import WebhookDelivery, WebhookEndpoint

    owner = make_user()
    job = job_services.job_submit(owner=owner, data=documents.png_page(), filename="p.png")
    job_services.job_cancel(job=job)
    with hostile_servers.hostile_server(behaviour) as server:
        endpoint = WebhookEndpoint.objects.create(
            owner=owner,
            url=server.url,
            events=["job.cancelled"],
            secret=webhook_services.secret_generate(),
        )
        webhook_services.job_event_record(job_id=job.pk)
        delivery = WebhookDelivery.objects.get(endpoint=endpoint)
        outcome = webhook_services.delivery_attempt(delivery_id=delivery.pk)
        sent = server.sent
        # The delivery hung up while the server had more to send (30 s of headers, 1.5 GB).
        assert server.hung_up.wait(10), outcome

    attempt = delivery.attempt_log.get()
    if behaviour == "trickle":
        assert outcome.startswith("retry"), outcome
    else:
        assert outcome == "delivered", outcome
        # What the server pushed before the hang-up is the socket buffers, not the answer.
        assert sent < 32 * 1024 * 1024, sent
        assert attempt.response_excerpt == "0" * 500
