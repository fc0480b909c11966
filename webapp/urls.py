from django.contrib import admin
from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from webapp.core.health import healthz, readyz
from webapp.jobs.api import JobDetailView, JobListCreateView, JobResultView

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("v1/jobs", JobListCreateView.as_view(), name="job-list"),
    path("v1/jobs/<uuid:job_id>", JobDetailView.as_view(), name="job-detail"),
    path("v1/jobs/<uuid:job_id>/result", JobResultView.as_view(), name="job-result"),
    path("v1/openapi.json", SpectacularAPIView.as_view(), name="openapi"),
    path("admin/", admin.site.urls),
]
