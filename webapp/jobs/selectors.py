"""Reads for jobs and pages, always scoped to their owner."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Count, F, QuerySet
from django.utils import timezone

from model.engines.auto import AUTO
from webapp.jobs.models import Job, Page


def jobs_of(*, owner: User) -> QuerySet[Job]:
    return Job.objects.filter(owner=owner).select_related("document")


def job_get(*, owner: User, job_id) -> Job | None:
    """The job if ``owner`` owns it; another user's job is indistinguishable from none."""
    return jobs_of(owner=owner).filter(pk=job_id).first()


def jobs_filtered(
    *,
    owner: User,
    statuses: Iterable[str] = (),
    created_after: datetime | None = None,
    created_before: datetime | None = None,
) -> QuerySet[Job]:
    jobs = jobs_of(owner=owner)
    statuses = list(statuses)
    if statuses:
        jobs = jobs.filter(status__in=statuses)
    if created_after is not None:
        jobs = jobs.filter(created_at__gte=created_after)
    if created_before is not None:
        jobs = jobs.filter(created_at__lt=created_before)
    return jobs.order_by("-created_at", "-pk")


def job_progress(*, job: Job, now: datetime | None = None) -> dict:
    """Pages done/failed/cancelled of the total, time spent, and an estimate of the time left.

    The estimate is the pace so far (finished pages per second of wall time since the first
    claim) applied to the pages left: wall time, not engine time, so it already accounts for
    how many workers share the job. ``None`` until one page has finished."""
    now = now or timezone.now()
    finished = job.pages_done + job.pages_failed + job.pages_cancelled
    end = job.finished_at if job.is_final and job.finished_at else now
    elapsed = max((end - job.created_at).total_seconds(), 0.0)
    eta: float | None = 0.0 if job.is_final else None
    if not job.is_final and job.started_at and finished:
        pace = max((now - job.started_at).total_seconds(), 0.0) / finished
        eta = round(pace * (job.pages_total - finished), 1)
    return {
        "total": job.pages_total,
        "done": job.pages_done,
        "failed": job.pages_failed,
        "cancelled": job.pages_cancelled,
        "percent": round(100 * finished / job.pages_total, 1) if job.pages_total else 100.0,
        "elapsed_seconds": round(elapsed, 1),
        "eta_seconds": eta,
    }


def job_auto_summary(*, job: Job) -> dict | None:
    """What an ``auto`` job's pages came to (``None`` for other jobs): the pages a VLM engine
    read again, their share of the job's pages, the seconds the VLM engines spent, and the
    pages whose score passed the threshold but stayed as ``local`` read them (no VLM engine
    served, or the token budget spent), with a note saying so."""
    if job.engine != AUTO:
        return None
    share = job.pages_escalated / job.pages_total if job.pages_total else 0.0
    summary: dict = {
        "threshold": settings.FOLIO_AUTO_THRESHOLD,
        "pages_escalated": job.pages_escalated,
        "share_escalated": round(share, 3),
        "vlm_seconds": round(job.vlm_seconds, 3),
        "pages_left_local": job.pages_left_local,
    }
    if job.pages_left_local:
        summary["note"] = (
            f"{job.pages_left_local} page(s) whose review score reached the threshold stayed "
            "as the local engine read them: no VLM engine was served, or the job's token "
            "budget was spent"
        )
    return summary


def job_pages(*, job: Job) -> QuerySet[Page]:
    return job.pages.order_by("number")


def job_page_summary(*, job: Job) -> dict:
    """How many of the job's pages are in each state, and how many need review: what a
    status poll needs, the same size for a page or two thousand (one grouped count)."""
    grouped = job.pages.order_by().values("status").annotate(count=Count("pk"))
    counts = {row["status"]: row["count"] for row in grouped}
    return {
        "total": job.pages_total,
        **{status: counts.get(status, 0) for status in Page.Status.values},
        "needs_review": job.pages_needing_review,
    }


def job_pages_listed(
    *,
    job: Job,
    statuses: Iterable[str] = (),
    needs_review: bool | None = None,
    finished_after: datetime | None = None,
    sort: str = "number",
) -> QuerySet[Page]:
    """The job's pages for the page list: in page order, or the most doubtful first
    (``sort="review"``), filtered by status, review flag, or finishing after a moment (what
    a poller has not seen yet)."""
    pages = job.pages.all()
    statuses = list(statuses)
    if statuses:
        pages = pages.filter(status__in=statuses)
    if needs_review is not None:
        pages = pages.filter(needs_review=needs_review)
    if finished_after is not None:
        pages = pages.filter(finished_at__gt=finished_after)
    if sort == "review":
        return pages.order_by(F("review_score").desc(nulls_last=True), "number")
    return pages.order_by("number")


def job_pages_for_review(*, job: Job, view: str = "") -> QuerySet[Page]:
    """The job's pages in order (""), by review score, highest first ("first"), or only the
    pages that need review ("only", most doubtful first)."""
    pages = job.pages.all()
    if view == "only":
        pages = pages.filter(needs_review=True)
    if view in ("first", "only"):
        return pages.order_by(F("review_score").desc(nulls_last=True), "number")
    return pages.order_by("number")


def page_text(page: Page) -> str:
    """A page's part of a result: its Markdown, or a visible note if it failed."""
    if page.status == Page.Status.SUCCEEDED:
        return page.markdown.strip()
    if page.status == Page.Status.FAILED:
        return f"<!-- page {page.number} failed: {page.error} -->"
    return ""


def job_markdown(*, job: Job) -> str:
    """The pages' Markdown joined in page order; a failed page leaves a visible note."""
    pages = job_pages(job=job).only("number", "status", "markdown", "error")
    return "\n\n".join(text for page in pages if (text := page_text(page))) + "\n"


def job_unread_script_pages(*, job: Job) -> list[int]:
    """The pages holding text in a script no installed OCR model reads (the local engine's
    ``unread_script``): their Markdown lacks it."""
    pages = job.pages.filter(extra__has_key="unread_script").order_by("number")
    return list(pages.values_list("number", flat=True))


def job_pages_finished_in_order(*, job: Job, after: int) -> list[Page]:
    """The finished pages past the first ``after``, stopping at the first unfinished one, so
    that a stream of pages never skips ahead of a page still being read."""
    ready = []
    for page in job_pages(job=job)[after:]:
        if page.status not in (Page.Status.SUCCEEDED, Page.Status.FAILED):
            break
        ready.append(page)
    return ready
