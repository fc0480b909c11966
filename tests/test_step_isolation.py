"""Every page returns its best reading: a step after the engine's raw reading that raises
leaves the page with its reading from before that step, names the step in the page's quality
report (``failed_steps``), flags the page for review and logs the traceback once.

The failures are injected: each registered step (``model.steps.STEPS``) in turn is replaced
by one that raises, and a real page that goes through it (found by a first, clean run) is
read through ``model.pipeline`` as the worker reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from model import pipeline, steps
from model.engines.base import EngineOptions, PageInput, PageResult
from model.engines.local import LocalEngine
from model.formula_stacks import stacked_formulas
from model.quality.realpages import CORPUS
from tests.glyph_pdfs import maxwell_pdf
from tests.test_openai_engine import serve  # noqa: F401  (a fixture: a local OpenAI-like server)

PDF = "application/pdf"
ARABIC = CORPUS / "pdf-samples/015-arabic/habibi.pdf"


@pytest.fixture(scope="module")
def engine() -> LocalEngine:
    return LocalEngine()


# --- the page that raised IndexError (formula_stacks' marks[0]) -----------------------------


def test_maxwells_equations_with_a_zero_width_space_keep_every_formula(engine):
    import pymupdf

    with pymupdf.open(stream=maxwell_pdf(), filetype="pdf") as doc:
        chars = {ch["c"] for b in doc[0].get_text("rawdict")["blocks"] for line in
                 b.get("lines", []) for span in line["spans"] for ch in span["chars"]}  # fmt: skip
        assert "\u200b" in chars  # the page holds the glyph that broke the rebuilding
        with steps.steps_recorded() as failed:
            formulas, notes = stacked_formulas(doc[0], doc[0].get_text("rawdict"))
    assert failed == []
    assert [f.latex for f in formulas] == [
        r"\nabla \cdot E = \frac{\rho}{\epsilon 0}",
        r"\nabla \times E = - \frac{\partial B}{\partial t}",
        r"\nabla \times B = \mu 0J + \mu 0\epsilon 0 \frac{\partial E}{\partial t}",
    ]

    result = pipeline.transcribe_page(engine, PageInput(maxwell_pdf(), PDF, 1), EngineOptions())
    assert result.extra["quality"]["failed_steps"] == []
    assert r"\frac{\partial B}{\partial t}" in result.markdown


def test_a_script_on_a_fraction_stays_on_it():
    import pymupdf

    with pymupdf.open(stream=maxwell_pdf(after_fraction="2"), filetype="pdf") as doc:
        formulas, _ = stacked_formulas(doc[0], doc[0].get_text("rawdict"))
    assert r"\nabla \times E = - \frac{\partial B}{\partial t}^{2}" in [f.latex for f in formulas]


# --- the mechanism ---------------------------------------------------------------------------


def test_a_failing_step_gives_its_fallback_and_is_recorded_once(caplog):
    @steps.page_step("test step", fallback=steps.unchanged)
    def shout(text: str, *, loud: bool = True) -> str:
        raise ValueError("broken on purpose")

    try:
        with steps.steps_recorded() as failed, caplog.at_level(logging.ERROR, "model.steps"):
            assert shout(text="as it was") == "as it was"  # given by keyword, still kept
        assert failed == [steps.StepFailure("test step", "ValueError: broken on purpose")]
        (record,) = [r for r in caplog.records if "test step" in r.getMessage()]
        assert record.exc_info is not None and record.exc_info[0] is ValueError
    finally:
        steps.STEPS.pop(f"{__name__}.{shout.__qualname__}")


def test_what_a_step_must_let_through_goes_through():
    class TimeLimit(Exception):
        pass

    @steps.page_step("test step", fallback=steps.nothing)
    def slow() -> None:
        raise TimeLimit

    steps.let_through(TimeLimit)
    try:
        with steps.steps_recorded() as failed, pytest.raises(TimeLimit):
            slow()
        assert failed == []
    finally:
        steps.STEPS.pop(f"{__name__}.{slow.__qualname__}")


def test_a_page_whose_step_failed_needs_review_at_any_threshold():
    from webapp.jobs.services.options import JobOptions
    from webapp.jobs.services.review import review_judged

    quality = pipeline.with_failed_steps(
        {"score": 0.0, "needs_review": False, "reasons": [], "signals": {}},
        [steps.StepFailure("table format", "KeyError: 'td'")],
    )
    lax = review_judged(quality, JobOptions.parse(review_threshold=1.0))

    assert lax["needs_review"] is True
    assert lax["failed_steps"] == [{"step": "table format", "error": "KeyError: 'td'"}]
    assert lax["reasons"][0].startswith("failed step: table format")


# --- a failure injected into every step ------------------------------------------------------


@dataclass
class Case:
    """A real page, and how to read it through the pipeline."""

    label: str
    read: Callable[[], PageResult]
    expect: str  # a word the page's reading holds with or without any one step


def _cases(engine: LocalEngine, serve) -> list[Case]:  # noqa: F811
    from tests.test_openai_engine import GROUNDED, Stub, engine_for, ok, png_page
    from tests.test_ruled_tables import _drawn_table

    def local(data: bytes, mime: str, **options) -> Callable[[], PageResult]:
        return lambda: pipeline.transcribe_page(
            engine, PageInput(data, mime, 1), EngineOptions(**options)
        )

    vlm, _ = engine_for(serve(Stub([ok(GROUNDED)])))  # answers every request alike
    cases = [
        Case("formulas, text layer", local(maxwell_pdf(), PDF, normalize="whitespace"), "Maxwell"),
        Case("html tables", local(maxwell_pdf(), PDF, table_format="html"), "Maxwell"),
        Case("ruled table, scanned", local(_drawn_table(True), "image/png"), "Vienna"),
        Case(
            "a VLM's grounded output",
            lambda: pipeline.transcribe_page(vlm, png_page(), EngineOptions(figures=True)),
            "Invoice",
        ),
    ]
    if ARABIC.is_file():
        cases.append(Case("right to left", local(ARABIC.read_bytes(), PDF), "habibi"))
    return cases


@contextmanager
def failing(step: steps.Step) -> Iterator[None]:
    """A raising function in the step's place for the block (the step looks its function
    up on each call)."""

    def broken(*args, **kwargs):
        raise RuntimeError(f"injected into {step.qualname}")

    real, step.function = step.function, broken
    try:
        yield
    finally:
        step.function = real


@pytest.mark.slow  # OCR of a scanned page, once per step it reaches
def test_a_failure_injected_into_each_step_in_turn_still_gives_a_succeeded_page(
    engine,
    serve,  # noqa: F811
    caplog,
):
    cases = _cases(engine, serve)
    # A clean run first: which steps each page goes through, and its reading without failure.
    reaches: dict[str, Case] = {}
    for case in cases:
        for step in steps.STEPS.values():
            step.calls = 0
        clean = case.read()
        assert clean.extra["quality"]["failed_steps"] == [], case.label
        for qualname, step in steps.STEPS.items():
            if step.calls:
                reaches.setdefault(qualname, case)

    covered: dict[str, set[str]] = {}
    for qualname, case in reaches.items():
        step = steps.STEPS[qualname]
        caplog.clear()
        with failing(step), caplog.at_level(logging.ERROR, "model.steps"):
            result = case.read()  # raises if the page failed
        quality = result.extra["quality"]
        named = [failure["step"] for failure in quality["failed_steps"]]
        assert step.name in named, (qualname, quality)
        assert quality["needs_review"] is True, qualname
        assert case.expect in result.markdown, (qualname, result.markdown[:500])
        logged = [r for r in caplog.records if r.exc_info and qualname in r.getMessage()]
        assert len(logged) == named.count(step.name), qualname  # each failure logged once
        covered.setdefault(step.name, set()).add(qualname)

    missing = set(steps.STEPS) - set(reaches)
    print(
        f"\nstep isolation: {len(reaches)} of {len(steps.STEPS)} step functions, "
        f"{len(covered)} steps covered: {', '.join(sorted(covered))}"
        + (f"; not reached by these pages: {', '.join(sorted(missing))}" if missing else "")
    )
    assert not missing, f"no page of this test reaches {sorted(missing)}"
    for name in (
        "formula rebuilding",
        "markdown repair",
        "right-to-left ordering",
        "table format",
        "ruled grids",
        "line re-reading",
        "layout blocks",
        "signals",
    ):  # fmt: skip  (the steps issue 27 names)
        assert name in covered, name
