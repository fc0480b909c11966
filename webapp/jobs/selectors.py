"""Reads for jobs and pages, always scoped to their owner."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from webapp.jobs.models import Job, Page


def jobs_of(*, owner: AbstractBaseUser) -> QuerySet[Job]:
    return Job.objects.filter(owner=owner).select_related("document")


def job_get(*, owner: AbstractBaseUser, job_id) -> Job | None:
    """The job if ``owner`` owns it; another user's job is indistinguishable from none."""
    return jobs_of(owner=owner).filter(pk=job_id).first()


def job_pages(*, job: Job) -> QuerySet[Page]:
    return job.pages.order_by("number")


def job_markdown(*, job: Job) -> str:
    """The pages' Markdown joined in page order; a failed page leaves a visible note."""
    parts = []
    for page in job_pages(job=job).only("number", "status", "markdown", "error"):
        if page.status == Page.Status.SUCCEEDED:
            parts.append(page.markdown.strip())
        elif page.status == Page.Status.FAILED:
            parts.append(f"<!-- page {page.number} failed: {page.error} -->")
    return "\n\n".join(part for part in parts if part) + "\n"
