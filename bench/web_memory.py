"""Resident memory of each gunicorn worker of the web process, with PyMuPDF's layout model
kept out (``webapp.wsgi``, ``model/runtimes.py``) and let in (the entry point as it was: the
WSGI application alone, so that importing PyMuPDF loads pymupdf4llm, the layout package and
onnxruntime).

Method: gunicorn is started as `make run` starts it (``--workers 2 --threads 4``) on a free
port, against SQLite in a temporary folder, once per variant, the variants alternating for
``--rounds`` rounds. Each worker is warmed by requests that import the whole URL tree (every
view) and open an uploaded PDF the way a submission checks it: an anonymous Reader request
that the server must read before it can answer (``X-Page: 9`` of a one-page PDF, refused as
past the end, so nothing is queued). Then psutil reads every worker's RSS; the figure per
variant is the median over its workers and rounds, and the ratio is taken within the run.

    python bench/web_memory.py [--rounds 2] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pymupdf

REPOSITORY = Path(__file__).resolve().parents[1]
# The web process's entry point before the layout model was kept out of it.
WITH_LAYOUT_MODEL = """
import os
from django.core.wsgi import get_wsgi_application
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
application = get_wsgi_application()
"""
VARIANTS = {
    "layout model kept out": "webapp.wsgi",
    "layout model loaded": "with_layout:application",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_page_pdf() -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "One page, read only to be counted.")
    return bytes(doc.tobytes())


def warm(base_url: str, requests: int) -> None:
    """Requests spread over the workers: each imports the URL tree and opens the PDF."""
    pdf = one_page_pdf()

    def ask(_: int) -> None:
        with httpx.Client(base_url=base_url, timeout=120) as http:
            http.get("/v1/jobs")  # 401, after the URL tree is imported
            read = http.post("/", files={"file": ("a.pdf", pdf)}, headers={"X-Page": "9"})
            # The server opened the PDF: it knows the document has one page.
            assert read.status_code == 400 and "1 page" in read.text, read.text

    with ThreadPoolExecutor(max_workers=requests) as pool:
        list(pool.map(ask, range(requests)))


def measure(app: str, shim_dir: Path, env: dict[str, str], workers: int) -> list[float]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "gunicorn", app, "--bind", f"127.0.0.1:{port}",
            "--workers", str(workers), "--threads", "4", "--pythonpath", str(shim_dir),
            "--timeout", "300",
        ],
        cwd=REPOSITORY, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                httpx.get(f"{base_url}/healthz", timeout=5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"gunicorn ({app}) did not start") from None
                time.sleep(0.5)
        warm(base_url, requests=8 * workers)
        children = psutil.Process(process.pid).children()
        return [child.memory_info().rss / 2**20 for child in children]
    finally:
        process.terminate()
        process.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        shim_dir = Path(folder)
        (shim_dir / "with_layout.py").write_text(WITH_LAYOUT_MODEL)
        environ = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env = dict(
            environ,
            DJANGO_SETTINGS_MODULE="webapp.settings",
            FOLIO_VAR_DIR=str(shim_dir / "var"),
            FOLIO_REFUSE_UNSERVED_ENGINES="0",
            PYTHONPATH=str(REPOSITORY),
        )
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
            cwd=REPOSITORY, env=env, check=True,
        )  # fmt: skip
        samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(args.rounds):
            for name, app in VARIANTS.items():
                rss = measure(app, shim_dir, env, args.workers)
                print(f"{name}: workers' RSS {', '.join(f'{v:.0f}' for v in rss)} MiB", flush=True)
                samples[name].extend(rss)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    for name, value in medians.items():
        print(f"{name}: median {value:.0f} MiB per worker")
    kept, loaded = medians["layout model kept out"], medians["layout model loaded"]
    print(f"kept out / loaded: {kept / loaded:.2f} ({loaded - kept:.0f} MiB less per worker)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
