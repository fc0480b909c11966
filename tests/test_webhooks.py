"""Signed webhooks: endpoints, the outbox, retries with back-off, 410, rotation, redelivery,
verified with the `standardwebhooks` package exactly as a receiver would."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from model.engines.base import PageResult
from tests import documents
from tests.conftest import client_for, wait_for_job
from tests.receiver import Receiver
from tests.test_jobs_api import submit
from tests.workers import WorkerProcess, purge_queues
from webapp.jobs import services as job_services
from webapp.webhooks import services
from webapp.webhooks.models import WebhookDelivery, WebhookEndpoint

LOCAL = override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"])


@pytest.fixture(scope="module")
def webhook_worker(django_db_setup):
    """A worker that may reach the receiver on 127.0.0.1 and retries after about a second."""
    purge_queues("ocr.local", "folio")
    env = {"FOLIO_SSRF_ALLOW": "127.0.0.1", "FOLIO_WEBHOOK_RETRY_SCHEDULE": "1,1,1"}
    with WorkerProcess(concurrency=2, env=env) as process:
        yield process


def register(client, url: str, events: list[str]) -> dict:
    response = client.post("/v1/webhooks", {"url": url, "events": events}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def wait_for_delivery(delivery_filter: dict, *, timeout: float = 60) -> WebhookDelivery:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        delivery = WebhookDelivery.objects.filter(**delivery_filter).first()
        if delivery is not None and delivery.status != WebhookDelivery.Status.PENDING:
            return delivery
        time.sleep(0.2)
    raise TimeoutError(f"no finished delivery for {delivery_filter} after {timeout} s")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@LOCAL
def test_a_receiver_that_fails_twice_gets_the_third_attempt_signed_with_the_job_and_its_link(
    api, webhook_worker
):
    with Receiver(script=[(500, {}), (503, {}), (200, {})]) as receiver:
        endpoint = register(api, receiver.url, ["job.succeeded", "job.failed"])
        job_id = submit(api, documents.png_page(), "page.png").json()["id"]
        wait_for_job(api, job_id)

        requests = receiver.wait_for(3, timeout=90)
        delivery = wait_for_delivery({"job_id": job_id})

    assert delivery.status == WebhookDelivery.Status.SUCCEEDED
    assert len(requests) == 3
    assert len({request.headers["webhook-id"] for request in requests}) == 1
    third = requests[2]
    payload = Webhook(endpoint["secret"]).verify(third.body, third.headers)
    assert payload["type"] == "job.succeeded"
    assert payload["data"]["id"] == job_id
    assert payload["data"]["links"]["result"].endswith(f"/v1/jobs/{job_id}/result")
    log = api.get(f"/v1/webhooks/{endpoint['id']}/deliveries").json()["results"][0]
    assert [attempt["status_code"] for attempt in log["attempt_log"]] == [500, 503, 200]
    assert all(attempt["latency_ms"] >= 0 for attempt in log["attempt_log"])
    job_log = api.get(f"/v1/jobs/{job_id}/deliveries").json()["results"]
    assert [entry["id"] for entry in job_log] == [log["id"]]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@LOCAL
def test_a_job_naming_a_webhook_url_announces_its_end_there(api, webhook_worker):
    with Receiver() as receiver:
        response = submit(api, documents.png_page(), "page.png", webhook_url=receiver.url)
        assert response.status_code == 202, response.content
        job_id = response.json()["id"]
        wait_for_job(api, job_id)
        request = receiver.wait_for(1)[0]

    # Made for the job's URL: its secret was never shown (rotating it would show a new one).
    secret = WebhookEndpoint.objects.get().secret
    payload = Webhook(secret).verify(request.body, request.headers)
    assert (payload["type"], payload["data"]["id"]) == ("job.succeeded", job_id)


def sign_by_hand(secret: str, message_id: str, timestamp: str, body: str) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{message_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


@pytest.mark.django_db
def test_the_signature_is_the_hmac_of_id_timestamp_and_body_as_the_spec_says(make_user):
    endpoint = WebhookEndpoint.objects.create(
        owner=make_user(), url="https://example.com/h", secret=services.secret_generate()
    )
    body = json.dumps({"type": "job.succeeded"})

    headers = services.signature_headers(
        endpoint=endpoint, message_id="msg_1", body=body, now=timezone.now()
    )

    assert headers["webhook-signature"] == sign_by_hand(
        endpoint.secret, "msg_1", headers["webhook-timestamp"], body
    )
    assert endpoint.secret.startswith("whsec_")


@pytest.mark.django_db
def test_during_a_rotation_both_the_old_and_the_new_secret_verify(make_user):
    owner = make_user()
    endpoint = WebhookEndpoint.objects.create(
        owner=owner, url="https://example.com/h", secret=services.secret_generate()
    )
    old_secret = endpoint.secret
    rotated = client_for(owner).post(f"/v1/webhooks/{endpoint.pk}/rotate-secret").json()
    endpoint.refresh_from_db()
    body = '{"type":"job.failed"}'

    headers = services.signature_headers(
        endpoint=endpoint, message_id="msg_2", body=body, now=timezone.now()
    )

    assert rotated["secret"] != old_secret
    Webhook(old_secret).verify(body, headers)
    Webhook(rotated["secret"]).verify(body, headers)
    later = services.signature_headers(
        endpoint=endpoint, message_id="msg_2", body=body, now=timezone.now() + timedelta(days=2)
    )
    assert len(later["webhook-signature"].split()) == 1
    with pytest.raises(WebhookVerificationError):
        Webhook(old_secret).verify(body, {**headers, "webhook-signature": "v1,AAAA"})


@pytest.fixture
def finished_job(make_user):
    """A one-page job finished through the services, with its outbox rows written."""
    job = job_services.job_submit(
        owner=make_user("carol"), data=documents.png_page(), filename="page.png"
    )
    page = job.pages.get()
    claim = job_services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="t:1")
    job_services.page_complete(
        claim=claim, result=PageResult(markdown="# Hi", output_tokens=2), engine_version="t"
    )
    return job


def endpoint_for(owner, url: str, events=("job.succeeded",)) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(
        owner=owner, url=url, events=list(events), secret=services.secret_generate()
    )


@pytest.mark.django_db
@LOCAL
def test_a_410_gone_disables_the_endpoint_and_ends_the_delivery(make_user):
    with Receiver(script=[(410, {})]) as receiver:
        owner = make_user()
        endpoint = endpoint_for(owner, receiver.url)
        job = job_services.job_submit(owner=owner, data=documents.png_page(), filename="p.png")
        job_services.job_cancel(job=job)  # job.cancelled is not subscribed: nothing written
        endpoint.events = ["job.cancelled"]
        endpoint.save()
        services.job_event_record(job_id=job.pk)
        delivery = WebhookDelivery.objects.get(endpoint=endpoint)

        outcome = services.delivery_attempt(delivery_id=delivery.pk)

    delivery.refresh_from_db()
    endpoint.refresh_from_db()
    assert outcome == "gone"
    assert delivery.status == WebhookDelivery.Status.FAILED
    assert endpoint.disabled_at is not None
    assert "410" in endpoint.disabled_reason


@pytest.mark.django_db
@LOCAL
def test_a_429_is_retried_no_sooner_than_its_retry_after(finished_job):
    with Receiver(script=[(429, {"Retry-After": "120"})]) as receiver:
        endpoint = endpoint_for(finished_job.owner, receiver.url)
        services.job_event_record(job_id=finished_job.pk)
        delivery = WebhookDelivery.objects.get(endpoint=endpoint)
        before = timezone.now()

        outcome = services.delivery_attempt(delivery_id=delivery.pk)

    delivery.refresh_from_db()
    assert outcome.startswith("retry")
    assert delivery.status == WebhookDelivery.Status.PENDING
    assert delivery.next_attempt_at >= before + timedelta(seconds=120)
    assert delivery.last_status_code == 429


@pytest.mark.django_db
@LOCAL
@override_settings(FOLIO_WEBHOOK_RETRY_SCHEDULE=[0, 0])
def test_a_delivery_is_dead_after_its_last_retry(finished_job):
    with Receiver(script=[(500, {})]) as receiver:
        endpoint = endpoint_for(finished_job.owner, receiver.url)
        services.job_event_record(job_id=finished_job.pk)
        delivery = WebhookDelivery.objects.get(endpoint=endpoint)

        outcomes = [services.delivery_attempt(delivery_id=delivery.pk) for _ in range(3)]

    delivery.refresh_from_db()
    assert outcomes[-1] == "failed"
    assert (delivery.status, delivery.attempts) == (WebhookDelivery.Status.FAILED, 3)
    assert services.delivery_attempt(delivery_id=delivery.pk) == "skipped"


@pytest.mark.django_db
def test_the_outbox_row_is_written_with_the_job_that_finishes(make_user):
    owner = make_user()
    endpoint = endpoint_for(owner, "https://example.com/h", ["job.succeeded", "page.completed"])
    job = job_services.job_submit(owner=owner, data=documents.png_page(), filename="page.png")
    page = job.pages.get()
    claim = job_services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="t:1")

    job_services.page_complete(
        claim=claim, result=PageResult(markdown="# Hi", output_tokens=2), engine_version="t"
    )

    events = sorted(
        WebhookDelivery.objects.filter(endpoint=endpoint).values_list("event", flat=True)
    )
    assert events == ["job.succeeded", "page.completed"]


@pytest.mark.django_db
def test_a_delivery_whose_message_was_lost_is_sent_again_by_the_sweep(finished_job):
    endpoint = endpoint_for(finished_job.owner, "https://example.com/h")
    services.job_event_record(job_id=finished_job.pk)
    WebhookDelivery.objects.filter(endpoint=endpoint).update(enqueued_at=None)

    assert services.deliveries_dispatch_due() == 1
    assert services.deliveries_dispatch_due() == 0  # it has a message on its way now


@pytest.mark.django_db
def test_a_redelivery_is_a_new_delivery_with_the_same_webhook_id(finished_job):
    endpoint = endpoint_for(finished_job.owner, "https://example.com/h")
    services.job_event_record(job_id=finished_job.pk)
    first = WebhookDelivery.objects.get(endpoint=endpoint)
    # Redelivered once it failed (a pending one is already on its way: a 409).
    WebhookDelivery.objects.filter(pk=first.pk).update(status=WebhookDelivery.Status.FAILED)

    response = client_for(finished_job.owner).post(f"/v1/deliveries/{first.pk}/redeliver")

    assert response.status_code == 202
    assert response.json()["message_id"] == first.message_id
    assert response.json()["id"] != str(first.pk)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://127.0.0.1:9/hook", "internal address"),
        ("http://10.1.2.3/hook", "internal address"),
        ("ftp://example.com/hook", "http or https"),
        ("not a url", "http or https"),
    ],
)
def test_webhook_targets_follow_the_ssrf_rules(api, url, words):
    response = api.post("/v1/webhooks", {"url": url, "events": ["job.succeeded"]}, format="json")

    assert response.status_code == 400
    assert words in response.json()["message"]


@pytest.mark.django_db
def test_a_job_with_a_private_webhook_url_is_refused_and_nothing_is_written(api):
    response = submit(api, documents.png_page(), "page.png", webhook_url="http://192.168.1.5/h")

    assert response.status_code == 400
    assert "internal address" in response.json()["message"]
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_an_unknown_event_is_refused_with_the_list_of_events(api):
    response = api.post(
        "/v1/webhooks", {"url": "https://example.com/h", "events": ["job.exploded"]}, format="json"
    )

    assert response.status_code == 400
    assert "job.succeeded" in response.json()["message"]
