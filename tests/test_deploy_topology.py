"""docker-compose.yml's services on a network of hosts, without Docker: each service started as
its container would be (the same entrypoint, command and environment: tests/topology.py), each
host a network namespace of its own on one bridge (tests/netns.py), reaching the others by
their compose names and never over loopback:

- ``postgres``, ``redis``, ``minio``: a PostgreSQL cluster and a redis-server started here for
  this run, and an S3-compatible server that checks credentials (moto's server with IAM
  enforcement: a wrong key is refused); tests/topology_services.py;
- ``migrate`` (creates the bucket), ``web`` (gunicorn), ``beat``, and two ``worker`` hosts with
  different host names and separate local disks.

Then documents go in and come out (every stored byte readable from either worker host,
webhooks delivered and signed), one worker host is cut off the network mid-job (its packets
dropped) and plugged back in (its page is finished by the other, each page is transcribed once
and each job's webhook sent once), retention deletes every file from the bucket, and a missing
storage setting stops a service at start naming the variable.

Skipped, saying why, where network namespaces cannot be made (not root, no iproute2) or the
servers are not installed.
In the deployment tier: `make test-deploy`, which `.ci/run` runs after `make test`.

Figures (printed, and written to test-output/deploy/figures.json): pages per second with one
worker host and with two, and their ratio, measured in this one run; the time from cutting a
host off to its page being finished elsewhere; the bytes left in the bucket after retention.
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

import botocore.exceptions
import httpx
import pymupdf
import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from tests import documents, netns
from tests.receiver import Receiver
from tests.topology import REPOSITORY, Host, free_port, service_environment
from tests.topology_services import PostgresServer, RedisServer, S3Server, missing_programs
from tests.workers import test_database_url as database_url_for_processes
from webapp.jobs.models import Job, Page

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

OUTPUT = REPOSITORY / "test-output" / "deploy"
DOCUMENTS_PER_PHASE = 4  # three pages each
CUT_WORDS = ("Ardent", "Bramble", "Cobalt", "Dapple", "Ember", "Fathom")
# The maintenance rounds, quickened so the test does not wait minutes (defaults: 60 s each).
BEAT_ROUNDS = {
    "FOLIO_REAP_SECONDS": "2",
    "FOLIO_WORKER_LOST_SECONDS": "4",
    "FOLIO_RETENTION_SWEEP_SECONDS": "2",
}
DB = "topology"  # the test process's connection to the topology's own PostgreSQL


def born_digital_copy(tag: str) -> bytes:
    """The three-page report, made distinct by its title so no layer can dedupe it."""
    doc = pymupdf.open(stream=documents.born_digital_pdf(), filetype="pdf")
    doc.set_metadata({"title": tag})
    return doc.tobytes()


def scanned_pages_pdf() -> bytes:
    """One scanned page per word (no text layer: each takes the OCR a moment)."""
    scans = pymupdf.open()
    for word in CUT_WORDS:
        text = pymupdf.open()
        page = text.new_page(width=595, height=842)
        for line in range(4):
            page.insert_text((60, 120 + 60 * line), f"{word} line {line + 1}", fontsize=26)
        scan = scans.new_page(width=595, height=842)
        scan.insert_image(scan.rect, stream=page.get_pixmap(dpi=110).tobytes("png"))
    return scans.tobytes()


def write_secrets(folder: Path, s3_secret: str) -> Path:
    folder.mkdir()
    (folder / "folio_secret_key").write_text("topology-test-secret-key-" + "x" * 40)
    (folder / "s3_secret_key").write_text(s3_secret)
    return folder


class Deployment:
    """The Folio hosts of the compose file on the test network."""

    def __init__(self, scratch: Path, net: netns.Network, s3: S3Server, log_dir: Path = OUTPUT):
        self.scratch = scratch
        self.log_dir = log_dir
        self.net = net
        self.s3 = s3
        self.secrets = write_secrets(scratch / "secrets", s3.secret_key)
        # What Compose would read from the shell: the key the S3 server issued.
        self.environ = {"FOLIO_S3_ACCESS_KEY": s3.access_key}
        self.hosts: list[Host] = []

    def host(self, service: str, hostname: str, **extra: str) -> Host:
        env = service_environment(
            service,
            replace={"/run/secrets/": f"{self.secrets}/"},
            environ=self.environ,
            networked=True,
        )
        # The webhook receiver is the test process, on the network's private range.
        env |= {"FOLIO_SSRF_ALLOW": self.net.client_address, **extra}
        host = Host(
            service, hostname=hostname, env=env, scratch=self.scratch, log_dir=self.log_dir,
            net=self.net,
        )  # fmt: skip
        self.hosts.append(host)
        return host

    def worker(self, hostname: str) -> Host:
        return self.host("worker", hostname, FOLIO_WORKER_CONCURRENCY="1")

    def stop(self) -> None:
        for host in reversed(self.hosts):
            host.stop()


@contextlib.contextmanager
def topology_database(url: str, blocker):
    """The test process's own connection to the topology's database, as ``DB``."""
    import dj_database_url
    from django.db import connections

    config = dj_database_url.parse(url)
    connections.settings[DB] = {**connections.settings["default"], **config, "TEST": {}}
    try:
        with blocker.unblock():
            yield
    finally:
        connections[DB].close()
        del connections[DB]
        del connections.settings[DB]


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
    """Pages over the time from the first submission to the last job's end (the hosts share
    this machine's clock)."""
    jobs = Job.objects.using(DB).filter(pk__in=job_ids)
    last = max(job.finished_at.timestamp() for job in jobs)
    return sum(job.pages_total for job in jobs) / (last - started)


def hosts_of(job_ids: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    pages = Page.objects.using(DB).filter(job_id__in=job_ids)
    for worker in pages.values_list("worker", flat=True):
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


class Events:
    """The receiver's webhook events, each verified (signature, timestamp) as it arrives:
    the timestamp check would refuse an event read minutes later."""

    def __init__(self, receiver: Receiver, secret: str):
        self.webhook = Webhook(secret)
        self.verified: list[dict] = []
        self.refused: list[Exception] = []
        receiver.on_receive = self._arrived

    def _arrived(self, received) -> None:
        try:
            self.verified.append(self.webhook.verify(received.body, received.headers))
        except Exception as exc:  # raised again in the test's thread by all()
            self.refused.append(exc)

    def all(self) -> list[dict]:
        if self.refused:
            raise self.refused[0]
        return list(self.verified)


# --- a misconfigured service stops at start (no network needed) ----------------------------


class _Local:
    """The compose environment with this machine's test database and broker, and an S3
    address where nothing listens: for the preflight, which stops before using them."""

    def __init__(self, scratch: Path):
        from django.conf import settings

        secrets = write_secrets(scratch / "secrets", "unused")
        self.scratch = scratch
        self.replace = {
            "postgres://folio:folio@postgres:5432/folio": database_url_for_processes(),
            "redis://redis:6379/0": settings.FOLIO_BROKER_URL,
            "http://minio:9000": f"http://127.0.0.1:{free_port()}",
            "/run/secrets/": f"{secrets}/",
        }

    def host(self, service: str, hostname: str, **extra: str) -> Host:
        env = service_environment(service, replace=self.replace) | extra
        return Host(service, hostname=hostname, env=env, scratch=self.scratch, log_dir=OUTPUT)


def test_a_service_missing_a_storage_setting_stops_at_start_naming_it(tmp_path):
    local = _Local(tmp_path)
    for service, missing in (("web", "FOLIO_S3_BUCKET"), ("worker", "FOLIO_S3_SECRET_KEY")):
        host = local.host(service, f"{service}-misconfigured")
        host.env.pop(missing, None)
        host.env.pop(f"{missing}_FILE", None)
        result = host.run(timeout=120)
        assert result.returncode == 78, (result.returncode, result.stderr[-2000:])
        assert missing in result.stderr
        assert "configuration error" in result.stderr
        # It stopped in the preflight: nothing was started, and it did not wait for anything.
        assert "Booting worker" not in result.stderr and "celery@" not in result.stderr
        assert "waiting: " not in result.stderr, result.stderr[-2000:]  # preflight.py says so


def test_an_unreachable_bucket_stops_the_service_after_its_wait_naming_the_storage(tmp_path):
    host = _Local(tmp_path).host("web", "web-without-s3", FOLIO_START_WAIT_SECONDS="2")
    result = host.run(timeout=120)
    assert result.returncode == 69, (result.returncode, result.stderr[-2000:])
    assert "file storage" in result.stderr and "FOLIO_S3" in result.stderr


# --- the hosts on their network -------------------------------------------------------------


@pytest.fixture
def network(tmp_path):
    reason = netns.unavailable() or missing_programs()
    if reason:
        pytest.skip(f"the multi-host test needs its own network: {reason}")
    with netns.Network(tmp_path) as net:
        yield net


def test_the_compose_services_on_a_network_of_hosts(tmp_path, network, django_db_blocker):
    OUTPUT.mkdir(parents=True, exist_ok=True)
    figures: dict[str, object] = {}
    net = network
    servers = [
        PostgresServer(net, OUTPUT),
        RedisServer(net, OUTPUT, tmp_path),
        S3Server(net, OUTPUT),
    ]
    postgres, _redis, s3 = servers
    with contextlib.ExitStack() as stack:
        for server in servers:
            stack.callback(server.stop)
            server.start()
        receiver = stack.enter_context(Receiver(host=net.client_address))

        # --- the store checks credentials: a wrong key is refused --------------------------
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            s3.client(secret_key="not-the-key").list_buckets()
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        deployment = Deployment(tmp_path, net, s3)
        stack.callback(deployment.stop)
        wrong = deployment.host("migrate", "migrate-wrong-key", FOLIO_START_WAIT_SECONDS="2")
        wrong.env["FOLIO_S3_SECRET_KEY_FILE"] = str(tmp_path / "wrong-key")
        (tmp_path / "wrong-key").write_text("not-the-key")
        refused_start = wrong.run(timeout=180)
        assert refused_start.returncode == 69, refused_start.stderr[-3000:]
        assert "file storage" in refused_start.stderr

        # --- migrate: the bucket is made on first start, then the migrations run ---------
        migrate = deployment.host("migrate", "migrate").run(timeout=300)
        assert migrate.returncode == 0, migrate.stderr[-3000:]
        assert "created the bucket folio" in migrate.stderr
        assert [b["Name"] for b in s3.client().list_buckets()["Buckets"]] == ["folio"]

        web = deployment.host("web", "web", FOLIO_WEB_WORKERS="2").start()
        beat = deployment.host("beat", "beat", **BEAT_ROUNDS).start()
        host_a = deployment.worker("host-a").start()
        key = web.run("python3", "manage.py", "createapikey", "operator", timeout=120)
        assert key.returncode == 0, key.stderr[-2000:]
        stack.enter_context(topology_database(_reachable(postgres), django_db_blocker))
        http = httpx.Client(
            base_url=f"http://{net.hosts['web'].address}:8000",
            # What the proxy sends: the public name, and that the client spoke TLS to it.
            headers={
                "Authorization": f"Bearer {key.stdout.strip().splitlines()[-1]}",
                "Host": "localhost",
                "X-Forwarded-Proto": "https",
            },
            timeout=60,
            # A fresh connection per request: a kept-alive one that gunicorn closed meanwhile
            # would fail a request that never reached it.
            limits=httpx.Limits(max_keepalive_connections=0),
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
        events = Events(receiver, endpoint.json()["secret"])

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
        receiver.wait_for(1 + len(one_ids) + len(two_ids), timeout=120)
        delivered = events.all()
        assert sorted(e["data"]["id"] for e in delivered) == sorted([warm_up, *one_ids, *two_ids])
        assert {e["type"] for e in delivered} == {"job.succeeded"}

        # --- a worker host is cut off the network mid-job, then plugged back in ----------
        [cut_id] = submit_all(http, [("scans.pdf", scanned_pages_pdf())])
        figures |= cut_off_and_back(net, http, host_b, cut_id)
        markdown = http.get(f"/v1/jobs/{cut_id}/result").text
        for word in CUT_WORDS:
            assert markdown.count(f"{word} line 1") == 1, markdown  # each page once
        receiver.wait_for(1 + len(one_ids) + len(two_ids) + 1, timeout=120)
        time.sleep(5)  # a doubled end would send a second event by now
        cut_events = [e for e in events.all() if e["data"]["id"] == cut_id]
        assert len(cut_events) == 1, cut_events
        ids = [e["data"]["id"] for e in events.all()]
        assert len(ids) == len(set(ids)), "a job's webhook was delivered twice"

        # --- a backup, restored into an empty stack, serves the same results -------------
        all_ids = [warm_up, *one_ids, *two_ids, cut_id]
        stored = stored_files_seen_from(host_a)
        restored = backup_restored_elsewhere(tmp_path, deployment, http, cut_id, stored)
        figures |= restored

        # --- retention: files and results of expired jobs leave the bucket ---------------
        assert bucket_bytes(s3) > 0
        Job.objects.using(DB).filter(pk__in=all_ids).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            unexpired = Job.objects.using(DB).filter(pk__in=all_ids, expired_at__isnull=True)
            if not unexpired.exists() and bucket_bytes(s3) == 0:
                break
            time.sleep(1)
        figures["bytes_left_after_retention"] = bucket_bytes(s3)
        assert figures["bytes_left_after_retention"] == 0
        assert http.get(f"/v1/jobs/{one_ids[0]}/result").status_code == 410

    (OUTPUT / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\ndeployment figures: {json.dumps(figures)}")


def backup_restored_elsewhere(
    tmp_path: Path, deployment: Deployment, http: httpx.Client, job_id: str, stored: dict
) -> dict:
    """deploy/backup.sh on a host of the running stack, deploy/restore.sh into a new one (its
    own network, PostgreSQL, Redis and S3 server, all empty), and that stack's web serves the
    job's result to the same API key, with every stored file back under its name."""
    backup = tmp_path / "backup"
    made = deployment.host("web", "backup").run("sh", "deploy/backup.sh", str(backup), timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    result = http.get(f"/v1/jobs/{job_id}/result").text
    with contextlib.ExitStack() as stack:
        other = stack.enter_context(netns.Network(tmp_path / "elsewhere"))
        servers = [
            PostgresServer(other, OUTPUT / "elsewhere"),
            RedisServer(other, OUTPUT / "elsewhere", tmp_path / "elsewhere"),
            S3Server(other, OUTPUT / "elsewhere"),
        ]
        for server in servers:
            stack.callback(server.stop)
            server.start()
        empty = Deployment(tmp_path / "elsewhere", other, servers[2], OUTPUT / "elsewhere")
        stack.callback(empty.stop)
        put_back = empty.host("migrate", "restore").run(
            "sh", "deploy/restore.sh", str(backup), timeout=300
        )
        assert put_back.returncode == 0, put_back.stderr[-3000:]
        assert empty.host("migrate", "migrate").run(timeout=300).returncode == 0
        web = empty.host("web", "web", FOLIO_WEB_WORKERS="1").start()
        web.wait_for_log("Booting worker", timeout=240)
        there = httpx.Client(
            base_url=f"http://{other.hosts['web'].address}:8000",
            headers=http.headers,
            timeout=60,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        stack.callback(there.close)
        deadline = time.monotonic() + 60
        while (answer := there.get(f"/v1/jobs/{job_id}/result")).status_code != 200:
            assert time.monotonic() < deadline, answer.text
            time.sleep(1)
        assert answer.text == result
        restored = stored_files_seen_from(web)
        assert restored == stored  # every object, the same bytes under the same name
        files = json.loads((backup / "files" / "manifest.json").read_text())
    return {
        "backup_files": len(files),
        "backup_bytes": sum(p.stat().st_size for p in backup.rglob("*") if p.is_file()),
    }


def bucket_bytes(s3: S3Server) -> int:
    listing = s3.client().list_objects_v2(Bucket="folio")
    return sum(item["Size"] for item in listing.get("Contents", []))


def _reachable(postgres: PostgresServer) -> str:
    """The database's URL as the test process reaches it (by address: this process does not
    read the hosts' hosts file)."""
    return postgres.url.replace(f"@{postgres.name}:", f"@{postgres.host.address}:")


def cut_off_and_back(net: netns.Network, http: httpx.Client, host: Host, job_id: str) -> dict:
    """Cut ``host`` off while it holds a page of the job; its page must be handed to another
    host and finished there; then plug it back in, and the job ends with every page done once
    (the cut-off host's late save refused by the page's claim)."""
    deadline = time.monotonic() + 240
    orphan = None
    while orphan is None and time.monotonic() < deadline:
        orphan = (
            Page.objects.using(DB)
            .filter(job_id=job_id, status=Page.Status.RUNNING)
            .filter(worker__startswith=f"worker@{host.hostname}:")
            .first()
        )
        time.sleep(0.05)
    assert orphan is not None, f"{host.hostname} never took a page"
    net.partition(host.hostname)
    cut_at = time.time()
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            orphan.refresh_from_db(using=DB)
            if orphan.status == Page.Status.SUCCEEDED:
                break
            time.sleep(0.5)
        assert orphan.status == Page.Status.SUCCEEDED, orphan.status
        assert not orphan.worker.startswith(f"worker@{host.hostname}:"), orphan.worker
        assert orphan.attempts == 2
        handed_out, finished = orphan.enqueued_at.timestamp(), orphan.finished_at.timestamp()
    finally:
        net.heal(host.hostname)
    [job] = wait_for_jobs(http, [job_id], timeout=300)
    assert job["status"] == "succeeded", job
    counts = {p["number"]: p["attempts"] for p in job["pages"]}
    assert all(n == 1 for number, n in counts.items() if number != orphan.number), counts
    # Back on the network, the host answers again and takes work (its Celery connection
    # survived the cut, as TCP does over a short outage).
    assert healthcheck(host, retries=6).returncode == 0
    orphan.refresh_from_db(using=DB)
    assert orphan.attempts == 2 and not orphan.worker.startswith(f"worker@{host.hostname}:")
    return {
        "cut_off_page_handed_out_after_seconds": round(handed_out - cut_at, 1),
        "cut_off_page_finished_after_seconds": round(finished - cut_at, 1),
    }
