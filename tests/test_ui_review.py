"""Pages that a quality signal flagged stand out in the job page, with the reasons."""

from __future__ import annotations

import pytest
from django.urls import reverse

from model.engines.base import EngineOptions, PageInput, PageResult
from model.pipeline import finish_page
from tests import documents
from webapp.jobs import services

pytestmark = pytest.mark.django_db


def test_a_flagged_page_shows_needs_review_with_its_reasons(client, make_user):
    user = make_user("alice")
    job = services.job_submit(owner=user, data=documents.png_page(), filename="page.png")
    page = job.pages.get()
    claim = services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="test:1")
    # A page with ink that came back nearly empty: the worker's quality report flags it.
    result = finish_page(
        PageInput(data=documents.png_page(), mime_type="image/png", page_number=1),
        PageResult(markdown="x"),
        EngineOptions(),
    )
    services.page_complete(claim=claim, result=result, engine_version="test-1")
    client.force_login(user)

    html = client.get(reverse("ui-job", args=[job.id])).content.decode()

    page.refresh_from_db()
    assert page.needs_review, page.quality
    assert "Needs review" in html
    assert page.quality["reasons"][0].split(":")[0] in html
    assert "1 page needs a person&#x27;s check" in html or "1 page needs a person's check" in html
