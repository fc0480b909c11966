"""Which engines are served, known from the workers' heartbeats without asking busy workers.

The fast tests write heartbeats with the function a worker's main process beats with
(``webapp.core.workers.heartbeat_write``), under node names no worker has; the slow ones run
real workers against a live server, submitting many documents at once, and while the worker
is stopped (SIGSTOP) as a host starved of CPU would leave it.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.test import override_settings

from tests import documents
from tests.workers import WorkerProcess, forget_heartbeats, purge_queues
from webapp.core.workers import (
    INDEX_KEY,
    RECORD_PREFIX,
    ServedEngine,
    broker_redis,
    engines_served,
    heartbeat_write,
    serves_plain,
    unserved_engine_refusal,
    workers_seen,
)
from webapp.jobs.models import Job

refusing = override_settings(FOLIO_REFUSE_UNSERVED_ENGINES=True)


@pytest.fixture
def nodes():
    """Names for heartbeats no worker writes, forgotten afterwards."""
    names: list[str] = []

    def name(label: str) -> str:
        names.append(f"{label}-{os.getpid()}@test-host")
        return names[-1]

    yield name
    if names:
        forget_heartbeats(*names)


def test_each_engine_is_counted_with_its_workers_and_their_capacity(nodes):
    heartbeat_write(node=nodes("cpu-a"), queues=["ocr.local", "folio"], capacity=2)
    heartbeat_write(node=nodes("cpu-b"), queues=["ocr.local"], capacity=4)
    heartbeat_write(node=nodes("gpu"), queues=["ocr.jina-ocr-v1"], capacity=32)
    heartbeat_write(node=nodes("gpu-plain"), queues=["ocr.jina-ocr-v1.plain"], capacity=8)
    heartbeat_write(node=nodes("beat"), queues=["folio"], capacity=1)

    served = engines_served(fresh=True)

    assert served == {
        "local": ServedEngine("local", workers=2, capacity=6),
        # the no-speculation worker takes only pages handed over: it serves no new job
        "jina-ocr-v1": ServedEngine("jina-ocr-v1", workers=1, capacity=32),
    }
    assert serves_plain("jina-ocr-v1", fresh=True) is True
    assert serves_plain("local", fresh=True) is False


def test_a_worker_counts_for_the_grace_period_after_its_last_heartbeat_and_not_after(nodes):
    node = nodes("quiet")
    heartbeat_write(node=node, queues=["ocr.local"], capacity=1)

    with override_settings(FOLIO_WORKER_SEEN_SECONDS=1), refusing:
        assert "local" in engines_served(fresh=True)
        assert unserved_engine_refusal("local") is None
        time.sleep(1.3)  # no heartbeat for longer than the grace period
        assert node not in {seen.node for seen in workers_seen(fresh=True)}
        refusal = unserved_engine_refusal("local")
    assert refusal is not None
    assert "no worker serves the engine 'local' now (none seen in the last 1 s)" in refusal
    # the same record is still young enough for a reader with the default grace
    assert "local" in engines_served(fresh=True)


def test_a_record_whose_worker_is_silent_past_its_lifetime_leaves_the_index(nodes):
    node = nodes("gone")
    heartbeat_write(node=node, queues=["ocr.local"], capacity=1)
    with broker_redis() as redis:
        redis.delete(RECORD_PREFIX + node)  # what Redis does once the record's TTL ran out

    assert node not in {seen.node for seen in workers_seen(fresh=True)}
    with broker_redis() as redis:
        assert not redis.sismember(INDEX_KEY, node)


def test_an_unreadable_record_is_skipped_not_fatal(nodes):
    good, bad = nodes("good"), nodes("bad")
    heartbeat_write(node=good, queues=["ocr.local"], capacity=1)
    with broker_redis() as redis:
        redis.set(RECORD_PREFIX + bad, b"{not json", ex=60)
        redis.sadd(INDEX_KEY, bad)

    assert {seen.node for seen in workers_seen(fresh=True)} == {good}


def _submit_all(url: str, key: str, docs: list[bytes], *, spread: float = 0.0) -> list[int]:
    """Each document posted from a thread of its own, all at once (or ``spread`` seconds
    apart): the statuses, in order. What each refusal said is printed, for the report."""

    def post(item: tuple[int, bytes]) -> int:
        index, data = item
        time.sleep(index * spread)
        response = httpx.post(
            f"{url}/v1/jobs",
            headers={"Authorization": f"Bearer {key}"},
            files={"file": (f"doc-{index}.pdf", data)},
            data={"pages": "1"},
            timeout=120,
        )
        if response.status_code != 202:
            print(f"document {index}: {response.status_code} {response.text[:300]}")
        return response.status_code

    with ThreadPoolExecutor(len(docs)) as pool:
        return list(pool.map(post, enumerate(docs)))


def _distinct_pdfs(count: int) -> list[bytes]:
    base = documents.one_page_pdf()
    # Bytes after %%EOF are ignored by readers: distinct documents, the same page.
    return [base + f"\n% copy {n}\n".encode() for n in range(count)]


@pytest.fixture
def api_key(make_user):
    from webapp.accounts.services import api_key_create

    return api_key_create(user=make_user("burst")).secret


def _cancel_everything() -> None:
    from webapp.jobs.services.job_lifecycle import job_cancel

    for job in Job.objects.filter(status__in=Job.ACTIVE):
        job_cancel(job=job)
    purge_queues("ocr.local", "folio")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_thirty_documents_at_once_to_an_idle_service_are_all_accepted(live_server, api_key):
    purge_queues("ocr.local", "folio")
    with WorkerProcess(concurrency=1), refusing:
        statuses = _submit_all(live_server.url, api_key, _distinct_pdfs(30))
        _cancel_everything()  # acceptance is the point; reading 30 pages is not

    assert statuses.count(202) == 30, statuses
    assert Job.objects.count() == 30


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_stopped_while_jobs_arrive_refuses_none_and_reads_them_after(live_server, api_key):
    purge_queues("ocr.local", "folio")
    with WorkerProcess(concurrency=1) as worker, refusing:
        # SIGSTOP to the whole worker (main process and pool), as a host starved of CPU
        # leaves it: no heartbeat and no answer to anything for a few seconds.
        os.killpg(worker.process.pid, signal.SIGSTOP)
        try:
            statuses = _submit_all(live_server.url, api_key, _distinct_pdfs(10), spread=0.4)
        finally:
            os.killpg(worker.process.pid, signal.SIGCONT)
        assert statuses.count(202) == 10, statuses
        deadline = time.monotonic() + 180
        while Job.objects.filter(status__in=Job.ACTIVE).exists():
            assert time.monotonic() < deadline, "the jobs did not finish once the worker ran"
            time.sleep(0.5)

    assert set(Job.objects.values_list("status", flat=True)) == {Job.Status.SUCCEEDED}
