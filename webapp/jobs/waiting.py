"""Following a job as its pages finish, for callers that hold a request open (the Reader
endpoint, the chat endpoint, event streams). The database is polled: it is the source of
truth, and a missed notification can never leave a waiter hanging."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from functools import cache

from django.conf import settings

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


# --- how many requests may wait at once ------------------------------------------------------
# A waiting request holds one of its web process's threads for as long as it waits (up to
# 180 s). Ten Reader requests with `X-Timeout: 60` took every thread of a web process, and
# another user's `GET /v1/jobs` waited 57 s behind them. So only FOLIO_READER_WAITERS requests
# of a process wait at a time; beyond them a request answers at once as if its time had run
# out (a 202 with its poll link), and the threads left answer everyone else.


@cache
def _slots(limit: int) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(limit)


class WaiterSlot:
    """One of this process's waiting slots, or none (``taken`` says which). Released by
    ``release()`` or ``close()``, once, however often they are called: a streaming response
    closes it when its stream ends or its client goes away (Django closes what it iterates)."""

    def __init__(self) -> None:
        self.semaphore = _slots(settings.FOLIO_READER_WAITERS)
        self.taken = self.semaphore.acquire(blocking=False)
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            if self.taken:
                self.taken = False
                self.semaphore.release()

    def handed_over(self) -> WaiterSlot:
        """This slot's claim, moved to a new holder (a stream that outlives the view); this
        one no longer releases it."""
        successor = WaiterSlot.__new__(WaiterSlot)
        successor.semaphore, successor._lock = self.semaphore, threading.Lock()
        with self._lock:
            successor.taken, self.taken = self.taken, False
        return successor

    def __enter__(self) -> WaiterSlot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class HeldWhileStreaming:
    """A streaming body that holds ``slot`` until it ends or is closed, even if it is closed
    before its first item (a generator's ``finally`` would not run then)."""

    def __init__(self, frames: Iterator[str], slot: WaiterSlot):
        self.frames = frames
        self.slot = slot

    def __iter__(self) -> Iterator[str]:
        try:
            yield from self.frames
        finally:
            self.slot.release()

    def close(self) -> None:
        close = getattr(self.frames, "close", None)
        if close is not None:
            close()
        self.slot.release()
