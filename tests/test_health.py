from __future__ import annotations

import pytest


def test_healthz_answers_while_the_process_is_up(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_readyz_names_the_engines_that_live_workers_serve(client, worker):
    response = client.get("/readyz")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["checks"]["database"]["ok"]
    assert body["checks"]["broker"]["ok"]
    assert "local" in body["checks"]["workers"]["engines"]
