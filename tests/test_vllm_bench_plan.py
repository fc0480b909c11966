"""bench/vllm_gpu.py's plan, without a GPU: ``--dry-run`` on the shared corpus and a tiny
checkpoint folder prints what the bench would run, and refuses what it could not."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from model.engines.vllm.prompt import JINA_OCR_LONG_PROMPT, JINA_OCR_PROMPT
from tests.vllm import tiny_checkpoint
from tests.workers import REPOSITORY

BENCH = REPOSITORY / "bench" / "vllm_gpu.py"
CORPUS = REPOSITORY.parent / "shared" / "corpus"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_checkpoint.write(tmp_path_factory.mktemp("tiny"), weights=False)


def bench(model, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPOSITORY)}
    return subprocess.run(
        [sys.executable, str(BENCH), "--model", str(model), "--corpus", str(CORPUS), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def plan(model, *args: str) -> tuple[dict, str]:
    done = bench(model, "--dry-run", *args)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("plan "))
    return json.loads(line.removeprefix("plan ")), done.stdout


def test_the_plan_is_the_seeds_matrix_under_one_constraint_on_mixed_dense_pages(model):
    got, out = plan(model, "--pages", "200")

    # K=0/1/3 × eager/graphs, the baseline a user would run without a draft head among them.
    assert got["presets"] == ["off-eager", "off", "k1-eager", "k1-graphs", "k3-eager", "k3-graphs"]
    assert got["baseline"] == "off" and got["concurrency"] == 32 and got["pages"] == 200
    assert got["constraints"].startswith("n-gram blocker off for every preset")
    # Mixed documents, none dominating (the maths book holds 117 of the corpus's 216 pages),
    # pages dense enough to be about the seeds' length.
    assert got["documents"] >= 8 and got["most_pages_of_one_document"] <= 8
    assert 600 <= got["estimated_output_tokens_per_page"] <= 1500
    # Exactness where it is claimed: float32 at batch 1.
    assert got["exact_pages"] == 8 and got["exact_dtype"] == "float32"
    assert got["prompt"] == "short" and got["prompt_text"] == JINA_OCR_PROMPT
    assert "expected duration: unknown (run --pages 200" in out


def test_the_long_runs_duration_comes_from_the_quick_runs_figures(model, tmp_path):
    row = {
        "load_seconds": 60,
        "pages_per_second": 2.0,
        "output_tokens_per_page": 1000,
        "batch1_decode_tokens_per_second": 100,
    }
    figures = tmp_path / "quick.json"
    figures.write_text(json.dumps({"off": row, "k1-graphs": row}))

    got, out = plan(
        model, "--presets", "off,k1-graphs", "--estimate-from", str(figures), "--warmup", "0"
    )

    # Per preset: two loads (throughput, float32), 1000 pages at 2/s, 16 + 8 pages of 1000
    # tokens at 100 tok/s.
    assert got["expected_seconds"] == 2 * (2 * 60 + 1000 / 2 + 24 * 1000 / 100)
    assert "expected duration: 29 min" in out  # 1,720 s


def test_the_prompt_ab_compares_the_two_public_prompts_and_says_which(model):
    assert plan(model, "--prompt", "long")[0]["prompt_text"] == JINA_OCR_LONG_PROMPT
    assert plan(model, "--prompt", "long")[0]["prompt"] == "long"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--presets", "k1-graphs"], "must include the baseline, off"),
        (["--presets", "off,k9"], "unknown presets ['k9']"),
        (["--pages", "0"], "--pages must be at least 1"),
        (["--estimate-from", "/nonexistent.json"], "no such file"),
    ],
)
def test_a_plan_it_could_not_run_is_refused_before_anything_loads(model, args, message):
    done = bench(model, "--dry-run", *args)
    assert done.returncode == 2 and message in done.stderr
