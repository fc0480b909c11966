"""The browser interface: thin views over the jobs, accounts and webhooks services."""

from __future__ import annotations

import logging
from pathlib import PurePath

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.utils.safestring import mark_safe
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from model.documents import DocumentError
from model.engines.registry import engine_names
from webapp.accounts import selectors as account_selectors
from webapp.accounts import services as account_services
from webapp.jobs import selectors as job_selectors
from webapp.jobs import services as job_services
from webapp.jobs.models import Job, Page
from webapp.reader.views import ReaderView
from webapp.ui import selectors, services
from webapp.ui.forms import ApiKeyForm, EndpointForm, JobFilterForm, UploadForm
from webapp.ui.markdown import markdown_html
from webapp.webhooks import selectors as webhook_selectors
from webapp.webhooks import services as webhook_services

logger = logging.getLogger(__name__)

JOBS_PER_PAGE = 20
# Page panels (image + text) per screen of a job: a 500-page job stays a light page.
PANELS_PER_SCREEN = 10
DELIVERIES_SHOWN = 50
FINISHED_PAGE = (Page.Status.SUCCEEDED, Page.Status.FAILED)


# --- home ---------------------------------------------------------------------------------

_reader = ReaderView.as_view()


@csrf_exempt
def home_or_reader(request, *args, **kwargs):
    """``/`` is the Reader API for programs and the home page for browsers (they ask for
    HTML); everything but a browser's GET goes to the Reader unchanged."""
    if request.method in ("GET", "HEAD") and "text/html" in request.headers.get("Accept", ""):
        return home(request)
    return _reader(request, *args, **kwargs)


# The schema generator finds the Reader's API view through these, as on its own route.
home_or_reader.cls = ReaderView
home_or_reader.initkwargs = _reader.initkwargs


def home(request):
    if not request.user.is_authenticated:
        return render(request, "home.html", {"signup_enabled": settings.FOLIO_SIGNUP_ENABLED})
    return redirect("ui-upload")


# --- upload -------------------------------------------------------------------------------


def _wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _upload_form(request, data=None, files=None) -> tuple[UploadForm, str]:
    engines, note = selectors.engines_available()
    if data is not None:
        # A worker may come or go between showing the form and sending it: any known engine
        # is accepted here and job_submit says why if it cannot take it.
        engines = sorted(set(engines) | set(engine_names()))
    default = settings.FOLIO_DEFAULT_ENGINE if settings.FOLIO_DEFAULT_ENGINE in engines else None
    form = UploadForm(data, files, engines=engines, default_engine=default or engines[0])
    return form, note


def submission_message(exc: job_services.SubmissionError) -> str:
    """The service's reason, with what to do about it where it is a limit."""
    text = str(exc)
    text = text[0].upper() + text[1:] if text else "The file could not be read."
    if exc.kind == "rate_limited" and exc.retry_after:
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
        options=job_services.JobOptions.parse(table_format=form.cleaned_data["table_format"]),
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
            errors = "; ".join(" ".join(errors) for errors in form.errors.values())
            return JsonResponse({"ok": False, "error": errors}, status=400)
        return render(request, "jobs/upload.html", _upload_context(request, form, note), status=400)
    results = []
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
    status = {"too_large": 413, "rate_limited": 429, "unprocessable": 422}.get(exc.kind, 400)
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
        "recent_jobs": [_job_row(job) for job in recent],
    }


# --- jobs ---------------------------------------------------------------------------------


def _job_row(job: Job) -> dict:
    return {"job": job, "progress": job_selectors.job_progress(job=job)}


@login_required
def job_list(request):
    form = JobFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    jobs = selectors.jobs_for_list(
        owner=request.user,
        status=filters.get("status", ""),
        name=filters.get("q", ""),
        created_after=filters.get("created_after"),
        created_before=filters.get("created_before"),
    )
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "page_obj": page,
        "rows": [_job_row(job) for job in page.object_list],
        "query": query.urlencode(),
        "filtered": bool(filters and any(filters.values())),
    }
    return render(request, "jobs/list.html", context)


def _owned_job(request, job_id) -> Job:
    job = job_selectors.job_get(owner=request.user, job_id=job_id)
    if job is None:
        # Another user's job and no job at all look the same, on purpose.
        raise Http404("There is no such job in your account.")
    return job


def _panel(job: Job, page: Page) -> dict:
    html = markdown_html(page.markdown) if page.status == Page.Status.SUCCEEDED else ""
    return {"page": page, "html": mark_safe(html), "job": job}  # noqa: S308 (sanitized by nh3)


@login_required
def job_detail(request, job_id):
    job = _owned_job(request, job_id)
    pages = list(job_selectors.job_pages(job=job))
    screens = Paginator(pages, PANELS_PER_SCREEN)
    screen = screens.get_page(request.GET.get("pages"))
    panels = [_panel(job, page) for page in screen.object_list]
    context = {
        "job": job,
        "progress": job_selectors.job_progress(job=job),
        # Each chip links to the screen of panels that shows its page.
        "page_rows": [(page, index // PANELS_PER_SCREEN + 1) for index, page in enumerate(pages)],
        "panels": panels,
        "screen": screen,
        "can_download": job.is_final and not job.is_expired,
        "image_available": job.document.file_deleted_at is None and not job.is_expired,
    }
    return render(request, "jobs/detail.html", context)


@login_required
def page_panel(request, job_id, number: int):
    """One page's panel, fetched by the job page's script when that page finishes."""
    job = _owned_job(request, job_id)
    page = job_selectors.job_pages(job=job).filter(number=number).first()
    if page is None:
        raise Http404("That page is not part of this job.")
    context = {
        "panel": _panel(job, page),
        "image_available": job.document.file_deleted_at is None and not job.is_expired,
    }
    return render(request, "jobs/_panel.html", context)


@login_required
def page_image(request, job_id, number: int):
    job = _owned_job(request, job_id)
    if not job.pages.filter(number=number).exists():
        raise Http404("That page is not part of this job.")
    try:
        data = services.page_image_jpeg(job=job, number=number)
    except services.PageImageUnavailable as exc:
        raise Http404(f"The page image is not available: {exc}.") from exc
    except DocumentError as exc:
        logger.warning("page %s of job %s cannot be drawn: %s", number, job.id, exc)
        raise Http404("This page cannot be drawn as an image.") from exc
    response = HttpResponse(data, content_type="image/jpeg")
    response["Cache-Control"] = "private, max-age=86400"
    return response


def _download_refusal(request, job: Job):
    if job.is_expired:
        return render(
            request,
            "error.html",
            {
                "title": "The results were deleted",
                "message": f"The results of this job expired on {job.expired_at:%Y-%m-%d} and "
                "were deleted. Upload the document again to read it again.",
            },
            status=410,
        )
    if not job.is_final:
        return render(
            request,
            "error.html",
            {
                "title": "Not finished yet",
                "message": "This job is still running. The downloads appear on its page "
                "as soon as every page is done.",
                "back": reverse("ui-job", args=[job.id]),
            },
            status=409,
        )
    return None


def _stem(job: Job) -> str:
    return PurePath(job.document.original_name).stem or "document"


@login_required
def download_markdown(request, job_id):
    job = _owned_job(request, job_id)
    refusal = _download_refusal(request, job)
    if refusal is not None:
        return refusal
    response = HttpResponse(
        job_selectors.job_markdown(job=job), content_type="text/markdown; charset=utf-8"
    )
    response["Content-Disposition"] = content_disposition_header(True, f"{_stem(job)}.md")
    return response


@login_required
def download_zip(request, job_id):
    job = _owned_job(request, job_id)
    refusal = _download_refusal(request, job)
    if refusal is not None:
        return refusal
    response = HttpResponse(
        services.result_zip(job=job, stem=_stem(job)), content_type="application/zip"
    )
    response["Content-Disposition"] = content_disposition_header(True, f"{_stem(job)}.zip")
    return response


@login_required
@require_POST
def job_cancel(request, job_id):
    job = _owned_job(request, job_id)
    if job_services.job_cancel(job=job):
        messages.success(
            request,
            "Job cancelled. Pages already read are kept; a page being read now still lands.",
        )
    else:
        job.refresh_from_db()
        messages.info(request, f"This job had already ended ({job.get_status_display()}).")
    return redirect("ui-job", job_id=job.id)


@login_required
@require_POST
def job_delete(request, job_id):
    job = _owned_job(request, job_id)
    name = job.document.original_name
    job_services.job_delete(job=job)
    messages.success(request, f"The job for {name} and its results were deleted.")
    return redirect("ui-jobs")


# --- API keys -----------------------------------------------------------------------------


@login_required
def api_keys(request):
    form = ApiKeyForm(request.POST or None)
    issued = None
    if request.method == "POST" and form.is_valid():
        # Shown in this answer only: the key is stored as a digest and never shown again.
        issued = account_services.api_key_create(user=request.user, name=form.cleaned_data["name"])
        form = ApiKeyForm()
    context = {
        "form": form,
        "issued": issued,
        "api_keys": account_selectors.api_keys_of(user=request.user),
    }
    return render(request, "account/keys.html", context)


@login_required
@require_POST
def api_key_revoke(request, key_id: int):
    if not account_services.api_key_revoke_owned(user=request.user, key_id=key_id):
        raise Http404("There is no such key in your account.")
    messages.success(request, "The key was revoked; programs using it are refused from now on.")
    return redirect("ui-keys")


# --- webhooks -----------------------------------------------------------------------------


def _owned_endpoint(request, endpoint_id):
    endpoint = webhook_selectors.endpoint_get(owner=request.user, endpoint_id=endpoint_id)
    if endpoint is None:
        raise Http404("There is no such webhook endpoint in your account.")
    return endpoint


@login_required
def webhooks(request):
    form = EndpointForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = webhook_services.endpoint_create(owner=request.user, **form.cleaned_data)
        except webhook_services.WebhookError as exc:
            form.add_error("url", str(exc))
        else:
            return _endpoint_page(request, endpoint, new_secret=True)
    context = {"form": form, "endpoints": webhook_selectors.endpoints_of(owner=request.user)}
    return render(request, "account/webhooks.html", context, status=400 if form.errors else 200)


def _endpoint_page(request, endpoint, *, new_secret: bool = False, status: int = 200):
    deliveries = webhook_selectors.deliveries_of(owner=request.user).filter(endpoint=endpoint)
    context = {
        "endpoint": endpoint,
        "new_secret": endpoint.secret if new_secret else "",
        "deliveries": deliveries[:DELIVERIES_SHOWN],
        "rotation_hours": settings.FOLIO_WEBHOOK_ROTATION_HOURS,
    }
    return render(request, "account/webhook.html", context, status=status)


@login_required
def webhook_detail(request, endpoint_id):
    return _endpoint_page(request, _owned_endpoint(request, endpoint_id))


@login_required
@require_POST
def webhook_rotate(request, endpoint_id):
    endpoint = webhook_services.endpoint_rotate_secret(
        endpoint=_owned_endpoint(request, endpoint_id)
    )
    return _endpoint_page(request, endpoint, new_secret=True)


@login_required
@require_POST
def webhook_test(request, endpoint_id):
    endpoint = _owned_endpoint(request, endpoint_id)
    try:
        services.endpoint_test_send(endpoint=endpoint)
    except webhook_services.WebhookError as exc:
        messages.error(request, f"No test event was sent: {exc}.")
    else:
        messages.success(request, "A test event is on its way; its delivery is logged below.")
    return redirect("ui-webhook", endpoint_id=endpoint.pk)


@login_required
@require_POST
def webhook_toggle(request, endpoint_id):
    endpoint = _owned_endpoint(request, endpoint_id)
    enable = endpoint.disabled_at is not None
    webhook_services.endpoint_update(endpoint=endpoint, enabled=enable)
    messages.success(request, "Endpoint enabled." if enable else "Endpoint disabled.")
    return redirect("ui-webhook", endpoint_id=endpoint.pk)


@login_required
@require_POST
def webhook_delete(request, endpoint_id):
    endpoint = _owned_endpoint(request, endpoint_id)
    endpoint.delete()
    messages.success(request, f"The endpoint {endpoint.url} was removed.")
    return redirect("ui-webhooks")


@login_required
@require_POST
def delivery_redeliver(request, delivery_id):
    delivery = webhook_selectors.delivery_get(owner=request.user, delivery_id=delivery_id)
    if delivery is None:
        raise Http404("There is no such delivery in your account.")
    try:
        webhook_services.delivery_redeliver(delivery=delivery)
    except webhook_services.WebhookError as exc:
        messages.error(request, f"Not sent again: {exc}.")
    else:
        messages.success(request, "The event is being sent again (same webhook-id).")
    return redirect("ui-webhook", endpoint_id=delivery.endpoint_id)
