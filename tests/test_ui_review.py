"""Pages that a quality signal flagged stand out in the job page, with the reasons."""

from __future__ import annotations

import re

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


def _finish(job, number: int, data: bytes, markdown: str) -> None:
    page = job.pages.get(number=number)
    claim = services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="test:1")
    result = finish_page(
        PageInput(data=data, mime_type="application/pdf", page_number=number),
        PageResult(markdown=markdown, method="text-layer"),
        EngineOptions(),
    )
    services.page_complete(claim=claim, result=result, engine_version="test-1")


def test_the_job_page_puts_the_most_doubtful_pages_first_or_shows_only_them(client, make_user):
    from tests.test_review_api import GARBLE, PROSE, _pdf

    user = make_user("alice")
    data = _pdf(PROSE, None, GARBLE)
    job = services.job_submit(owner=user, data=data, filename="three.pdf")
    for number, markdown in ((1, PROSE), (2, ""), (3, GARBLE)):
        _finish(job, number, data, markdown)
    client.force_login(user)
    url = reverse("ui-job", args=[job.id])

    def panels(query: str) -> list[str]:
        html = client.get(url + query).content.decode()
        return re.findall(r'data-panel="(\d+)"', html)

    assert panels("") == ["1", "2", "3"]
    assert panels("?review=first") == ["2", "3", "1"]
    assert panels("?review=only") == ["2", "3"]
    assert panels("?review=nonsense") == ["1", "2", "3"]
    html = client.get(url + "?review=first").content.decode()
    assert 'aria-current="page" data-review-view="first"' in html
    assert "review score 1.00" in html
