"""The ``auto`` engine's pages in the service (webapp/jobs/services/escalation.py), against the
real database and broker: a doubtful local reading goes to the VLM engine's queue holding
itself, the VLM's reading is weighed against it, and a page waiting for its VLM pass keeps
the guarantees of every page (one claim, cancellation, token budgets, the reaper, the cache).
Which engines are served is the one boundary replaced here (no worker runs in this tier);
tests/test_auto_engine.py runs the same through real workers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from model.engines.auto import Choice, best_vlm, escalates, keep_reading, with_auto
from model.engines.base import PageResult
from model.engines.registry import engine_spec
from model.layout.schema import whole_page_layout
from tests import documents
from tests.workers import purge_queues
from webapp.core.queues import engine_queue
from webapp.jobs import services
from webapp.jobs.models import Job, Page
from webapp.jobs.queueing import queue_depth
from webapp.jobs.services import escalation
from webapp.results.models import CachedPage
from webapp.results.services import cached_page_store

VLM = "transformers"
LOCAL_VERSION = engine_spec("local").version


def reading(text: str, score: float, *, tokens: int = 5, seconds: float = 0.5) -> PageResult:
    reasons = [f"plausibility: doubtful ({score})"] if score else []
    quality = {
        "score": score,
        "needs_review": score >= 0.5,
        "reasons": reasons,
        "signals": {"repetition": {"ok": True}},
    }
    return PageResult(
        markdown=text,
        output_tokens=tokens,
        engine_seconds=seconds,
        method="ocr",
        extra={"quality": quality},
        # A layout with blocks, as the pipeline gives every page (the cache needs one).
        layout=whole_page_layout(text, (595.0, 842.0)),
    )


@pytest.fixture
def served(monkeypatch):
    """Which engines live workers serve, as ``auto`` asks (the one boundary replaced)."""
    engines = {"local"}
    monkeypatch.setattr(escalation, "engines_served_now", lambda: set(engines))
    return engines


@pytest.fixture
def job(make_user) -> Job:
    purge_queues(engine_queue("local"), engine_queue(VLM))
    return services.job_submit(
        owner=make_user("alice"),
        data=documents.born_digital_pdf(),
        filename="report.pdf",
        engine="auto",
        page_selection="1",
    )


def claim(page: Page) -> services.PageClaim:
    page.refresh_from_db()
    claimed = services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="test:1")
    assert claimed is not None
    return claimed


# --- the rules ----------------------------------------------------------------------------------


def test_the_best_vlm_served_is_chosen_and_auto_is_offered_wherever_local_is():
    assert best_vlm({"local", "openai", "transformers"}) == "transformers"
    assert best_vlm({"local", "jina-ocr-v1", "openai"}) == "jina-ocr-v1"
    assert best_vlm({"local"}) is None
    assert with_auto({"local", "openai"}) == ["auto", "local", "openai"]
    assert with_auto({"openai"}) == ["openai"]
    assert escalates(0.5, 0.5) and not escalates(0.49, 0.5) and not escalates(0.0, 0.01)


def test_the_vlm_reading_is_kept_unless_it_is_empty_runs_away_or_scores_worse():
    good = {"score": 0.0, "signals": {"repetition": {"ok": True}}}
    doubtful = {"score": 0.6, "signals": {}}
    assert keep_reading(
        local_markdown="A local reading of the page", local_quality=doubtful,
        vlm_markdown="The VLM's reading of the page", vlm_quality=good,
    ) == Choice("vlm", "the VLM's reading scores 0.00 (local 0.60)")  # fmt: skip
    empty = keep_reading(
        local_markdown="A local reading of the page", local_quality=doubtful,
        vlm_markdown="  ", vlm_quality=good,
    )  # fmt: skip
    assert empty.kept == "local" and "empty" in empty.why
    looping = {"score": 1.0, "signals": {"repetition": {"ok": False}}}
    loop = keep_reading(
        local_markdown="A local reading of the page", local_quality=doubtful,
        vlm_markdown="row row row row", vlm_quality=looping,
    )  # fmt: skip
    assert loop.kept == "local" and "runaway" in loop.why
    worse = keep_reading(
        local_markdown="A local reading of the page", local_quality=doubtful,
        vlm_markdown="w1 w2 w3 w4 w5 w6 w7", vlm_quality={"score": 0.9, "signals": {}},
    )  # fmt: skip
    assert worse.kept == "local" and "0.90 against 0.60" in worse.why
    nothing = keep_reading(
        local_markdown=None, local_quality={}, vlm_markdown="", vlm_quality=looping
    )
    assert nothing.kept == "vlm"


# --- through the service ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_page_under_the_threshold_is_saved_as_local_read_it(job, served):
    page = job.pages.get()
    assert page.engine == "local"  # an auto job's page goes to local's queue first
    outcome = escalation.local_reading_done(
        claim=claim(page), result=reading("A clean page", 0.0), engine_version=LOCAL_VERSION
    )
    assert outcome == "done"
    page.refresh_from_db()
    job.refresh_from_db()
    assert (page.status, page.engine) == (Page.Status.SUCCEEDED, "local")
    assert page.escalation == {"escalated": False, "score": 0.0, "threshold": 0.5}
    assert (job.pages_escalated, job.pages_left_local, job.status) == (0, 0, Job.Status.SUCCEEDED)
    assert CachedPage.objects.get(sha256=job.document.sha256).engine == "local"


@pytest.mark.django_db(transaction=True)
def test_with_no_vlm_served_auto_is_local_and_says_so(job, served):
    page = job.pages.get()
    escalation.local_reading_done(
        claim=claim(page), result=reading("A doubtful page", 0.6), engine_version=LOCAL_VERSION
    )
    page.refresh_from_db()
    job.refresh_from_db()
    assert (page.status, page.engine) == (Page.Status.SUCCEEDED, "local")
    assert "no VLM engine is served" in page.escalation["why"]
    assert page.escalation["reasons"] == ["plausibility: doubtful (0.6)"]
    assert (job.pages_escalated, job.pages_left_local) == (0, 1)


@pytest.mark.django_db(transaction=True)
def test_a_doubtful_page_goes_to_the_vlm_and_the_better_reading_is_kept(job, served):
    served.add(VLM)
    page = job.pages.get()
    first = claim(page)
    local_message = page.task_id
    outcome = escalation.local_reading_done(
        claim=first, result=reading("A doubtful page", 0.6, tokens=7), engine_version=LOCAL_VERSION
    )
    assert outcome == "escalated"
    page.refresh_from_db()
    assert (page.status, page.engine, page.attempts) == (Page.Status.QUEUED, VLM, 0)
    assert page.escalation["escalated"] and page.escalation["local"]["markdown"] == (
        "A doubtful page"
    )
    assert queue_depth(engine=VLM) == 1  # sent to the VLM engine's queue after the commit
    # The local claim's message is stale now; the VLM worker's claim is the page's one.
    assert services.page_claim(page_id=page.pk, task_id=str(local_message), worker="x") is None
    second = claim(page)
    assert second.engine == VLM and second.job_engine == "auto"
    vlm = reading("The page as the VLM read it", 0.0, tokens=40, seconds=2.0)
    assert escalation.vlm_reading_done(claim=second, result=vlm, engine_version="transformers-2")
    page.refresh_from_db()
    job.refresh_from_db()
    assert (page.status, page.engine, page.markdown) == (
        Page.Status.SUCCEEDED, VLM, "The page as the VLM read it",
    )  # fmt: skip
    assert page.escalation["kept"] == "vlm" and "local" not in page.escalation
    # Both readings were paid for: the page and the job count both.
    assert page.output_tokens == 47 and job.output_tokens == 47
    assert job.pages_escalated == 1 and job.vlm_seconds == pytest.approx(2.0)
    assert page.engine_seconds == pytest.approx(2.5)
    # Cached under the engine whose reading it is, with that reading's own tokens.
    cached = CachedPage.objects.get(sha256=job.document.sha256)
    assert (cached.engine, cached.engine_version, cached.output_tokens) == (
        VLM, "transformers-2", 40,
    )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_a_vlm_reading_that_scores_worse_leaves_the_page_its_local_reading(job, served):
    served.add(VLM)
    page = job.pages.get()
    escalation.local_reading_done(
        claim=claim(page), result=reading("A doubtful page", 0.6), engine_version=LOCAL_VERSION
    )
    worse = reading("w1 w2 w3 w4 w5 w6 w7", 0.95)
    escalation.vlm_reading_done(claim=claim(page), result=worse, engine_version="transformers-2")
    page.refresh_from_db()
    assert (page.engine, page.markdown, page.escalation["kept"]) == (
        "local", "A doubtful page", "local",
    )  # fmt: skip
    assert "scores worse" in page.escalation["why"]
    assert page.needs_review  # the local reading's own verdict stands


@pytest.mark.django_db(transaction=True)
def test_a_vlm_that_fails_leaves_the_local_reading_and_a_page_local_could_not_read_goes_on(
    job, served
):
    served.add(VLM)
    page = job.pages.get()
    assert escalation.local_reading_failed(claim=claim(page), error="cannot decode") == (
        "escalated"
    )
    page.refresh_from_db()
    assert page.escalation["local"] is None and "cannot decode" in page.escalation["reasons"][0]
    assert escalation.vlm_reading_failed(claim=claim(page), error="out of memory")
    page.refresh_from_db()
    assert page.status == Page.Status.FAILED
    assert "out of memory" in page.error and "cannot decode" in page.error


@pytest.mark.django_db(transaction=True)
def test_cancelling_keeps_the_local_reading_of_a_page_waiting_for_its_vlm_pass(job, served):
    served.add(VLM)
    page = job.pages.get()
    escalation.local_reading_done(
        claim=claim(page), result=reading("A doubtful page", 0.6), engine_version=LOCAL_VERSION
    )
    assert services.job_cancel(job=job)
    page.refresh_from_db()
    job.refresh_from_db()
    assert (page.status, page.engine, page.markdown) == (
        Page.Status.SUCCEEDED, "local", "A doubtful page",
    )  # fmt: skip
    assert "cancelled" in page.escalation["why"]
    assert job.status == Job.Status.CANCELLED and job.pages_left_local == 1
    # The VLM worker's message for it finds nothing to claim.
    assert services.page_claim(page_id=page.pk, task_id=str(page.task_id), worker="x:1") is None


@pytest.mark.django_db(transaction=True)
def test_a_page_is_not_sent_on_once_the_token_budget_is_spent(make_user, served):
    served.add(VLM)
    job = services.job_submit(
        owner=make_user("bob"),
        data=documents.born_digital_pdf(),
        filename="report.pdf",
        engine="auto",
        page_selection="1",
        options=services.JobOptions.parse(token_budget=10),
    )
    page = job.pages.get()
    over = reading("A doubtful page", 0.6, tokens=12)
    escalation.local_reading_done(claim=claim(page), result=over, engine_version=LOCAL_VERSION)
    page.refresh_from_db()
    assert page.status == Page.Status.SUCCEEDED and "token budget" in page.escalation["why"]


@pytest.mark.django_db(transaction=True)
def test_an_escalated_page_whose_vlm_left_keeps_its_local_reading(job, served):
    served.add(VLM)
    page = job.pages.get()
    escalation.local_reading_done(
        claim=claim(page), result=reading("A doubtful page", 0.6), engine_version=LOCAL_VERSION
    )
    assert escalation.escalated_pages_settle_unserved(served={"local", VLM}) == 0
    assert escalation.escalated_pages_settle_unserved(served=None) == 0
    assert escalation.escalated_pages_settle_unserved(served={"local"}) == 1
    page.refresh_from_db()
    assert page.status == Page.Status.SUCCEEDED and "no worker serves" in page.escalation["why"]


@pytest.mark.django_db(transaction=True)
def test_the_reaper_sends_an_escalated_page_again_to_its_vlm_queue(job, served):
    served.add(VLM)
    page = job.pages.get()
    escalation.local_reading_done(
        claim=claim(page), result=reading("A doubtful page", 0.6), engine_version=LOCAL_VERSION
    )
    purge_queues(engine_queue(VLM))  # the broker lost the message
    Page.objects.filter(pk=page.pk).update(sent_at=timezone.now() - timedelta(minutes=5))
    reaped = services.pages_reap(stuck_after=timedelta(minutes=10), unsent_after=timedelta(0))
    assert reaped == 1 and queue_depth(engine=VLM) == 1 and queue_depth(engine="auto") == 0


@pytest.mark.django_db(transaction=True)
def test_an_auto_job_is_answered_from_a_vlm_reading_in_the_cache_not_from_a_doubtful_one(
    make_user, served
):
    owner = make_user("carol")
    data = documents.born_digital_pdf()
    options = services.JobOptions.parse().output_options()
    job = services.job_submit(owner=owner, data=data, filename="a.pdf", page_selection="1")
    common = {"sha256": job.document.sha256, "options": options, "owner_id": owner.pk}
    cached_page_store(
        **common, engine="local", engine_version=LOCAL_VERSION, page_number=2, markdown="doubtful",
        layout={"blocks": []}, method="ocr", input_tokens=0, output_tokens=1,
        quality={"score": 0.7, "needs_review": False},
    )  # fmt: skip
    cached_page_store(
        **common, engine="jina-ocr-v1", engine_version="jina-ocr-v1-vllm-1", page_number=1,
        markdown="from the gpu", layout={"blocks": []}, method="vlm", input_tokens=300,
        output_tokens=9, quality={"score": 0.0, "needs_review": False},
    )  # fmt: skip
    auto = services.job_submit(owner=owner, data=data, filename="a.pdf", engine="auto")
    pages = {page.number: page for page in auto.pages.all()}
    assert (pages[1].method, pages[1].engine, pages[1].markdown) == (
        "cache", "jina-ocr-v1", "from the gpu",
    )  # fmt: skip
    # A local reading over the auto threshold would have been sent on: read again instead.
    assert (pages[2].status, pages[2].engine) == (Page.Status.QUEUED, "local")


@pytest.mark.django_db(transaction=True)
def test_auto_is_refused_by_name_only_when_unknown(make_user):
    with pytest.raises(services.SubmissionError, match="known engines: auto, jina-ocr-v1"):
        services.job_submit(
            owner=make_user("dave"), data=documents.png_page(), filename="p.png", engine="autoo"
        )


@pytest.mark.django_db(transaction=True)
@override_settings(FOLIO_REFUSE_UNSERVED_ENGINES=True)
def test_an_auto_job_needs_a_local_worker(make_user, monkeypatch):
    from webapp.core import workers

    monkeypatch.setattr(workers, "served_engines_or_none", lambda **_: {"transformers"})
    with pytest.raises(services.SubmissionError, match="no worker serves the engine 'local'"):
        services.job_submit(
            owner=make_user("erin"), data=documents.png_page(), filename="p.png", engine="auto"
        )


@pytest.mark.django_db(transaction=True)
def test_a_local_reading_under_the_threshold_answers_the_next_auto_job(job, served):
    page = job.pages.get()
    escalation.local_reading_done(
        claim=claim(page), result=reading("A clean page", 0.0), engine_version=LOCAL_VERSION
    )
    again = services.job_submit(
        owner=job.owner, data=documents.born_digital_pdf(), filename="report.pdf",
        engine="auto", page_selection="1",
    )  # fmt: skip
    hit = again.pages.get()
    assert (hit.method, hit.engine, hit.markdown) == ("cache", "local", "A clean page")
