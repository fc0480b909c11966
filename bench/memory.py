"""Worker memory over many pages: the resident memory (RSS) of each Celery worker process of
`python -m webapp.embedded` while it transcribes --pages pages, with and without recycling.

Method: the service is started as `bench/throughput.py` starts it (`embedded_service`), with
FOLIO_WORKER_MAX_TASKS_PER_CHILD=--max-tasks-per-child (0: processes are never replaced).
Ten-page PDFs of scanned pages (the OCR path, where the local engine holds the most memory),
each page with its own text so that the result cache answers none, are submitted in turn,
at most --in-flight documents at once. Every second, psutil reads the RSS of every process
whose command line is the Celery worker's, under the service's process group; the report
gives the prefork children's RSS after the first document (warm: engines loaded), the peak,
the last sample, and the growth per 100 pages between the warm and the last sample. For
sizing a worker container, it also samples the whole worker (its main process and every
child) as the kernel charges it to a container's memory limit: the sum of each process's
proportional set size (PSS: pages the prefork children share with their parent counted once),
and reports that sum's peak.

On a 2-core machine the default is 200 pages; the issue's figure is `--pages 2000`.

    python bench/memory.py [--pages 200] [--max-tasks-per-child 0] [--processes 2]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput import ACTIVE, embedded_service  # noqa: E402  (a sibling script)

PAGES_PER_DOCUMENT = 10
SAMPLE_SECONDS = 1.0


def scanned_pdf(first_line: int) -> bytes:
    """Ten scanned pages (images, no text layer), each with its own line numbers."""
    scans = pymupdf.open()
    for page_index in range(PAGES_PER_DOCUMENT):
        text = pymupdf.open()
        page = text.new_page(width=420, height=300)
        page.insert_text((30, 80), f"Memory page {first_line + page_index}", fontsize=22)
        page.insert_text((30, 140), "Tide tables for the outer harbour", fontsize=16)
        pixmap = page.get_pixmap(dpi=100)
        scan = scans.new_page(width=420, height=300)
        scan.insert_image(scan.rect, stream=pixmap.tobytes("png"))
    return scans.tobytes()


def worker_children(service_pid: int) -> list[psutil.Process]:
    """The prefork children: processes whose parent is the Celery worker's main process."""
    children = []
    for process in psutil.Process(service_pid).children(recursive=True):
        try:
            command = " ".join(process.cmdline())
            parent = " ".join(process.parent().cmdline())
        except psutil.Error:
            continue
        if "celery" in command and "worker" in command and "celery" in parent:
            children.append(process)
    return children


def worker_pss_mib(children: list[psutil.Process]) -> float:
    """The whole worker's memory: its main process and its children, PSS summed."""
    if not children:
        return 0.0
    try:
        tree = [children[0].parent(), *children]
    except psutil.Error:
        tree = children
    total = 0
    for process in tree:
        try:
            total += process.memory_full_info().pss
        except psutil.Error:
            continue
    return total / 2**20


def rss_mib(processes: list[psutil.Process]) -> dict[int, float]:
    sizes = {}
    for process in processes:
        try:
            sizes[process.pid] = process.memory_info().rss / 2**20
        except psutil.Error:
            continue
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=200, help="2000 for the issue's figure")
    parser.add_argument("--max-tasks-per-child", type=int, default=0)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=4, help="documents submitted at once")
    parser.add_argument("--external", action="store_true", help="use DATABASE_URL/FOLIO_BROKER_URL")
    args = parser.parse_args()

    documents = max(1, args.pages // PAGES_PER_DOCUMENT)
    env = {
        "FOLIO_WORKER_MAX_TASKS_PER_CHILD": str(args.max_tasks_per_child),
        "FOLIO_REQUESTS_PER_MINUTE": "0",
    }
    print(
        f"{documents * PAGES_PER_DOCUMENT} scanned pages, {args.processes} worker processes, "
        f"max tasks per child {args.max_tasks_per_child or 'unlimited'}"
    )
    with embedded_service(args.processes, args.external, env) as (base_url, key, pid):
        client = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=120
        )
        samples: list[tuple[float, int, dict[int, float]]] = []  # (time, pages done, rss)
        whole: list[float] = []  # the whole worker's PSS, MiB
        done = [0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                children = worker_children(pid)
                samples.append((time.time(), done[0], rss_mib(children)))
                whole.append(worker_pss_mib(children))
                stop.wait(SAMPLE_SECONDS)

        def one(index: int) -> str:
            data = scanned_pdf(index * PAGES_PER_DOCUMENT)
            job = client.post("/v1/jobs", files={"file": (f"m{index}.pdf", data)}).json()
            while job["status"] in ACTIVE:
                time.sleep(0.5)
                job = client.get(job["links"]["self"]).json()
            done[0] += PAGES_PER_DOCUMENT
            return job["status"]

        one(-1)  # warm-up: every process that took a page has loaded its engine
        warm = rss_mib(worker_children(pid))
        done[0] = 0
        sampler = threading.Thread(target=sample)
        sampler.start()
        started = time.time()
        statuses: dict[str, int] = {}
        lock = threading.Lock()
        pending = list(range(documents))

        def loop() -> None:
            while True:
                with lock:
                    if not pending:
                        return
                    index = pending.pop(0)
                status = one(index)
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1

        threads = [threading.Thread(target=loop) for _ in range(args.in_flight)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stop.set()
        sampler.join()
        elapsed = time.time() - started

    peak = max((max(s[2].values(), default=0.0) for s in samples), default=0.0)
    last = samples[-1][2] if samples else {}
    print(f"jobs: {statuses}; {done[0]} pages in {elapsed:.0f} s")
    print(
        f"warm (after the first document), per child: {sorted(round(v) for v in warm.values())} MiB"
    )
    print(f"peak of any child: {peak:.0f} MiB")
    print(
        f"peak of the whole worker ({args.processes} processes and their parent, PSS): "
        f"{max(whole, default=0.0):.0f} MiB"
    )
    print(f"last sample, per child: {sorted(round(v) for v in last.values())} MiB")
    if warm and last and done[0]:
        growth = (sum(last.values()) / len(last) - sum(warm.values()) / len(warm)) / done[0] * 100
        print(f"mean child growth: {growth:+.1f} MiB per 100 pages")


if __name__ == "__main__":
    main()
