from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from rest_framework.test import APIClient

# Django, DRF and the worker helpers are imported inside the fixtures, so that the pure tests
# of model/ also run with `pytest -p no:django`.


@pytest.fixture(autouse=True, scope="session")
def _quick_password_hashing(request):
    """Passwords hashed with one round of MD5 in the test process: the default PBKDF2 costs a
    third of a second a user, and most tests make one. PBKDF2 stays second on the list, so a
    password a server subprocess hashed still checks here."""
    if not request.config.pluginmanager.has_plugin("django"):
        yield
        return
    from django.test import override_settings

    with override_settings(
        PASSWORD_HASHERS=[
            "django.contrib.auth.hashers.MD5PasswordHasher",
            "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        ]
    ):
        yield


@pytest.fixture(autouse=True, scope="session")
def _no_worker_heartbeat_left_from_an_earlier_run(request):
    """A run stopped half-way leaves its workers' heartbeats in this process's Redis database,
    where they would count as serving for a while: each run starts with none."""
    if request.config.pluginmanager.has_plugin("django"):
        from tests.workers import forget_heartbeats

        # No broker: the tests that need one say so themselves.
        with contextlib.suppress(Exception):
            forget_heartbeats()
    yield


# Names reserved for documentation and tests (RFC 2606, RFC 6761): what the host's resolver
# makes of them (an answer, NXDOMAIN, a wait for a silent name server) is the host's. Tests use
# them freely in URLs and fixtures; one that needs such a name to resolve stubs it itself.
RESERVED_NAMES = ("example", "example.com", "example.net", "example.org", "invalid", "test")


def _reserved(host: str) -> bool:
    name = host.rstrip(".").lower()
    return any(name == zone or name.endswith("." + zone) for zone in RESERVED_NAMES)


@pytest.fixture(autouse=True)
def _reserved_names_never_reach_the_host_resolver(monkeypatch):
    """In the test process a reserved name does not resolve, at once (as a resolver with no
    such name answers), whatever the host's DNS: no test depends on it."""
    import socket

    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if isinstance(name, str) and _reserved(name):
            raise socket.gaierror(socket.EAI_NONAME, f"{name} is a reserved name (tests)")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield


@pytest.fixture
def one_rate_window():
    """The clock stands still at the start of a minute. Rate limits count per clock minute, so a
    test that sends several requests and expects the last one refused would see it accepted
    if the host's load let the requests straddle two minutes."""
    from datetime import UTC, datetime

    import time_machine

    with time_machine.travel(datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC), tick=False):
        yield


@pytest.fixture
def make_user(django_user_model):
    def make(username: str = "alice"):
        return django_user_model.objects.create_user(username=username, password="not-used-here")

    return make


def client_for(user) -> APIClient:
    from rest_framework.test import APIClient

    from webapp.accounts.services import api_key_create

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(user=user).secret}")
    return client


@pytest.fixture
def api(make_user) -> APIClient:
    """An API client with a fresh user's key."""
    client = client_for(make_user("alice"))
    return client


_SHARED_WORKERS: list = []  # the module worker, while one runs: tests beside it must leave it idle


@pytest.fixture(scope="module")
def worker(django_db_setup):
    """Two real worker processes consuming the local engine's queue, for one test module
    (modules that kill workers start their own)."""
    from tests.workers import WorkerProcess, purge_queues

    purge_queues("ocr.local", "folio")
    with WorkerProcess(concurrency=2) as process:
        _SHARED_WORKERS.append(process)
        try:
            yield process
        finally:
            _SHARED_WORKERS.remove(process)


@pytest.fixture(autouse=True)
def _module_worker_idle_before_flush(request):
    """A transactional test in a module whose worker is running ends with that worker idle:
    its unfinished jobs cancelled, their messages purged, and the pages in hand done. Otherwise
    the worker's queries race the flush of this test's rows, and on a busy host the two
    deadlock. This holds for a test that never asked for the worker too: the worker an earlier
    test started still takes the jobs this one queues."""
    transactional = any(
        mark.kwargs.get("transaction") for mark in request.node.iter_markers("django_db")
    )
    if not transactional or ("worker" not in request.fixturenames and not _SHARED_WORKERS):
        yield
        return
    request.getfixturevalue("transactional_db")  # set up first, so flushed after this teardown
    process = request.getfixturevalue("worker")
    yield
    from tests.workers import purge_queues
    from webapp.jobs.models import Job
    from webapp.jobs.services.job_lifecycle import job_cancel

    for job in Job.objects.filter(status__in=Job.ACTIVE):
        job_cancel(job=job)
    purge_queues("ocr.local", "folio")
    process.wait_idle()


def wait_for_job(client: APIClient, job_id: str, *, timeout: float = 120) -> dict:
    """The finished job's status document with every page's details (``include=pages``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/v1/jobs/{job_id}").json()
        if body["status"] not in ("queued", "running"):
            return client.get(f"/v1/jobs/{job_id}", {"include": "pages"}).json()
        time.sleep(0.2)
    raise TimeoutError(f"job {job_id} still {body['status']} after {timeout} s: {body['progress']}")
