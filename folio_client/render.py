"""The CLI's output layer: everything ``folio`` writes to stdout goes through here (text for
people, or JSON with ``--json``); progress and errors go to stderr."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from folio_client.convert import Outcome, Run
from folio_client.models import Engine, Health, Job, JobList


def _when(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def print_json(console: Console, data: Any) -> None:
    # Plain text, not rich's pretty JSON: pipes get exactly one JSON document.
    console.file.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    console.file.flush()


def summary_data(run: Run) -> dict[str, Any]:
    counts = Counter(outcome.status for outcome in run.outcomes)
    pages = sum(outcome.pages for outcome in run.outcomes)
    wall = run.wall_seconds
    return {
        "files": len(run.outcomes),
        "converted": counts["converted"],
        "skipped": counts["skipped"],
        "failed": counts["failed"],
        "pages": pages,
        "failed_pages": sum(outcome.failed_pages for outcome in run.outcomes),
        "tokens": sum(outcome.tokens for outcome in run.outcomes),
        "wall_seconds": round(wall, 3),
        "pages_per_second": round(pages / wall, 3) if wall > 0 else None,
        "results": [_outcome_data(outcome) for outcome in run.outcomes],
    }


def _outcome_data(outcome: Outcome) -> dict[str, Any]:
    return {
        "input": str(outcome.item.source),
        "output": str(outcome.item.output),
        "status": outcome.status,
        "job_id": outcome.job_id,
        "pages": outcome.pages,
        "failed_pages": outcome.failed_pages,
        "tokens": outcome.tokens,
        "seconds": round(outcome.seconds, 3),
        "reason": outcome.reason or None,
    }


def print_summary(console: Console, run: Run, *, quiet: bool) -> None:
    data = summary_data(run)
    failures = [outcome for outcome in run.outcomes if outcome.status == "failed"]
    if not quiet:
        rate = data["pages_per_second"]
        console.print(
            f"{data['files']} files: {data['converted']} converted, {data['skipped']} skipped, "
            f"{data['failed']} failed; {data['pages']} pages"
            + (f" ({data['failed_pages']} failed)" if data["failed_pages"] else "")
            + f", {data['tokens']} tokens, {data['wall_seconds']:.1f} s"
            + (f", {rate:.2f} pages/s" if rate else ""),
            highlight=False,
        )
    for outcome in failures:
        console.print(
            f"failed: {escape(str(outcome.item.source))}: {escape(outcome.reason)}",
            highlight=False,
            soft_wrap=True,
        )


def job_data(job: Job) -> dict[str, Any]:
    return job.raw


def print_jobs(console: Console, listing: JobList) -> None:
    table = Table(box=None, pad_edge=False)
    # The id is what a person copies into the next command: never cut it short.
    table.add_column("id", no_wrap=True, min_width=36)
    for column in ("status", "pages", "engine"):
        table.add_column(column, no_wrap=True)
    table.add_column("document", overflow="ellipsis", no_wrap=True)
    table.add_column("created", no_wrap=True)
    for job in listing.results:
        progress = job.progress
        table.add_row(
            job.id,
            job.status,
            f"{progress.done}/{progress.total}",
            job.engine,
            job.document.name,
            _when(job.created_at),
        )
    console.print(table)
    console.print(
        f"{len(listing.results)} of {listing.count} jobs (page {listing.page})", highlight=False
    )


def print_job(console: Console, job: Job) -> None:
    progress = job.progress
    eta = "" if progress.eta_seconds in (None, 0) else f", eta {progress.eta_seconds:.0f} s"
    lines = [
        f"job       {job.id}",
        f"status    {job.status}",
        f"document  {job.document.name} ({job.document.mime_type}, {job.document.size} bytes)",
        f"engine    {job.engine}",
        f"pages     {progress.done} done, {progress.failed} failed, {progress.cancelled} "
        f"cancelled of {progress.total} ({progress.percent:.0f} %{eta})",
        f"tokens    {job.usage.tokens} ({job.usage.input_tokens} in, "
        f"{job.usage.output_tokens} out)",
        f"created   {_when(job.created_at)}",
        f"finished  {_when(job.finished_at)}",
    ]
    if job.auto is not None:
        lines.append(
            f"auto      {job.auto.get('pages_escalated', 0)} pages read again by a VLM "
            f"({100 * float(job.auto.get('share_escalated') or 0):.0f} %), "
            f"{float(job.auto.get('vlm_seconds') or 0):.1f} s of VLM time"
        )
        if job.auto.get("note"):
            lines.append(f"          {job.auto['note']}")
    if job.error:
        lines.append(f"error     {job.error}")
    for page in job.pages or []:
        if page.status == "failed":
            lines.append(f"page {page.number}    failed: {page.error}")
        elif page.escalated:
            assert page.escalation is not None
            lines.append(
                f"page {page.number}    read again by {page.escalation.get('engine')}, kept "
                f"{page.engine}'s reading: {page.escalation.get('why', '')}"
            )
    console.print(escape("\n".join(lines)), highlight=False)


def print_engines(console: Console, engines: list[Engine]) -> None:
    for engine in engines:
        console.print(escape(engine.id), highlight=False)


def health_data(health: Health, url: str) -> dict[str, Any]:
    return {"url": url, "live": health.live, "ready": health.ready, "checks": health.checks}


def print_health(console: Console, health: Health, url: str) -> None:
    state = "ready" if health.ready else ("up, not ready" if health.live else "unreachable")
    console.print(f"{escape(url)}: {state}", highlight=False)
    for name, check in health.checks.items():
        detail = check.get("error") or ", ".join(check.get("engines", [])) or ""
        mark = "ok" if check.get("ok") else "FAIL"
        console.print(f"  {name:9} {mark}  {escape(detail)}".rstrip(), highlight=False)
