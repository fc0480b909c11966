"""The browser interface's routes (``/`` itself is routed in webapp/urls.py, beside the
Reader)."""

from __future__ import annotations

from django.urls import path

from webapp.ui import views

urlpatterns = [
    path("jobs/", views.job_list, name="ui-jobs"),
    path("jobs/new/", views.upload, name="ui-upload"),
    path("jobs/<uuid:job_id>/", views.job_detail, name="ui-job"),
    path("jobs/<uuid:job_id>/cancel/", views.job_cancel, name="ui-job-cancel"),
    path("jobs/<uuid:job_id>/delete/", views.job_delete, name="ui-job-delete"),
    path("jobs/<uuid:job_id>/result.md", views.download_markdown, name="ui-job-markdown"),
    path("jobs/<uuid:job_id>/result.zip", views.download_zip, name="ui-job-zip"),
    path("jobs/<uuid:job_id>/blocks.json", views.download_blocks, name="ui-job-blocks"),
    path("jobs/<uuid:job_id>/chunks.json", views.download_chunks, name="ui-job-chunks"),
    path("jobs/<uuid:job_id>/searchable.pdf", views.download_pdf, name="ui-job-pdf"),
    path("jobs/<uuid:job_id>/pages/<int:number>/", views.page_panel, name="ui-page-panel"),
    path("jobs/<uuid:job_id>/pages/<int:number>/image", views.page_image, name="ui-page-image"),
    path("account/keys/", views.api_keys, name="ui-keys"),
    path("account/keys/<int:key_id>/revoke/", views.api_key_revoke, name="ui-key-revoke"),
    path("account/webhooks/", views.webhooks, name="ui-webhooks"),
    path("account/webhooks/<uuid:endpoint_id>/", views.webhook_detail, name="ui-webhook"),
    path(
        "account/webhooks/<uuid:endpoint_id>/rotate/",
        views.webhook_rotate,
        name="ui-webhook-rotate",
    ),
    path("account/webhooks/<uuid:endpoint_id>/test/", views.webhook_test, name="ui-webhook-test"),
    path(
        "account/webhooks/<uuid:endpoint_id>/toggle/",
        views.webhook_toggle,
        name="ui-webhook-toggle",
    ),
    path(
        "account/webhooks/<uuid:endpoint_id>/delete/",
        views.webhook_delete,
        name="ui-webhook-delete",
    ),
    path(
        "account/deliveries/<uuid:delivery_id>/redeliver/",
        views.delivery_redeliver,
        name="ui-delivery-redeliver",
    ),
]
