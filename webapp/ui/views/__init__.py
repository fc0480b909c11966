"""The browser interface: thin views over the jobs, accounts and webhooks services, one module
per screen family (home, upload, jobs, API keys, webhooks)."""

from webapp.ui.views.home import home, home_or_reader
from webapp.ui.views.jobs import (
    download_blocks,
    download_chunks,
    download_markdown,
    download_pdf,
    download_zip,
    job_cancel,
    job_delete,
    job_detail,
    job_list,
    page_image,
    page_panel,
)
from webapp.ui.views.keys import api_key_revoke, api_keys
from webapp.ui.views.upload import submission_message, upload
from webapp.ui.views.webhooks import (
    delivery_redeliver,
    webhook_delete,
    webhook_detail,
    webhook_rotate,
    webhook_test,
    webhook_toggle,
    webhooks,
)

__all__ = [
    "api_key_revoke",
    "api_keys",
    "delivery_redeliver",
    "download_blocks",
    "download_chunks",
    "download_markdown",
    "download_pdf",
    "download_zip",
    "home",
    "home_or_reader",
    "job_cancel",
    "job_delete",
    "job_detail",
    "job_list",
    "page_image",
    "page_panel",
    "submission_message",
    "upload",
    "webhook_delete",
    "webhook_detail",
    "webhook_rotate",
    "webhook_test",
    "webhook_toggle",
    "webhooks",
]
