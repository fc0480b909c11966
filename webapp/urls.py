from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from webapp.accounts.api import ApiKeyDetailView, ApiKeyListCreateView
from webapp.core.health import healthz, readyz, readyz_web
from webapp.core.surfaces import metrics
from webapp.jobs.api import (
    JobCancelView,
    JobDetailView,
    JobFigureView,
    JobListCreateView,
    JobPagesView,
    JobResultView,
)
from webapp.reader.chat import ChatCompletionsView, ModelsView
from webapp.reader.polling import ReaderPollResultView, ReaderPollView
from webapp.reader.views import ReaderTargetView
from webapp.ui.views import home_or_reader
from webapp.webhooks import api as webhooks_api

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("readyz/web", readyz_web, name="readyz-web"),
    path("metrics", metrics, name="prometheus-django-metrics"),
    path("v1/jobs", JobListCreateView.as_view(), name="job-list"),
    path("v1/jobs/<uuid:job_id>", JobDetailView.as_view(), name="job-detail"),
    path("v1/jobs/<uuid:job_id>/result", JobResultView.as_view(), name="job-result"),
    path("v1/jobs/<uuid:job_id>/pages", JobPagesView.as_view(), name="job-pages"),
    path("v1/jobs/<uuid:job_id>/cancel", JobCancelView.as_view(), name="job-cancel"),
    path("v1/jobs/<uuid:job_id>/figures/<str:name>", JobFigureView.as_view(), name="job-figure"),
    path(
        "v1/jobs/<uuid:job_id>/deliveries",
        webhooks_api.JobDeliveriesView.as_view(),
        name="job-deliveries",
    ),
    path("v1/reader/jobs/<str:token>", ReaderPollView.as_view(), name="reader-poll"),
    path(
        "v1/reader/jobs/<str:token>/result",
        ReaderPollResultView.as_view(),
        name="reader-poll-result",
    ),
    path("v1/keys", ApiKeyListCreateView.as_view(), name="key-list"),
    path("v1/keys/<int:key_id>", ApiKeyDetailView.as_view(), name="key-detail"),
    path("v1/webhooks", webhooks_api.EndpointListCreateView.as_view(), name="webhook-list"),
    path(
        "v1/webhooks/<uuid:endpoint_id>",
        webhooks_api.EndpointDetailView.as_view(),
        name="webhook-detail",
    ),
    path(
        "v1/webhooks/<uuid:endpoint_id>/rotate-secret",
        webhooks_api.EndpointRotateSecretView.as_view(),
        name="webhook-rotate-secret",
    ),
    path(
        "v1/webhooks/<uuid:endpoint_id>/deliveries",
        webhooks_api.EndpointDeliveriesView.as_view(),
        name="webhook-deliveries",
    ),
    path(
        "v1/deliveries/<uuid:delivery_id>",
        webhooks_api.DeliveryDetailView.as_view(),
        name="delivery-detail",
    ),
    path(
        "v1/deliveries/<uuid:delivery_id>/redeliver",
        webhooks_api.DeliveryRedeliverView.as_view(),
        name="delivery-redeliver",
    ),
    path("account/", include("webapp.accounts.urls")),
    path("v1/chat/completions", ChatCompletionsView.as_view(), name="chat-completions"),
    path("v1/models", ModelsView.as_view(), name="models"),
    # FOLIO_API_DOCS and FOLIO_ADMIN turn these off (webapp/core/surfaces.py).
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script for the CSP.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("v1/openapi.json", SpectacularAPIView.as_view(), name="openapi"),
    path("admin/", admin.site.urls),
    path("", include("webapp.ui.urls")),
    # Reader's routes come last: GET /<url> takes any path that starts with a scheme. A
    # browser's GET / (Accept: text/html) is the UI's home page; everything else is Reader.
    path("", home_or_reader, name="reader"),
    re_path(r"^(?P<target>https?:/.*)$", ReaderTargetView.as_view(), name="reader-target"),
]

handler404 = "webapp.core.errors.page_not_found"
handler500 = "webapp.core.errors.server_error"
