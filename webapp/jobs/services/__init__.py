"""Writes for documents, jobs and pages: the one place where their state changes.

The web side calls ``job_submit`` (``submission``); the worker calls ``page_claim`` and then
exactly one of ``page_complete``, ``page_fail``, ``page_retry_later`` or ``page_hand_off`` with
the claim it got (``page_lifecycle``); beat runs the reaper (``maintenance``) and retention
(``job_lifecycle``, beside cancel and delete). Callers import from this package.
"""

from webapp.jobs.services.job_lifecycle import (
    job_cancel,
    job_delete,
    job_files_delete,
    jobs_expire,
    stored_files_delete_unused,
)
from webapp.jobs.services.maintenance import pages_reap
from webapp.jobs.services.options import (
    TABLE_FORMATS,
    CachePolicy,
    JobOptions,
    Refusal,
    SubmissionError,
)
from webapp.jobs.services.page_images import (
    office_page_images_record,
    page_image_drawing_claim,
    page_image_name,
    page_image_render_request,
    page_images_save,
)
from webapp.jobs.services.page_lifecycle import (
    PageClaim,
    figure_name_is_plain,
    figure_storage_name,
    page_claim,
    page_complete,
    page_fail,
    page_fail_stopped,
    page_hand_off,
    page_retry_later,
    retention_expiry,
)
from webapp.jobs.services.sending import pages_send
from webapp.jobs.services.submission import (
    CACHE_METHOD,
    Submission,
    job_create,
    job_submit,
    jobs_submit_together,
    submission_validate,
    upload_size_check,
)

__all__ = [
    "CACHE_METHOD",
    "TABLE_FORMATS",
    "CachePolicy",
    "JobOptions",
    "PageClaim",
    "Refusal",
    "Submission",
    "SubmissionError",
    "figure_name_is_plain",
    "figure_storage_name",
    "job_cancel",
    "job_files_delete",
    "job_create",
    "job_delete",
    "job_submit",
    "jobs_submit_together",
    "jobs_expire",
    "page_claim",
    "page_complete",
    "page_fail",
    "page_fail_stopped",
    "page_hand_off",
    "office_page_images_record",
    "page_image_drawing_claim",
    "page_image_name",
    "page_image_render_request",
    "page_images_save",
    "page_retry_later",
    "pages_reap",
    "pages_send",
    "retention_expiry",
    "stored_files_delete_unused",
    "submission_validate",
    "upload_size_check",
]
