"""The Python SDK (folio_client) against a real running server: live_server over HTTP, real
worker processes. A scripted proxy in front of it plays the network and the rate limiter,
the boundary those tests are about."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pymupdf
import pytest

from folio_client import (
    AsyncClient,
    AuthenticationError,
    Client,
    ConflictError,
    NotFoundError,
    RateLimitedError,
    RetryPolicy,
    UnprocessableError,
)
from folio_client.config import resolve
from tests import documents

with_server = pytest.mark.django_db(transaction=True)

# Short back-offs: these tests are about whether the client retries, not how patiently.
FAST = RetryPolicy(backoff_base=0.05, backoff_max=0.5)


@dataclass
class Seen:
    at: float
    method: str
    path: str
    answer: str
    headers: dict[str, str]


@dataclass
class ScriptedProxy:
    """A real HTTP server in front of another. The first requests to ``method path`` get the
    scripted answers in turn: ``"429:N"`` (a 429 with ``Retry-After: N``) or ``"drop"``
    (forwarded, then the connection closed without an answer: a lost reply). Everything else
    is forwarded. Every request is recorded with the time it arrived."""

    upstream: str
    script: list[str] = field(default_factory=list)
    method: str = "POST"
    path: str = "/v1/jobs"
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        proxy = self
        self.lock = threading.Lock()
        self.forward = httpx.Client(base_url=self.upstream, timeout=60)

        class Handler(BaseHTTPRequestHandler):
            def handle_one(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with proxy.lock:
                    matched = (self.command, self.path) == (proxy.method, proxy.path)
                    answer = proxy.script.pop(0) if matched and proxy.script else "forward"
                    headers = dict(self.headers)
                    proxy.seen.append(
                        Seen(time.monotonic(), self.command, self.path, answer, headers)
                    )
                if answer.startswith("429:"):
                    retry_after = answer.split(":", 1)[1]
                    self.reply(429, {"Retry-After": retry_after}, b'{"message": "slow down"}')
                    return
                sent = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection")}
                upstream = proxy.forward.request(
                    self.command, self.path, content=body, headers=sent
                )
                if answer == "drop":
                    self.close_connection = True
                    return
                kept = ("content-type", "retry-after", "location", "idempotent-replayed")
                self.reply(
                    upstream.status_code,
                    {k: v for k, v in upstream.headers.items() if k.lower() in kept},
                    upstream.content,
                )

            def reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = handle_one

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def requests_to(self, method: str, path: str) -> list[Seen]:
        with self.lock:
            return [seen for seen in self.seen if (seen.method, seen.path) == (method, path)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.forward.close()


@pytest.fixture
def key(make_user) -> str:
    from webapp.accounts.services import api_key_create

    return api_key_create(user=make_user("alice")).secret


@pytest.fixture
def folio(live_server, key):
    with Client(live_server.url, key, retry=FAST) as client:
        yield client


@pytest.fixture
def proxy(live_server):
    proxy = ScriptedProxy(live_server.url)
    yield proxy
    proxy.close()


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


@pytest.mark.slow
@with_server
def test_a_file_is_submitted_waited_for_and_read_back_as_markdown_and_as_pages(
    folio, worker, tmp_path
):
    job = folio.submit(write(tmp_path, "report.pdf", documents.born_digital_pdf()), pages="1-2")

    assert job.status in ("queued", "running", "succeeded")
    assert job.document.name == "report.pdf"
    done = folio.wait(job.id, timeout=60)
    assert done.succeeded and (done.progress.done, done.progress.total) == (2, 2)
    # A status poll carries the page summary; the pages come a page list at a time.
    assert done.pages is None and done.page_summary["succeeded"] == 2
    assert [page.number for page in folio.iter_pages(job.id)] == [1, 2]
    markdown = folio.result_markdown(job.id)
    assert documents.BORN_DIGITAL_PAGE_MARKERS[1] in markdown
    assert documents.BORN_DIGITAL_PAGE_MARKERS[2] not in markdown
    result = folio.result(job.id)
    assert [page.number for page in result.pages] == [1, 2]
    assert all(page.output_tokens and page.engine_seconds for page in result.pages)
    assert result.usage.output_tokens == sum(page.output_tokens for page in result.pages)


@pytest.mark.slow
@with_server
def test_the_searchable_pdf_is_asked_for_again_while_a_worker_builds_it(folio, worker, tmp_path):
    """The server answers no PDF at once (no wait here): the client follows its 202s'
    Retry-After until the worker has built it."""
    import pymupdf
    from django.test import override_settings

    job = folio.submit(write(tmp_path, "scan.png", documents.png_page()))
    folio.wait(job.id, timeout=60)
    with override_settings(FOLIO_SEARCHABLE_PDF_WAIT=0):
        pdf = folio.result_pdf(job.id, timeout=60)

    assert "Marlow" in pymupdf.open(stream=pdf)[0].get_text()


@pytest.mark.slow
@with_server
def test_speaker_notes_and_comments_are_asked_for_by_the_sdk(folio, worker, tmp_path):
    from tests import office

    if not office.CORPUS.is_dir():
        pytest.skip(office.CORPUS_MISSING)
    deck = write(tmp_path, "deck.pptx", office.corpus("pptx/sources/powerpoint_sample.pptx"))

    plain = folio.wait(folio.submit(deck).id, timeout=300)
    noted = folio.wait(folio.submit(deck, speaker_notes=True, comments=True).id, timeout=300)

    assert plain.succeeded and noted.succeeded
    assert "Speaker notes" not in folio.result_markdown(plain.id)
    assert "*Speaker notes:* Some notes on the second slide." in folio.result_markdown(noted.id)


@with_server
def test_a_url_is_submitted_with_the_options_of_an_upload(live_server, key):
    from django.test import override_settings

    from tests.document_server import document_server
    from webapp.jobs.models import Job

    with (
        document_server() as base,
        override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"]),
        Client(live_server.url, key, retry=FAST) as folio,
    ):
        plain = folio.submit_url(f"{base}/report.pdf", pages="1")
        asked = folio.submit_url(
            f"{base}/report.pdf", pages="1", table_format="html", speaker_notes=True, comments=True
        )

    options = {str(job.pk): job.options for job in Job.objects.all()}
    assert plain.id != asked.id and plain.page_selection == asked.page_selection == "1"
    assert (options[plain.id]["table_format"], options[asked.id]["table_format"]) == (
        "auto",
        "html",
    )
    assert "speaker_notes" not in options[plain.id] and "comments" not in options[plain.id]
    assert options[asked.id]["speaker_notes"] is True and options[asked.id]["comments"] is True


@with_server
def test_a_jobs_pages_come_in_its_summary_on_request_and_a_page_at_a_time(
    live_server, key, tmp_path
):
    import asyncio

    from django.utils import timezone

    from webapp.jobs.models import Page

    pdf = pymupdf.open()
    for number in range(1, 602):
        pdf.new_page().insert_text((72, 72), f"Page {number}")
    source = tmp_path / "long.pdf"
    source.write_bytes(pdf.tobytes())
    with Client(live_server.url, key, retry=FAST) as folio:
        job = folio.submit(source)
        Page.objects.filter(job_id=job.id, number__in=[7, 300]).update(
            status=Page.Status.FAILED, error="unreadable", finished_at=timezone.now()
        )
        status = folio.job(job.id)
        detailed = folio.job(job.id, pages=True)
        listed = list(folio.iter_pages(job.id))
        failed = list(folio.iter_pages(job.id, status="failed"))
        reason = folio.with_failed_pages(status).failure_reason()

    async def pages_async() -> list[int]:
        async with AsyncClient(live_server.url, key, retry=FAST) as folio:
            return [page.number async for page in folio.iter_pages(job.id, status="failed")]

    assert status.pages is None and status.page_summary["total"] == 601
    # The module's worker may have taken some of the other pages meanwhile: every page is
    # counted in one state or another, and the two failed ones as failed.
    states = {key: count for key, count in status.page_summary.items() if key in Page.Status.values}
    assert status.page_summary["failed"] == 2 and sum(states.values()) == 601
    assert len(detailed.pages or []) == 601
    assert [page.number for page in listed] == list(range(1, 602))  # two requests of 500
    assert [page.number for page in failed] == [7, 300]
    assert asyncio.run(pages_async()) == [7, 300]
    assert reason == "page 7: unreadable; page 300: unreadable"


class ReadRecorder:
    """A binary file that remembers how much each read asked for."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("rb")
        self.name = str(path)
        self.reads: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.reads.append(size)
        return self.file.read(size)

    def __getattr__(self, name: str):
        return getattr(self.file, name)


@pytest.mark.slow
@with_server
def test_an_upload_is_streamed_from_the_file_in_chunks_never_read_whole(folio, worker, tmp_path):
    # Bytes after %%EOF are ignored by PDF readers: a 1 MiB file that is quick to read.
    data = documents.born_digital_pdf() + b"\n" + b"%" * (1024 * 1024)
    recorder = ReadRecorder(write(tmp_path, "padded.pdf", data))

    job = folio.wait(folio.submit(recorder, pages="1").id, timeout=60)

    assert job.succeeded and job.document.size == len(data)
    assert len(recorder.reads) > 10
    assert all(0 < size <= 64 * 1024 for size in recorder.reads)


@pytest.mark.slow
@with_server
def test_the_async_client_keeps_several_jobs_in_flight(live_server, key, worker, tmp_path):
    report = write(tmp_path, "report.pdf", documents.born_digital_pdf())
    page = write(tmp_path, "page.png", documents.png_page())

    async def convert_all() -> list[str]:
        async with AsyncClient(live_server.url, key, retry=FAST) as folio:
            return await asyncio.gather(
                folio.convert(report, pages="1", timeout=60),
                folio.convert(report, pages="3", timeout=60),
                folio.convert(page, timeout=60),
            )

    first, third, scan = asyncio.run(convert_all())

    assert documents.BORN_DIGITAL_PAGE_MARKERS[0] in first
    assert documents.BORN_DIGITAL_PAGE_MARKERS[2] in third
    assert "invoice" in scan.lower()


@pytest.mark.slow
@with_server
def test_a_document_at_a_url_is_fetched_by_the_server_and_followed_as_a_job(folio, worker):
    from django.test import override_settings

    from tests.document_server import document_server

    with document_server() as base_url, override_settings(FOLIO_SSRF_ALLOW=["127.0.0.1"]):
        job = folio.submit_url(f"{base_url}/report.pdf", pages="2")

    done = folio.wait(job.id, timeout=60)
    assert done.succeeded and [page.number for page in folio.iter_pages(job.id)] == [2]
    assert documents.BORN_DIGITAL_PAGE_MARKERS[1] in folio.result_markdown(job.id)


@pytest.mark.slow
@with_server
def test_jobs_are_listed_newest_first_page_by_page_and_usage_adds_up(folio, worker, tmp_path):
    report = write(tmp_path, "report.pdf", documents.born_digital_pdf())
    ids = [folio.submit(report, pages=str(number)).id for number in (1, 2, 3)]
    finished = [folio.wait(job_id, timeout=60) for job_id in ids]

    first = folio.jobs(page_size=2)
    assert (first.count, len(first.results), first.next is not None) == (3, 2, True)
    assert [job.id for job in folio.iter_jobs()] == ids[::-1]
    assert [
        job.id for job in folio.jobs(status="succeeded,failed", page=2, page_size=2).results
    ] == [ids[0]]
    usage = folio.usage()
    assert (usage.jobs, usage.pages) == (3, 3)
    assert usage.tokens == sum(job.usage.tokens for job in finished) > 0


@pytest.mark.slow
@with_server
def test_a_running_job_can_be_cancelled_and_its_result_is_a_conflict_until_it_ends(
    folio, worker, tmp_path
):
    job = folio.submit(write(tmp_path, "bundle.tiff", documents.multipage_tiff(6)))

    with pytest.raises(ConflictError) as unfinished:
        folio.result_markdown(job.id)
    cancelled = folio.cancel(job.id)

    assert unfinished.value.http_status == 409 and unfinished.value.status == 40901
    assert f"job {job.id} is" in unfinished.value.message
    assert cancelled.status == "cancelled"
    with pytest.raises(ConflictError, match="already ended"):
        folio.cancel(job.id)


@with_server
def test_server_errors_arrive_as_typed_exceptions_with_the_readers_status_and_message(
    live_server, folio, tmp_path
):
    stranger = Client(live_server.url, "folio_not-a-key", retry=FAST)
    with stranger, pytest.raises(AuthenticationError) as unauthenticated:
        stranger.jobs()
    with pytest.raises(NotFoundError) as missing:
        folio.job("00000000-0000-0000-0000-000000000000")
    with pytest.raises(UnprocessableError) as corrupt:
        folio.submit(write(tmp_path, "broken.pdf", documents.corrupt_pdf()))

    assert (unauthenticated.value.http_status, unauthenticated.value.status) == (401, 40103)
    assert (missing.value.status, missing.value.name) == (40401, "NotFoundError")
    assert corrupt.value.status == 42206 and corrupt.value.message
    assert corrupt.value.message in str(corrupt.value)


@pytest.mark.slow
@with_server
def test_a_429_with_retry_after_is_waited_out_and_not_hammered(proxy, key, worker, tmp_path):
    proxy.script += ["429:1", "429:1"]

    with Client(proxy.url, key, retry=FAST) as folio:
        job = folio.submit(write(tmp_path, "report.pdf", documents.born_digital_pdf()), pages="1")

    posts = proxy.requests_to("POST", "/v1/jobs")
    assert [seen.answer for seen in posts] == ["429:1", "429:1", "forward"]
    gaps = [later.at - earlier.at for earlier, later in zip(posts, posts[1:], strict=False)]
    assert all(gap >= 0.95 for gap in gaps), gaps
    assert job.status in ("queued", "running", "succeeded")


@with_server
def test_a_retry_after_longer_than_the_client_waits_is_raised_at_once_with_its_delay(
    proxy, key, tmp_path
):
    proxy.script.append("429:3600")

    with Client(proxy.url, key, retry=FAST) as folio, pytest.raises(RateLimitedError) as limited:
        folio.submit(write(tmp_path, "page.png", documents.png_page()))

    assert limited.value.http_status == 429 and limited.value.message == "slow down"
    assert len(proxy.requests_to("POST", "/v1/jobs")) == 1


@pytest.mark.slow
@with_server
def test_a_submission_whose_answer_was_lost_is_sent_again_and_gives_back_the_same_job(
    proxy, key, worker, tmp_path
):
    from webapp.jobs.models import Job

    proxy.script.append("drop")

    with Client(proxy.url, key, retry=FAST) as folio:
        job = folio.submit(write(tmp_path, "report.pdf", documents.born_digital_pdf()), pages="1")
        folio.wait(job.id, timeout=60)

    posts = proxy.requests_to("POST", "/v1/jobs")
    assert [seen.answer for seen in posts] == ["drop", "forward"]
    assert posts[0].headers["Idempotency-Key"] == posts[1].headers["Idempotency-Key"]
    assert [str(job_id) for job_id in Job.objects.values_list("id", flat=True)] == [job.id]


def test_connection_errors_are_retried_with_back_off_until_the_server_answers():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    class Models(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"object": "list", "data": [{"id": "local", "owned_by": "folio"}]}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    def serve_later() -> None:
        time.sleep(0.6)
        server = ThreadingHTTPServer(("127.0.0.1", port), Models)
        # Kept before it serves: the client may have its answer before this thread runs on.
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()

    servers: list[ThreadingHTTPServer] = []
    threading.Thread(target=serve_later, daemon=True).start()
    started = time.monotonic()
    policy = RetryPolicy(max_retries=10, backoff_base=0.1, backoff_max=0.3)
    with Client(f"http://127.0.0.1:{port}", "key", retry=policy) as folio:
        engines = folio.engines()

    assert [engine.id for engine in engines] == ["local"]
    assert time.monotonic() - started >= 0.6
    servers[0].shutdown()
    servers[0].server_close()


def test_configuration_comes_from_arguments_then_the_environment_then_a_file(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('url = "https://from-file.example"\napi_key = "file-key"\n')
    environ = {"FOLIO_CONFIG": str(config)}

    from_file = resolve(environ=environ)
    from_env = resolve(environ={**environ, "FOLIO_URL": "http://env.example/"})
    from_args = resolve(
        "http://arg.example", "arg-key", environ={**environ, "FOLIO_API_KEY": "env-key"}
    )
    nothing = resolve(environ={"FOLIO_CONFIG": str(tmp_path / "absent.toml")})

    assert (from_file.url, from_file.api_key) == ("https://from-file.example", "file-key")
    assert (from_env.url, from_env.api_key) == ("http://env.example", "file-key")
    assert (from_args.url, from_args.api_key, from_args.source) == (
        "http://arg.example",
        "arg-key",
        "argument",
    )
    assert (nothing.url, nothing.api_key) == ("http://127.0.0.1:8000", None)
