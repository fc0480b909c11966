"""``folio convert``: many files through the server at once, each submitted, followed and
written, with a fixed number of files in flight.

A file's output is written to a temporary name and renamed into place, so that an
interrupted run never leaves a half-written output that the next run would take as done.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from folio_client._calls import poll_delay
from folio_client.aio import AsyncClient
from folio_client.errors import ApiError, AuthenticationError, ConflictError, FolioError
from folio_client.models import Job
from folio_client.plan import Item

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConvertOptions:
    pages: str | None = None
    engine: str | None = None
    fmt: str = "md"
    concurrency: int = 4
    force: bool = False
    # Office documents: a presentation's speaker notes, reviewers' comments (the jobs API's
    # options of the same names).
    speaker_notes: bool = False
    comments: bool = False
    # A scan's language for the lines the server's bundled OCR cannot read ("kor").
    ocr_language: str | None = None
    poll_min: float = 0.25
    poll_max: float = 2.0


@dataclass
class Outcome:
    item: Item
    status: str  # converted | skipped | failed
    job_id: str | None = None
    pages: int = 0
    failed_pages: int = 0
    tokens: int = 0
    seconds: float = 0.0
    reason: str = ""


class Display(Protocol):
    """What the run tells the person watching (see progress.py)."""

    def started(self, item: Item) -> None: ...
    def progressed(self, item: Item, *, done: int, total: int, status: str) -> None: ...
    def finished(self, outcome: Outcome) -> None: ...


@dataclass
class Run:
    items: list[Item]
    options: ConvertOptions
    outcomes: list[Outcome] = field(default_factory=list)
    in_flight: dict[str, Item] = field(default_factory=dict)  # job id -> item
    started: float = field(default_factory=time.monotonic)
    wall_seconds: float = 0.0


def _write_atomically(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


async def _output_text(client: AsyncClient, job: Job, fmt: str) -> str | bytes:
    if fmt == "json":
        result = await client.result(job.id)
        return json.dumps(result.raw, ensure_ascii=False, indent=2) + "\n"
    if fmt in ("blocks", "chunks"):
        fetch = client.result_blocks if fmt == "blocks" else client.result_chunks
        return json.dumps(await fetch(job.id), ensure_ascii=False, indent=2) + "\n"
    if fmt == "pdf":
        return await client.result_pdf(job.id)
    text = await client.result_markdown(job.id)
    return text if text.endswith("\n") else text + "\n"


async def _follow(client: AsyncClient, job: Job, item: Item, run: Run, display: Display) -> Job:
    """Poll one job until it is final, reporting its pages as they finish."""
    polls = 0
    options = run.options
    while not job.is_final:
        display.progressed(
            item, done=job.progress.finished, total=job.progress.total, status=job.status_line
        )
        await asyncio.sleep(
            poll_delay(job, polls, minimum=options.poll_min, maximum=options.poll_max)
        )
        polls += 1
        job = await client.job(job.id)
    display.progressed(
        item, done=job.progress.finished, total=job.progress.total, status=job.status
    )
    return job


async def convert_one(client: AsyncClient, item: Item, run: Run, display: Display) -> Outcome:
    options = run.options
    started = time.monotonic()
    display.started(item)
    job_id = None
    try:
        job = await client.submit(
            item.source,
            pages=options.pages,
            engine=options.engine,
            speaker_notes=options.speaker_notes,
            comments=options.comments,
            ocr_language=options.ocr_language,
        )
        job_id = job.id
        run.in_flight[job_id] = item
        display.progressed(item, done=0, total=job.progress.total, status=job.status)
        job = await _follow(client, job, item, run, display)
        outcome = Outcome(
            item=item,
            status="converted" if job.succeeded else "failed",
            job_id=job.id,
            pages=job.progress.done,
            failed_pages=job.progress.failed + job.progress.cancelled,
            tokens=job.usage.tokens,
        )
        if job.succeeded:
            _write_atomically(item.output, await _output_text(client, job, options.fmt))
            with contextlib.suppress(FileNotFoundError):
                item.partial_output.unlink()
        else:
            job = await client.with_failed_pages(job)  # their reasons say why
            outcome.reason = job.failure_reason()
            if job.status == "partially_failed":
                partial = await _output_text(client, job, options.fmt)
                _write_atomically(item.partial_output, partial)
    except AuthenticationError:
        raise  # the key, not this file: every other file would fail the same way
    except ApiError as exc:
        outcome = Outcome(item=item, status="failed", job_id=job_id, reason=exc.message or str(exc))
    except FolioError as exc:
        outcome = Outcome(item=item, status="failed", job_id=job_id, reason=str(exc))
    except OSError as exc:
        outcome = Outcome(
            item=item, status="failed", job_id=job_id, reason=f"{type(exc).__name__}: {exc}"
        )
    # Not in a `finally`: a run that is being interrupted must still see this job to cancel it.
    if job_id is not None:
        run.in_flight.pop(job_id, None)
    outcome.seconds = time.monotonic() - started
    display.finished(outcome)
    return outcome


async def convert_all(client: AsyncClient, run: Run, display: Display) -> list[Outcome]:
    """Skip what is done, then keep ``concurrency`` files in flight until all are through."""
    queue: asyncio.Queue[Item] = asyncio.Queue()
    for item in run.items:
        if not run.options.force and item.is_fresh():
            outcome = Outcome(item=item, status="skipped", reason="output is newer than input")
            run.outcomes.append(outcome)
            display.finished(outcome)
        else:
            queue.put_nowait(item)

    async def worker() -> None:
        while True:
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            run.outcomes.append(await convert_one(client, item, run, display))

    workers = [asyncio.create_task(worker()) for _ in range(max(1, run.options.concurrency))]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for task in workers:
            task.cancel()
        await _cancel_in_flight(client, run)
        raise
    finally:
        run.wall_seconds = time.monotonic() - run.started
    return run.outcomes


async def _cancel_in_flight(client: AsyncClient, run: Run) -> None:
    """An interrupted run cancels the jobs it started, so the server stops spending on them."""
    for job_id in list(run.in_flight):
        try:
            await asyncio.wait_for(client.cancel(job_id), timeout=5)
        except ConflictError:
            pass  # it ended meanwhile: nothing to stop (the next run submits the file again)
        except (FolioError, TimeoutError) as exc:
            logger.warning("could not cancel job %s: %s", job_id, exc)
