"""What an engine reports beyond the text: kept per page, summed per job, figures served."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from model.engines.base import PageResult
from tests import documents
from tests.conftest import client_for
from webapp.jobs import services
from webapp.jobs.models import Job, Page

pytestmark = pytest.mark.django_db


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def vlm_result(*, figure: bool) -> PageResult:
    """A page as the vLLM engine reports it (speculative decoding on, one figure)."""
    extra = {
        "ttft_seconds": 0.2,
        "spec_decode": {
            "num_spec_steps": 10,
            "num_draft_tokens": 30,
            "num_accepted_draft_tokens": 21,
        },
    }
    if figure:
        extra["figures"] = [
            {
                "name": "page-0001-figure-1.png",
                "box": [1, 2, 3, 4],
                "png_base64": base64.b64encode(png_bytes()).decode(),
            }
        ]
    return PageResult(
        markdown="![figure](figures/page-0001-figure-1.png)", output_tokens=40, extra=extra
    )


def finish(job: Job, result_for) -> None:
    for page in job.pages.order_by("number"):
        claim = services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="test:1")
        services.page_complete(claim=claim, result=result_for(page.number), engine_version="test-1")


def test_figures_are_stored_served_and_kept_out_of_the_page_report(make_user):
    user = make_user("alice")
    job = services.job_submit(
        owner=user,
        data=documents.png_page(),
        filename="page.png",
        options=services.JobOptions.parse(figures=True),
    )

    finish(job, lambda number: vlm_result(figure=True))

    page = Page.objects.get(job=job)
    assert page.extra["figures"][0]["name"] == "page-0001-figure-1.png"
    assert "png_base64" not in page.extra["figures"][0]
    api = client_for(user)
    served = api.get(f"/v1/jobs/{job.id}/figures/page-0001-figure-1.png")
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == png_bytes()
    assert api.get(f"/v1/jobs/{job.id}/figures/../../secret").status_code == 404
    assert (
        client_for(make_user("mallory"))
        .get(f"/v1/jobs/{job.id}/figures/page-0001-figure-1.png")
        .status_code
        == 404
    )


def test_a_finished_job_sums_its_pages_engine_figures(make_user):
    job = services.job_submit(
        owner=make_user("alice"), data=documents.born_digital_pdf(), filename="r.pdf"
    )

    finish(job, lambda number: vlm_result(figure=False))

    job.refresh_from_db()
    metrics = job.engine_metrics
    assert metrics["pages"] == 3
    assert metrics["output_tokens"] == 120
    assert metrics["acceptance_rate"] == pytest.approx(0.7)
    assert metrics["mean_acceptance_length"] == pytest.approx(3.1)
    assert metrics["mean_ttft_seconds"] == pytest.approx(0.2)
    api = client_for(job.owner)
    assert api.get(f"/v1/jobs/{job.id}").json()["usage"]["engine"][
        "acceptance_rate"
    ] == pytest.approx(0.7)


def test_only_pages_that_need_no_review_go_into_the_result_cache(make_user):
    from model.engines.base import EngineOptions, PageInput
    from model.pipeline import finish_page
    from webapp.results.models import CachedPage

    job = services.job_submit(
        owner=make_user("alice"), data=documents.born_digital_pdf(), filename="r.pdf"
    )
    page_input = PageInput(
        data=documents.born_digital_pdf(), mime_type="application/pdf", page_number=1
    )
    flagged = finish_page(page_input, PageResult(markdown="x"), EngineOptions())  # ink, no text
    clean = PageResult(markdown="# Quarterly Harbour Report\n\nPage marker alpha.", output_tokens=9)

    finish(job, lambda number: flagged if number == 1 else clean)

    assert Page.objects.get(job=job, number=1).needs_review
    assert sorted(CachedPage.objects.values_list("page_number", flat=True)) == [2, 3]
