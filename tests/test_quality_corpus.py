"""The quality harness end to end on the CI-sized generated corpus with the local engine, and
the output options changing what the engine writes. Pure: ``pytest -p no:django``."""

from __future__ import annotations

import pytest

from model.engines.base import EngineOptions, PageInput, PageResult
from model.engines.registry import load_engine
from model.pipeline import finish_page, transcribe_page
from model.quality import corpus
from model.quality.harness import evaluate
from model.quality.run import main as run_main


@pytest.fixture(scope="module")
def ci_corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("quality-corpus")
    return out, corpus.build(out, ci=True)


@pytest.fixture(scope="module")
def engine():
    return load_engine("local")


@pytest.mark.slow  # OCR of every page of the CI corpus
def test_the_local_engine_scores_as_docs_quality_says_on_the_ci_corpus(ci_corpus, engine):
    out, tests = ci_corpus
    report = evaluate(engine, EngineOptions(table_format="html"), out, tests)
    rates = report.per_type()
    # Floors a little under what docs/QUALITY.md reports, so that a regression fails here.
    assert rates["present"].value >= 0.9
    assert rates["order"].value >= 0.9
    assert rates["table"].value == 1.0
    assert rates["absent"].value == 1.0
    assert rates["baseline"].value == 1.0
    # The local engine rebuilds simple formulas as LaTeX from the glyphs' sizes and baselines.
    assert rates["math"].value == 1.0


@pytest.mark.slow  # OCR of every page of the CI corpus
def test_the_run_command_prints_rates_with_intervals(ci_corpus, capsys):
    out, _ = ci_corpus
    code = run_main(
        ["--pdfs", str(out), "--tests", str(out / "tests.jsonl"), "--option", "headers=keep"]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "overall" in printed and "[" in printed
    assert "absent       0.0 %" in printed  # kept running heads fail the absent tests


def test_headers_keep_and_drop_change_the_output(engine):
    page = PageInput(corpus.headers_footers().pages, "application/pdf", 1)
    kept = transcribe_page(engine, page, EngineOptions(headers="keep")).markdown
    dropped = transcribe_page(engine, page, EngineOptions(headers="drop")).markdown
    assert corpus.HEADER in kept
    assert corpus.HEADER not in dropped
    assert corpus.PARAGRAPHS[0] in dropped


def test_normalisation_changes_what_the_pipeline_returns():
    # pymupdf4llm already unfolds ligatures and joins broken words of a text layer; OCR and
    # vision-language output keep them, and that is where the option acts.
    page = PageInput(corpus.blank_page().pages, "application/pdf", 1)
    raw = "The ﬁrst ﬂood was ﬁfty days long and the water rose exam-\nple high.\n"

    def finished(normalize: str) -> str:
        result = PageResult(markdown=raw, method="vlm")
        return finish_page(page, result, EngineOptions(normalize=normalize)).markdown

    assert finished("") == raw
    assert finished("ligatures") == raw.replace("ﬁ", "fi").replace("ﬂ", "fl")
    assert "example high" in finished("hyphenation,ligatures,whitespace")
