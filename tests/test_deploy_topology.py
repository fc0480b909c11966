"""The compose topology without Docker: the services of docker-compose.yml started as processes
from the same entrypoint script with the same environment (tests/topology.py says what is
swapped for this machine), across "hosts" that share nothing but the network services.

- PostgreSQL and Redis: the test's database and Redis database;
- S3: moto's server mode, standing in for the MinIO of docker-compose.yml;
- `migrate` (creates the bucket), `web` (gunicorn), `beat`, and two `worker` hosts with
  different host names and separate local disks.

Then documents go in and come out (every stored byte readable from either worker host,
webhooks delivered and signed), one worker host is killed mid-job (its page is finished by
the other, nothing lost or doubled), retention deletes every file from the bucket, and a
missing storage setting stops a service at start naming the variable.

Figures (printed, and written to test-output/deploy/figures.json): pages per second with one
worker host and with two, and their ratio, measured in this one run; the time from killing a
host to its page being finished elsewhere; the bytes left in the bucket after retention.
Worker hosts run one process each (FOLIO_WORKER_CONCURRENCY=1 instead of compose's 2): this
machine has two cores, so one process is one host's worth of CPU.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import boto3
import httpx
import pymupdf
import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from tests import documents
from tests.receiver import Receiver
from tests.topology import REPOSITORY, Host, MotoServer, free_port, service_environment
from tests.workers import purge_queues
from tests.workers import test_database_url as database_url_for_processes
from webapp.jobs.models import Job, Page

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

OUTPUT = REPOSITORY / "test-output" / "deploy"
DOCUMENTS_PER_PHASE = 4  # three pages each
KILL_WORDS = ("Ardent", "Bramble", "Cobalt", "Dapple", "Ember", "Fathom")
# The maintenance rounds, quickened so the test does not wait minutes (defaults: 60 s each).
BEAT_ROUNDS = {
    "FOLIO_REAP_SECONDS": "2",
    "FOLIO_WORKER_LOST_SECONDS": "4",
    "FOLIO_RETENTION_SWEEP_SECONDS": "2",
}


def born_digital_copy(tag: str) -> bytes:
    """The three-page report, made distinct by its title so no layer can dedupe it."""
    doc = pymupdf.open(stream=documents.born_digital_pdf(), filetype="pdf")
    doc.set_metadata({"title": tag})
    return doc.tobytes()


def scanned_pages_pdf() -> bytes:
    """One scanned page per word (no text layer: each takes the OCR a moment)."""
    scans = pymupdf.open()
    for word in KILL_WORDS:
        text = pymupdf.open()
        page = text.new_page(width=595, height=842)
        for line in range(4):
            page.insert_text((60, 120 + 60 * line), f"{word} line {line + 1}", fontsize=26)
        scan = scans.new_page(width=595, height=842)
        scan.insert_image(scan.rect, stream=page.get_pixmap(dpi=110).tobytes("png"))
    return scans.tobytes()


class Deployment:
    """The running services and an HTTP client for web, with a user's key."""

    def __init__(self, scratch: Path, s3: MotoServer):
        self.scratch = scratch
        self.s3 = s3
        secrets = scratch / "secrets"
        secrets.mkdir()
        (secrets / "folio_secret_key").write_text("topology-test-secret-key-" + "x" * 40)
        (secrets / "s3_secret_key").write_text("topology-test-s3-secret")
        self.replace = {
            "postgres://folio:folio@postgres:5432/folio": database_url_for_processes(),
            "redis://redis:6379/0": _broker_url(),
            "http://minio:9000": s3.url,
            "/run/secrets/": f"{secrets}/",
        }
        self.port = free_port()
        self.hosts: list[Host] = []

    def host(self, service: str, hostname: str, **extra: str) -> Host:
        env = service_environment(service, replace=self.replace)
        # Webhook targets and fetched URLs may be this machine's loopback in the test only.
        env |= {"FOLIO_SSRF_ALLOW": "127.0.0.1", **extra}
        host = Host(service, hostname=hostname, env=env, scratch=self.scratch, log_dir=OUTPUT)
        self.hosts.append(host)
        return host

    def web(self) -> Host:
        return self.host("web", "web-1", FOLIO_BIND=f"127.0.0.1:{self.port}", FOLIO_WEB_WORKERS="2")

    def worker(self, hostname: str) -> Host:
        return self.host("worker", hostname, FOLIO_WORKER_CONCURRENCY="1")

    def bucket(self):
        env = self.hosts[0].env
        return boto3.resource(
            "s3",
            endpoint_url=self.s3.url,
            region_name=env["FOLIO_S3_REGION"],
            aws_access_key_id=env["FOLIO_S3_ACCESS_KEY"],
            aws_secret_access_key="unused-by-moto",
        ).Bucket(env["FOLIO_S3_BUCKET"])

    def stop(self) -> None:
        for host in reversed(self.hosts):
            host.stop()


def _broker_url() -> str:
    from django.conf import settings

    return settings.FOLIO_BROKER_URL


def wait_for_worker(host: Host) -> None:
    """Started, and its engine loaded (a ping alone can come before the engine is)."""
    host.wait_for_log("engine local loaded", timeout=240)


def submit_all(http: httpx.Client, docs: list[tuple[str, bytes]]) -> list[str]:
    def submit(doc: tuple[str, bytes]) -> str:
        name, data = doc
        response = http.post("/v1/jobs", files={"file": (name, data, "application/pdf")})
        assert response.status_code == 202, response.text
        return response.json()["id"]

    with ThreadPoolExecutor(len(docs)) as pool:
        return list(pool.map(submit, docs))


def wait_for_jobs(http: httpx.Client, job_ids: list[str], *, timeout: float = 600) -> list[dict]:
    deadline = time.monotonic() + timeout
    pending = set(job_ids)
    while pending and time.monotonic() < deadline:
        for job_id in list(pending):
            if http.get(f"/v1/jobs/{job_id}").json()["status"] not in ("queued", "running"):
                pending.discard(job_id)
        time.sleep(0.5)
    assert not pending, f"jobs still running after {timeout} s: {pending}"
    return [
        http.get(f"/v1/jobs/{job_id}", params={"include": "pages"}).json() for job_id in job_ids
    ]


def pages_per_second(job_ids: list[str], started: float) -> float:
    """Pages over the time from the first submission to the last job's end (server clock;
    the same machine's clock as ``started``)."""
    jobs = Job.objects.filter(pk__in=job_ids)
    last = max(job.finished_at.timestamp() for job in jobs)
    return sum(job.pages_total for job in jobs) / (last - started)


def hosts_of(job_ids: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for worker in Page.objects.filter(job_id__in=job_ids).values_list("worker", flat=True):
        node = worker.rsplit(":", 1)[0]
        counts[node] = counts.get(node, 0) + 1
    return counts


STORED_FILES_SCRIPT = """
import hashlib, json, os, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
django.setup()
from django.core.files.storage import default_storage
def walk(folder):
    folders, files = default_storage.listdir(folder)
    for name in files:
        yield f"{folder}/{name}".lstrip("/")
    for sub in folders:
        yield from walk(f"{folder}/{sub}".lstrip("/"))
out = {}
for name in walk(""):
    with default_storage.open(name, "rb") as handle:
        out[name] = hashlib.sha256(handle.read()).hexdigest()
print(json.dumps(out))
"""


def stored_files_seen_from(host: Host) -> dict[str, str]:
    """Every stored file's SHA-256 (documents, page images, figures), as this host reads it
    through its own settings."""
    result = host.run(
        "python3", "-c", STORED_FILES_SCRIPT, timeout=240
    )  # passes through the entrypoint like `docker compose run worker python3 -c ...`
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def healthcheck(host: Host, *, retries: int = 1):
    """deploy/healthcheck.sh in the host's environment; a failure is tried again up to
    ``retries`` times, as Docker does (the images say --retries=3)."""
    for _ in range(retries):
        result = host.run("sh", str(REPOSITORY / "deploy" / "healthcheck.sh"), timeout=120)
        if result.returncode == 0:
            break
    return result


def test_a_service_missing_a_storage_setting_stops_at_start_naming_it(tmp_path):
    deployment = Deployment(tmp_path, s3=_NoServer())
    for service, missing in (("web", "FOLIO_S3_BUCKET"), ("worker", "FOLIO_S3_SECRET_KEY")):
        host = deployment.host(service, f"{service}-misconfigured")
        host.env.pop(missing, None)
        host.env.pop(f"{missing}_FILE", None)
        started = time.monotonic()
        result = host.run(timeout=120)
        assert result.returncode == 78, (result.returncode, result.stderr[-2000:])
        assert missing in result.stderr
        assert "configuration error" in result.stderr
        # It stopped in the preflight: nothing was started, and it did not wait for anything.
        assert "Booting worker" not in result.stderr and "celery@" not in result.stderr
        assert time.monotonic() - started < 120


def test_an_unreachable_bucket_stops_the_service_after_its_wait_naming_the_storage(tmp_path):
    deployment = Deployment(tmp_path, s3=_NoServer())
    host = deployment.host("web", "web-without-s3", FOLIO_START_WAIT_SECONDS="2")
    result = host.run(timeout=120)
    assert result.returncode == 69, (result.returncode, result.stderr[-2000:])
    assert "file storage" in result.stderr and "FOLIO_S3" in result.stderr


class _NoServer:
    """An S3 address where nothing listens."""

    url = f"http://127.0.0.1:{free_port()}"


def test_the_compose_services_on_several_hosts(tmp_path, make_user):
    from webapp.accounts.services import api_key_create

    purge_queues("ocr.local", "folio")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    figures: dict[str, object] = {}
    owner = make_user("operator")
    key = api_key_create(user=owner).secret

    with (
        MotoServer(OUTPUT) as s3,
        Receiver() as receiver,
        contextlib.ExitStack() as stack,
    ):
        deployment = Deployment(tmp_path, s3)
        stack.callback(deployment.stop)

        # --- migrate: the bucket is made on first start, then the migrations run ---------
        migrate = deployment.host("migrate", "migrate-1").run(timeout=300)
        assert migrate.returncode == 0, migrate.stderr[-3000:]
        assert "created the bucket folio" in migrate.stderr
        bucket = deployment.bucket()
        assert bucket.creation_date is not None

        web = deployment.web().start()
        beat = deployment.host("beat", "beat-1", **BEAT_ROUNDS).start()
        host_a = deployment.worker("host-a").start()
        http = httpx.Client(
            base_url=f"http://127.0.0.1:{deployment.port}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        stack.callback(http.close)
        web.wait_for_log("Booting worker", timeout=240)
        wait_for_worker(host_a)
        beat.wait_for_log("beat: Starting", timeout=240)
        endpoint = http.post(
            "/v1/webhooks",
            json={
                "url": receiver.url,
                "events": ["job.succeeded", "job.partially_failed", "job.failed"],
            },
        )
        assert endpoint.status_code == 201, endpoint.text
        secret = endpoint.json()["secret"]

        # The images' HEALTHCHECK script, as Docker would run it in each container.
        for host in (web, host_a):
            check = healthcheck(host, retries=3)
            assert check.returncode == 0, (host.hostname, check.stdout, check.stderr)

        # --- documents in and out: one worker host, then two -----------------------------
        # A warm-up page first: a worker process's first page imports what loading did not.
        warm_up_pdf = born_digital_copy("warm-up")
        [warm_up] = submit_all(http, [("warm-up.pdf", warm_up_pdf)])
        wait_for_jobs(http, [warm_up])
        one_host = [
            (f"one-{i}.pdf", born_digital_copy(f"one {i}")) for i in range(DOCUMENTS_PER_PHASE)
        ]
        started = time.time()
        one_ids = submit_all(http, one_host)
        wait_for_jobs(http, one_ids)
        figures["pages_per_second_one_host"] = round(pages_per_second(one_ids, started), 3)
        assert set(hosts_of(one_ids)) == {"worker@host-a"}

        host_b = deployment.worker("host-b").start()
        wait_for_worker(host_b)
        two_hosts = [
            (f"two-{i}.pdf", born_digital_copy(f"two {i}")) for i in range(DOCUMENTS_PER_PHASE)
        ]
        started = time.time()
        two_ids = submit_all(http, two_hosts)
        wait_for_jobs(http, two_ids)
        figures["pages_per_second_two_hosts"] = round(pages_per_second(two_ids, started), 3)
        figures["two_hosts_over_one"] = round(
            figures["pages_per_second_two_hosts"] / figures["pages_per_second_one_host"], 2
        )
        shares = hosts_of(two_ids)
        figures["pages_per_host_with_two"] = shares
        assert set(shares) == {"worker@host-a", "worker@host-b"}, shares

        for job_id in one_ids + two_ids:
            job = http.get(f"/v1/jobs/{job_id}").json()
            assert job["status"] == "succeeded", job
            markdown = http.get(f"/v1/jobs/{job_id}/result").text
            for marker in documents.BORN_DIGITAL_PAGE_MARKERS:
                assert markdown.count(marker) == 1, (job_id, markdown)

        # Every stored byte is readable from either worker host, through its own settings,
        # and nothing landed on a host's local disk.
        uploads = {
            hashlib.sha256(data).hexdigest()
            for _, data in [("warm-up.pdf", warm_up_pdf), *one_host, *two_hosts]
        }
        seen_from_a = stored_files_seen_from(host_a)
        seen_from_b = stored_files_seen_from(host_b)
        assert seen_from_a == seen_from_b
        stored_documents = {n: d for n, d in seen_from_a.items() if n.startswith("documents/")}
        assert set(stored_documents.values()) == uploads
        assert all(Path(name).stem == digest for name, digest in stored_documents.items())
        for host in deployment.hosts:
            assert host.local_files() == [], (host.hostname, host.local_files())

        # Webhooks: one signed event per job, delivered by beat's worker.
        received = receiver.wait_for(1 + len(one_ids) + len(two_ids), timeout=120)
        events = [Webhook(secret).verify(r.body, r.headers) for r in received]
        assert sorted(e["data"]["id"] for e in events) == sorted([warm_up, *one_ids, *two_ids])
        assert {e["type"] for e in events} == {"job.succeeded"}

        # --- a worker host is lost mid-job -------------------------------------------------
        [kill_id] = submit_all(http, [("scans.pdf", scanned_pages_pdf())])
        deadline = time.monotonic() + 240
        orphan = None
        while orphan is None and time.monotonic() < deadline:
            orphan = Page.objects.filter(
                job_id=kill_id, status=Page.Status.RUNNING, worker__startswith="worker@host-b:"
            ).first()
            time.sleep(0.05)
        assert orphan is not None, "host-b never took a page"
        host_b.kill()
        killed_at = time.time()
        assert healthcheck(host_b).returncode != 0  # Docker would mark it unhealthy

        [job] = wait_for_jobs(http, [kill_id], timeout=300)
        assert job["status"] == "succeeded", job
        orphan.refresh_from_db()
        assert orphan.attempts == 2 and orphan.worker.startswith("worker@host-a:")
        figures["host_lost_page_handed_out_after_seconds"] = round(
            orphan.enqueued_at.timestamp() - killed_at, 1
        )
        figures["host_lost_page_finished_after_seconds"] = round(
            orphan.finished_at.timestamp() - killed_at, 1
        )
        markdown = http.get(f"/v1/jobs/{kill_id}/result").text
        for word in KILL_WORDS:
            assert markdown.count(f"{word} line 1") == 1, markdown
        counts = {p["number"]: p["attempts"] for p in job["pages"]}
        assert all(n == 1 for number, n in counts.items() if number != orphan.number), counts
        receiver.wait_for(1 + len(one_ids) + len(two_ids) + 1, timeout=120)
        time.sleep(3)  # a doubled end would send a second event by now
        kill_events = [
            e
            for e in (Webhook(secret).verify(r.body, r.headers) for r in receiver.received)
            if e["data"]["id"] == kill_id
        ]
        assert len(kill_events) == 1, kill_events

        # --- retention: files and results of expired jobs leave the bucket ---------------
        all_ids = [warm_up, *one_ids, *two_ids, kill_id]
        assert sum(obj.size for obj in bucket.objects.all()) > 0
        Job.objects.filter(pk__in=all_ids).update(expires_at=timezone.now() - timedelta(seconds=1))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not Job.objects.filter(
                pk__in=all_ids, expired_at__isnull=True
            ).exists() and not list(bucket.objects.all()):
                break
            time.sleep(1)
        figures["bytes_left_after_retention"] = sum(obj.size for obj in bucket.objects.all())
        assert figures["bytes_left_after_retention"] == 0
        assert http.get(f"/v1/jobs/{one_ids[0]}/result").status_code == 410

    (OUTPUT / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\ndeployment figures: {json.dumps(figures)}")
