"""``/jobs/new/``: one job per dropped file, each refused file with the server's reason."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from model.engines.registry import job_engine_names
from webapp.jobs import selectors as job_selectors
from webapp.jobs import services as job_services
from webapp.jobs.models import Job
from webapp.ui import selectors
from webapp.ui.forms import UploadForm
from webapp.ui.views.jobs import job_row

Refusal = job_services.Refusal
# The upload script's answer per refusal (the jobs API's codes; the rest are 400).
UPLOAD_STATUS = {
    Refusal.TOO_LARGE: 413,
    Refusal.RATE_LIMITED: 429,
    Refusal.UNPROCESSABLE: 422,
    Refusal.STORAGE_FULL: 507,
    Refusal.STORAGE_FAILED: 503,
}


def _wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _upload_form(request, data=None, files=None) -> tuple[UploadForm, str]:
    engines, note = selectors.engines_available()
    if data is not None:
        # A worker may come or go between showing the form and sending it: any known engine
        # is accepted here and job_submit says why if it cannot take it.
        engines = sorted(set(engines) | set(job_engine_names()))
    default = settings.FOLIO_DEFAULT_ENGINE if settings.FOLIO_DEFAULT_ENGINE in engines else None
    form = UploadForm(data, files, engines=engines, default_engine=default or engines[0])
    return form, note


def submission_message(exc: job_services.SubmissionError) -> str:
    """The service's reason, with what to do about it where it is a limit."""
    text = str(exc)
    text = text[0].upper() + text[1:] if text else "The file could not be read."
    if exc.kind is job_services.Refusal.RATE_LIMITED and exc.retry_after:
        return f"{text}. Try again in {exc.retry_after} seconds."
    return text if text.endswith(".") else f"{text}."


def _submit(request, form: UploadForm, upload) -> Job:
    job_services.upload_size_check(size=upload.size)
    return job_services.job_submit(
        owner=request.user,
        data=upload.read(),
        filename=upload.name,
        page_selection=form.cleaned_data["pages"] or None,
        engine=form.cleaned_data["engine"],
        options=job_services.JobOptions.parse(
            table_format=form.cleaned_data["table_format"],
            speaker_notes=form.cleaned_data["speaker_notes"],
            comments=form.cleaned_data["comments"],
        ),
        webhook_url=form.cleaned_data["webhook_url"] or None,
    )


@login_required
def upload(request):
    if request.method != "POST":
        form, note = _upload_form(request)
        return render(request, "jobs/upload.html", _upload_context(request, form, note))
    form, note = _upload_form(request, request.POST, request.FILES)
    if not form.is_valid():
        if _wants_json(request):
            errors = "; ".join(" ".join(map(str, errors)) for errors in form.errors.values())
            return JsonResponse({"ok": False, "error": errors}, status=400)
        return render(request, "jobs/upload.html", _upload_context(request, form, note), status=400)
    results: list[tuple[str, Job | None, str, job_services.SubmissionError | None]] = []
    for upload_file in form.cleaned_data["files"]:
        try:
            job = _submit(request, form, upload_file)
        except job_services.SubmissionError as exc:
            results.append((upload_file.name, None, submission_message(exc), exc))
        else:
            results.append((upload_file.name, job, "", None))
    if _wants_json(request):
        return _upload_json(results)
    failed = [(name, error) for name, job, error, _ in results if job is None]
    jobs = [job for _, job, _, _ in results if job is not None]
    if not jobs:
        context = _upload_context(request, form, note)
        context["file_errors"] = failed
        return render(request, "jobs/upload.html", context, status=400)
    for name, error in failed:
        messages.error(request, f"{name}: {error}")
    if len(jobs) == 1 and not failed:
        return redirect("ui-job", job_id=jobs[0].id)
    messages.success(request, f"{len(jobs)} jobs started.")
    return redirect("ui-jobs")


def _upload_json(results) -> JsonResponse:
    name, job, error, exc = results[0]
    if job is not None:
        url = reverse("ui-job", args=[job.id])
        return JsonResponse({"ok": True, "job": {"id": str(job.id), "url": url, "name": name}})
    status = UPLOAD_STATUS.get(exc.kind, 400)
    response = JsonResponse({"ok": False, "error": error}, status=status)
    if exc.retry_after:
        response["Retry-After"] = str(exc.retry_after)
    return response


def _upload_context(request, form: UploadForm, note: str) -> dict:
    recent = job_selectors.jobs_of(owner=request.user).order_by("-created_at")[:5]
    return {
        "form": form,
        "engine_note": note,
        "max_upload_bytes": settings.FOLIO_MAX_UPLOAD_BYTES,
        "recent_jobs": [job_row(job) for job in recent],
    }
