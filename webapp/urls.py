from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from webapp.accounts.api import ApiKeyDetailView, ApiKeyListCreateView
from webapp.core.health import healthz, readyz
from webapp.jobs.api import JobCancelView, JobDetailView, JobListCreateView, JobResultView
from webapp.webhooks import api as webhooks_api

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("v1/jobs", JobListCreateView.as_view(), name="job-list"),
    path("v1/jobs/<uuid:job_id>", JobDetailView.as_view(), name="job-detail"),
    path("v1/jobs/<uuid:job_id>/result", JobResultView.as_view(), name="job-result"),
    path("v1/jobs/<uuid:job_id>/cancel", JobCancelView.as_view(), name="job-cancel"),
    path(
        "v1/jobs/<uuid:job_id>/deliveries",
        webhooks_api.JobDeliveriesView.as_view(),
        name="job-deliveries",
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
    path("v1/openapi.json", SpectacularAPIView.as_view(), name="openapi"),
    path("admin/", admin.site.urls),
]
