"""Real Celery worker processes for the tests, started against the test database."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
from django.db import connection

from ocr_worker.celery_app import app
from webapp.core.workers import (
    INDEX_KEY,
    RECORD_PREFIX,
    broker_redis,
    workers_cache_clear,
    workers_seen,
)

REPOSITORY = Path(__file__).resolve().parents[1]
LOG_DIR = REPOSITORY / "test-output" / "workers"


# `make test-fast` sets it: the edit-run loop's tier, which starts no worker or browser.
FAST_TIER = os.environ.get("FOLIO_TEST_TIER") == "fast"


def refuse_in_the_fast_tier(what: str) -> None:
    """A test that needs a worker process or a browser belongs to the slow tier: say so
    instead of letting the fast tier grow slow."""
    if FAST_TIER:
        raise RuntimeError(
            f"this test {what}: mark it @pytest.mark.slow (docs/ARCHITECTURE.md, Tests)"
        )


def test_database_url() -> str:
    """The URL of the database pytest-django made, for processes outside this one."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return (
        f"postgres://{user}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )


class WorkerProcess:
    """``celery worker`` in a process group of its own, so that a test can kill it whole."""

    def __init__(
        self,
        *,
        queues: str = "ocr.local,folio",
        concurrency: int = 1,
        env: dict | None = None,
        pool: str = "prefork",
    ):
        self.name = f"test-{uuid.uuid4().hex[:8]}@localhost"
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"{self.name.split('@')[0]}.log"
        self.command = [
            sys.executable, "-m", "celery", "-A", "ocr_worker", "worker",
            "-Q", queues, "-n", self.name, "--concurrency", str(concurrency),
            "--pool", pool, "--loglevel", "INFO", "--without-gossip", "--without-mingle",
        ]  # fmt: skip
        self.env = {**os.environ, "DATABASE_URL": test_database_url(), **(env or {})}
        self.process: subprocess.Popen | None = None

    def start(self, *, timeout: float = 60) -> WorkerProcess:
        refuse_in_the_fast_tier("starts a worker process")
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command, env=self.env, cwd=REPOSITORY, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            return self._wait_started(timeout)
        except BaseException:
            # `with worker.start()` never reaches __exit__ when start raises: a worker that
            # missed its deadline (and the engine it was loading, vLLM's engine core among
            # its descendants) would otherwise outlive the test holding memory.
            self.stop()
            raise

    def _wait_started(self, timeout: float) -> WorkerProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited at start; see {self.log_path}")
            if app.control.ping(destination=[self.name], timeout=0.5) and self._heard():
                return self
        raise TimeoutError(
            f"worker did not answer a ping and write its heartbeat in {timeout} s; "
            f"see {self.log_path}"
        )

    def _heard(self) -> bool:
        """Whether its serving heartbeat is written (the web reads which engines are served
        from it); a worker of the maintenance queue alone writes one too."""
        return self.name in {seen.node for seen in workers_seen(fresh=True)}

    def children(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def kill_process(self, pid: int) -> None:
        """SIGKILL one process of this worker (a prefork child doing a page)."""
        assert pid in {child.pid for child in self.children()}, f"{pid} is not one of ours"
        os.kill(pid, signal.SIGKILL)

    def kill_group(self) -> None:
        """SIGKILL the parent and every child at once, as a lost machine would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, *, timeout: float = 20, forget: bool = True) -> None:
        """Stop it (SIGTERM, then SIGKILL past ``timeout``). ``forget``: and delete its
        heartbeat, as if its grace period had passed, so that the next test starts with no
        worker seen (the tests of that grace period keep it)."""
        if self.process is None or self.process.poll() is not None:
            if forget:
                forget_heartbeats(self.name)
            return
        # Engines may start helpers in sessions of their own (vLLM's engine core): remember
        # every descendant now, so none outlives the test holding memory.
        descendants = self.children()
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        _gone, alive = psutil.wait_procs(descendants, timeout=10)
        for survivor in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                survivor.kill()
        if forget:
            forget_heartbeats(self.name)

    def wait_idle(self, *, timeout: float = 60) -> None:
        """Return once this worker holds no task, running or prefetched."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            inspect = app.control.inspect(destination=[self.name], timeout=1)
            held = [inspect.active(), inspect.reserved()]
            if all(tasks is not None and not tasks.get(self.name) for tasks in held):
                return
            time.sleep(0.2)
        raise TimeoutError(f"worker still busy after {timeout} s; see {self.log_path}")

    def __enter__(self) -> WorkerProcess:
        # `with worker.start(timeout=...)` must not start a second worker beside the first.
        return self if self.process is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def forget_heartbeats(*nodes: str) -> None:
    """Delete the serving heartbeats of these worker nodes (of every node with none): test
    workers are gone for good when a test ends, and the next test must not count them for
    the grace period."""
    with broker_redis() as redis:
        names = nodes or tuple(member.decode() for member in redis.smembers(INDEX_KEY))
        if names:
            redis.delete(*(RECORD_PREFIX + name for name in names))
            redis.srem(INDEX_KEY, *names)
    workers_cache_clear()


def purge_queues(*queues: str) -> None:
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        for queue in queues:
            with contextlib.suppress(Exception):  # a queue never declared is empty anyway
                channel.queue_purge(queue)
