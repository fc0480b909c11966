"""What the GPU worker decides before vLLM starts (preset, draft glue, max_model_len, memory
plan), and the preflight that prints it: on the tiny jina-ocr-v1-shaped checkpoint, no vLLM."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from model.config import ConfigError
from model.engines.base import EngineError
from model.engines.vllm import memory
from model.engines.vllm.config import PRESETS, VllmConfig, max_image_placeholders
from model.engines.vllm.launch import plan_launch
from tests.vllm import tiny_checkpoint
from tests.workers import REPOSITORY

GPU_40 = memory.Device("cuda", "a 40 GiB GPU", 40 * memory.GIB)


@pytest.fixture(scope="module")
def jina_like(tmp_path_factory):
    return tiny_checkpoint.write(tmp_path_factory.mktemp("tiny-jina-ocr"))


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """DeepSeek-OCR's layout without a draft head."""
    folder = tiny_checkpoint.write(tmp_path_factory.mktemp("tiny-deepseek-ocr"), weights=False)
    from safetensors.torch import save_file

    weights = {k: v for k, v in tiny_checkpoint.tensors().items() if "mtp_" not in k}
    save_file(weights, str(folder / "model.safetensors"))
    return folder


def config(folder, **env) -> VllmConfig:
    return VllmConfig.from_env({"FOLIO_VLLM_MODEL": str(folder), **env})


def test_a_checkpoint_with_a_draft_head_gets_mtp_at_k1_with_cuda_graphs(jina_like):
    launch = plan_launch(config(jina_like), device=GPU_40)
    assert launch.speculation is PRESETS["k1-graphs"]
    assert launch.engine_args["speculative_config"] == {
        "method": "mtp",
        "num_speculative_tokens": 1,
    }
    assert launch.engine_args["enforce_eager"] is False
    assert launch.route == "folio"
    assert launch.checkpoint.draft.layout == "mtp_module"


def test_with_cuda_graphs_off_the_default_is_k3_eager(jina_like):
    launch = plan_launch(
        config(jina_like, FOLIO_VLLM_ENGINE_ARGS='{"enforce_eager": true}'), device=GPU_40
    )
    assert launch.speculation is PRESETS["k3-eager"]
    assert launch.engine_args["speculative_config"]["num_speculative_tokens"] == 3


def test_a_checkpoint_without_a_draft_head_runs_without_speculation_by_default(plain):
    launch = plan_launch(config(plain), device=GPU_40)
    assert launch.speculation is PRESETS["off"]
    assert "speculative_config" not in launch.engine_args
    assert launch.route == ""


def test_mtp_asked_for_on_a_checkpoint_without_a_draft_head_is_refused(plain):
    with pytest.raises(EngineError, match="needs a FastMTP draft head"):
        plan_launch(config(plain, FOLIO_VLLM_SPECULATION="k3-eager"), device=GPU_40)


def test_draft_tensors_that_no_glue_serves_stop_the_worker(jina_like, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    cfg = json.loads((jina_like / "config.json").read_text())
    cfg["architectures"] = ["SomeOtherOCRForCausalLM"]
    (other / "config.json").write_text(json.dumps(cfg))
    (other / "model.safetensors").symlink_to(jina_like / "model.safetensors")
    with pytest.raises(EngineError, match="no route that serves them"):
        plan_launch(config(other), device=GPU_40)
    named = plan_launch(config(other, FOLIO_VLLM_PLUGIN="their_glue:register"), device=GPU_40)
    assert named.route == "plugin:their_glue:register"
    # Speculation off: the draft is left unserved, by choice.
    assert plan_launch(config(other, FOLIO_VLLM_SPECULATION="off"), device=GPU_40).route == ""


def test_max_model_len_is_the_widest_page_plus_the_prompt_plus_the_token_cap(jina_like):
    assert max_image_placeholders() == 273 + 660  # the 1×6 grid: (10·1 + 1)·60
    launch = plan_launch(config(jina_like, FOLIO_VLLM_MAX_TOKENS="4000"), device=GPU_40)
    assert launch.engine_args["max_model_len"] == 933 + 64 + 4000


def test_the_fallback_engine_is_off_unless_asked_for(jina_like):
    assert config(jina_like).repetition_fallback is False
    assert config(jina_like, FOLIO_VLLM_REPETITION_FALLBACK="on").repetition_fallback is True


def test_the_gone_tile_setting_is_refused_with_a_reason(jina_like):
    with pytest.raises(ConfigError, match="FOLIO_VLLM_MAX_TILES is gone"):
        config(jina_like, FOLIO_VLLM_MAX_TILES="9")


@pytest.mark.parametrize(
    "environ, message",
    [
        ({"FOLIO_VLLM_SPECULATION": "k2"}, "FOLIO_VLLM_SPECULATION='k2' is not one of"),
        ({"FOLIO_VLLM_PAGES_IN_FLIGHT": "0"}, "FOLIO_VLLM_PAGES_IN_FLIGHT=0 is below"),
        ({"FOLIO_VLLM_ENGINE_ARGS": "[1]"}, "FOLIO_VLLM_ENGINE_ARGS must be a JSON object"),
        ({"FOLIO_VLLM_PLUGIN": "no_colon"}, "is not module:function"),
    ],
)
def test_a_malformed_setting_is_refused_by_name(jina_like, environ, message):
    with pytest.raises(ConfigError, match=message):
        config(jina_like, **environ)
    with pytest.raises(ConfigError, match="FOLIO_VLLM_MODEL is not set"):
        VllmConfig.from_env({})


def test_the_prompt_is_the_official_one_unless_configured(jina_like):
    assert plan_launch(config(jina_like), device=GPU_40).prompt.startswith(
        "<image>\nTranscribe the provided document image"
    )
    custom = plan_launch(config(jina_like, FOLIO_VLLM_PROMPT="Free OCR."), device=GPU_40)
    assert custom.prompt == "<image>\nFree OCR."


def test_the_memory_plan_counts_weights_kv_per_page_and_the_allowance(jina_like):
    plan = plan_launch(config(jina_like, FOLIO_VLLM_MAX_TOKENS="1000"), device=GPU_40).memory
    weights = sum(t.numel() * 2 for t in tiny_checkpoint.tensors().values())
    assert plan.weights_bytes == weights
    # 2 decoder layers + the draft layer, keys and values, 2 heads × 32, bfloat16.
    assert plan.kv_bytes_per_token == 3 * 2 * 2 * 32 * 2
    assert plan.kv_bytes_per_page == plan.kv_bytes_per_token * (933 + 64 + 1000)
    budget = int(40 * memory.GIB * 0.92) - weights - 2 * memory.GIB
    assert plan.pages_that_fit == budget // plan.kv_bytes_per_page
    assert plan.fits


def test_a_plan_that_cannot_fit_stops_with_the_numbers(jina_like):
    tiny_gpu = memory.Device("cuda", "a 1 GiB GPU", memory.GIB)
    plan = plan_launch(config(jina_like), device=tiny_gpu).memory
    assert not plan.fits
    with pytest.raises(memory.MemoryPlanError, match=r"KV budget: -\d.*0 of 32 pages fit"):
        plan.check()


def preflight(folder, **env):
    return subprocess.run(
        [sys.executable, "-m", "ocr_worker.preflight", str(folder)],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        env={"PATH": "/usr/bin:/bin", **env},
        timeout=120,
    )


def test_the_preflight_prints_what_the_worker_would_do(jina_like):
    done = preflight(jina_like, FOLIO_VLLM_DEVICE_MEMORY_GIB="40")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "DeepseekOCRForCausalLM (model type deepseek_vl_v2)" in out
    assert "draft head    yes: 13 tensors, mtp_module layout" in out
    assert "draft glue    folio" in out
    assert "preset        k1-graphs" in out
    assert "KV budget" in out and "pages fit at full length" in out
    assert "Transcribe the provided document image" in out


def test_the_preflight_exits_non_zero_with_the_reason(jina_like, tmp_path):
    small = preflight(jina_like, FOLIO_VLLM_DEVICE_MEMORY_GIB="1")
    assert small.returncode == 1
    assert "memory plan does not fit" in small.stderr
    missing = preflight(tmp_path / "nothing-here")
    assert missing.returncode == 1
    assert "no readable config.json" in missing.stderr
