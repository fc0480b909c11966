"""The probes say what is true now: ``/metrics`` answers without the database, the web's
readiness (``/readyz/web``) needs the database and the broker, and ``/readyz`` never reports
a broker it cannot reach.

A lost database or broker is made real at the boundary: the connection settings point at a
port where nothing listens (or, for SQLite, a file that cannot be opened), and the next
query or command fails as it does when the server is down.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from ocr_worker.celery_app import app
from webapp.core.workers import heartbeat_write, workers_cache_clear


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def database_unreachable() -> Iterator[None]:
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent-folder/folio.sqlite3"
    else:
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(closed_port()))
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


@contextlib.contextmanager
def broker_unreachable() -> Iterator[None]:
    saved = app.conf.broker_url
    app.conf.broker_url = f"redis://127.0.0.1:{closed_port()}/0"
    workers_cache_clear()
    try:
        yield
    finally:
        app.conf.broker_url = saved
        workers_cache_clear()


@pytest.fixture
def a_worker_seen(request):
    """A heartbeat as a worker of the local engine writes it (no worker process: these tests
    are about the probes, not the worker)."""
    from tests.workers import forget_heartbeats

    node = f"probe-{request.node.name[:40]}@test-host"
    heartbeat_write(node=node, queues=["ocr.local"], capacity=1)
    yield node
    forget_heartbeats(node)


@pytest.mark.django_db(transaction=True)  # the connection is closed: no test transaction
def test_metrics_answer_without_the_database_and_say_which_gauges_are_missing(client):
    with database_unreachable():
        response = client.get("/metrics")
        readiness = client.get("/readyz/web")

    assert response.status_code == 200
    text = response.content.decode()
    assert 'folio_source_up{source="database"} 0.0' in text
    assert 'folio_source_up{source="broker"} 1.0' in text
    assert "folio_jobs{" not in text  # absent, not zero
    assert 'folio_queue_depth{queue="ocr.local"}' in text
    assert "django_http_requests_total_by_method_total" in text
    assert readiness.status_code == 503
    assert readiness.json()["checks"]["database"]["ok"] is False

    # The database is back: the same process reads it again.
    back = client.get("/metrics").content.decode()
    assert 'folio_source_up{source="database"} 1.0' in back


@pytest.mark.django_db
def test_metrics_answer_without_the_broker(client):
    with broker_unreachable():
        text = client.get("/metrics").content.decode()

    assert 'folio_source_up{source="broker"} 0.0' in text
    assert 'folio_source_up{source="database"} 1.0' in text
    assert "folio_queue_depth{" not in text


@pytest.mark.django_db
def test_the_web_is_ready_with_its_database_and_broker_even_before_any_worker(client):
    from tests.workers import forget_heartbeats

    forget_heartbeats()
    web = client.get("/readyz/web")
    service = client.get("/readyz")

    assert web.status_code == 200, web.json()
    assert web.json()["checks"]["workers"]["engines"] == []
    assert service.status_code == 503
    assert service.json()["checks"]["workers"]["error"] == "no worker is consuming an engine queue"


@pytest.mark.django_db
def test_readyz_reports_a_broker_lost_a_moment_after_it_answered(client, a_worker_seen):
    before = client.get("/readyz")
    assert before.status_code == 200, before.json()
    assert before.json()["checks"]["workers"]["workers"] == {"local": 1}

    with broker_unreachable():
        lost = [client.get("/readyz") for _ in range(2)]
        web = client.get("/readyz/web")

    for answer in [*lost, web]:
        assert answer.status_code == 503
        assert answer.json()["checks"]["broker"]["ok"] is False
    assert client.get("/readyz").status_code == 200  # and back at once


@pytest.mark.django_db(transaction=True)
def test_healthz_stays_up_without_the_database_it_is_liveness_only(client):
    with database_unreachable():
        live = client.get("/healthz")
        ready = client.get("/readyz")

    assert live.status_code == 200
    assert ready.status_code == 503
    assert ready.json()["checks"]["database"]["ok"] is False


def test_every_web_readiness_probe_asks_for_the_database_and_the_broker():
    import yaml

    repository = Path(__file__).resolve().parents[1]
    web = next(
        doc
        for doc in yaml.safe_load_all((repository / "deploy/kubernetes/base/web.yaml").read_text())
        if doc and doc.get("kind") == "Deployment"
    )
    (container,) = web["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz/web"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # docker-compose and any plain Docker host use the image's HEALTHCHECK script.
    assert "/readyz/web" in (repository / "deploy/healthcheck.sh").read_text()
