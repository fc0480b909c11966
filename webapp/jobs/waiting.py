"""Following a job as its pages finish, for callers that hold a request open (the Reader
endpoint, the chat endpoint, event streams). The database is polled: it is the source of
truth, and a missed notification can never leave a waiter hanging."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

from webapp.jobs.models import Job

POLL_START_SECONDS = 0.05
POLL_MAX_SECONDS = 0.5


def job_updates(*, job_id: uuid.UUID, timeout: float) -> Iterator[Job]:
    """The job each time another page has finished, ending with the final job, or with the
    job as it stands when ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    interval = POLL_START_SECONDS
    seen = None
    while True:
        job = Job.objects.select_related("document").get(pk=job_id)
        progress = (job.status, job.pages_done, job.pages_failed)
        if progress != seen or job.is_final:
            seen = progress
            interval = POLL_START_SECONDS
            yield job
        if job.is_final or time.monotonic() >= deadline:
            return
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
        interval = min(interval * 2, POLL_MAX_SECONDS)


def job_wait(*, job_id: uuid.UUID, timeout: float) -> Job:
    """The job once it is final, or as it stands after ``timeout`` seconds."""
    *_, last = job_updates(job_id=job_id, timeout=timeout)
    return last
