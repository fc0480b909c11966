"""What the GPU worker decides before vLLM starts (preset, draft glue, max_model_len, memory
plan, what it refuses), and the preflight that prints it: on the tiny checkpoint in jina-ocr-v1's
published layout and on variants of it that vLLM would refuse, no vLLM."""

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
from ocr_worker.preflight import main as preflight_main
from tests import FASTMTP_EXTRA
from tests.workers import REPOSITORY

# The tiny checkpoint's weights are made and written with PyTorch and safetensors.
pytest.importorskip("torch", reason=FASTMTP_EXTRA)
pytest.importorskip("safetensors.torch", reason=FASTMTP_EXTRA)

from tests.vllm import tiny_checkpoint  # noqa: E402

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


def variant(folder, *, tensors=None, config=None):
    """The tiny checkpoint with its tensors or config changed by ``tensors(dict)`` and
    ``config(dict)`` (each changes its argument in place)."""
    made, cfg = tiny_checkpoint.tensors(), tiny_checkpoint.config()
    if tensors:
        tensors(made)
    if config:
        config(cfg)
    made = {name: t.clone().contiguous() for name, t in made.items()}
    return tiny_checkpoint.write(folder, tensors_=made, config_=cfg)


HEAD = "mtp_module.heads.0."


def config(folder, **env) -> VllmConfig:
    return VllmConfig.from_env({"FOLIO_VLLM_MODEL": str(folder), **env})


def test_the_published_layout_gets_mtp_at_the_checkpoints_own_k_with_cuda_graphs(jina_like):
    launch = plan_launch(config(jina_like), device=GPU_40)
    assert launch.speculation is PRESETS["k3-graphs"]
    assert "mtp_num_speculative_steps" in launch.speculation_reason
    assert launch.engine_args["speculative_config"] == {
        "method": "mtp",
        "num_speculative_tokens": 3,
    }
    assert launch.engine_args["enforce_eager"] is False
    assert launch.route == "folio"
    plan = launch.checkpoint.draft.plan
    assert plan.layout == "heads" and plan.prefix == HEAD
    # Twelve tensors of its own; the final norm, embedding and head are the target's.
    assert len(plan.draft_tensors) == 12
    assert plan.sources["norm.weight"] == "model.norm.weight"
    assert not (plan.own_embedding or plan.own_head or plan.own_norm)


def test_with_cuda_graphs_off_the_default_is_the_same_k_eager(jina_like):
    launch = plan_launch(
        config(jina_like, FOLIO_VLLM_ENGINE_ARGS='{"enforce_eager": true}'), device=GPU_40
    )
    assert launch.speculation is PRESETS["k3-eager"]
    assert launch.engine_args["speculative_config"]["num_speculative_tokens"] == 3


def test_a_checkpoint_that_states_no_k_gets_k1(tmp_path):
    older = tiny_checkpoint.write(tmp_path / "older", layout="mtp_module")
    launch = plan_launch(config(older), device=GPU_40)
    assert launch.speculation is PRESETS["k1-graphs"]
    assert launch.checkpoint.draft.layout == "mtp_module"


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
    assert launch.engine_args["max_model_len"] == 933 + 192 + 4000


def test_unset_the_token_cap_is_lowered_to_what_the_decoders_positions_leave(jina_like):
    # The tiny decoder has DeepSeek-OCR's 8,192 positions: 933 + 192 + 8192 would not fit.
    launch = plan_launch(config(jina_like), device=GPU_40)
    assert launch.config.output_cap == 8192 - 933 - 192
    assert launch.engine_args["max_model_len"] == 8192


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
    assert plan.kv_bytes_per_page == plan.kv_bytes_per_token * (933 + 192 + 1000)
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
    out = done.stdout
    assert "DeepseekOCRForCausalLM (model type deepseek_vl_v2)" in out
    assert "draft head    yes: 12 tensors, heads layout (mtp_module.heads.0.*)" in out
    assert "shares embedding, norm, lm_head with the target, states K=3" in out
    assert "draft glue    folio" in out
    assert "preset        k3-graphs" in out
    assert "max_model_len 8192 of the decoder's max_position_embeddings 8192" in out
    assert "prompt length 16 text tokens of the 192 allowed" in out
    assert "KV budget" in out and "pages fit at full length" in out
    assert "Transcribe the provided document image" in out
    # This virtualenv has no vLLM: that, and nothing about the checkpoint, stops the worker
    # (the vLLM tier runs the same preflight where vLLM is installed, and it exits 0).
    assert done.returncode == 1
    assert refusals(done) == [
        "vLLM is not installed here (pip install -e '.[vllm]', Dockerfile.gpu)"
    ]


def refusals(done) -> list[str]:
    prefix = "preflight: the worker would not start: "
    return [
        line.removeprefix(prefix) for line in done.stderr.splitlines() if line.startswith(prefix)
    ]


def checkpoint_refusals(done) -> list[str]:
    return [r for r in refusals(done) if not r.startswith("vLLM is not installed")]


def test_the_preflight_exits_non_zero_with_the_reason(jina_like, tmp_path):
    small = preflight(jina_like, FOLIO_VLLM_DEVICE_MEMORY_GIB="1")
    assert small.returncode == 1
    assert "the memory plan does not fit" in checkpoint_refusals(small)
    missing = preflight(tmp_path / "nothing-here")
    assert missing.returncode == 1
    assert "no readable config.json" in missing.stderr


def _renamed(t):
    for name in [n for n in t if n.startswith(HEAD)]:
        t[name.replace(HEAD, "model.mtp.layers.0.")] = t.pop(name)


def _narrow(t):
    for part in ("gate_proj", "up_proj"):
        t[f"{HEAD}mtp_block.mlp.{part}.weight"] = t[f"{HEAD}mtp_block.mlp.{part}.weight"][:64]
    t[f"{HEAD}mtp_block.mlp.down_proj.weight"] = t[f"{HEAD}mtp_block.mlp.down_proj.weight"][:, :64]


def _moe(t):
    for part in ("gate_proj", "up_proj", "down_proj"):
        t[f"{HEAD}mtp_block.mlp.experts.0.{part}.weight"] = t.pop(
            f"{HEAD}mtp_block.mlp.{part}.weight"
        )
    t[f"{HEAD}mtp_block.mlp.gate.weight"] = t["model.layers.1.mlp.gate.weight"]


def _mla(t):
    t[f"{HEAD}mtp_block.self_attn.kv_a_proj_with_mqa.weight"] = t.pop(
        f"{HEAD}mtp_block.self_attn.k_proj.weight"
    )


def _second_head(t):
    t["mtp_module.heads.1.enorm.weight"] = t[f"{HEAD}enorm.weight"]


def _short_positions(c):
    c["language_config"]["max_position_embeddings"] = 2048


def _own_norm(c):
    c["mtp_share_norm"] = False


def _moe_config(c):
    c["mtp_moe"] = True


REFUSED = {
    # name: (tensors, config, settings, what the refusal says)
    "renamed": (_renamed, None, {}, "draft tensors that no layout places: model.mtp.layers.0."),
    "narrow": (
        _narrow,
        None,
        {},
        "mtp_module.heads.0.mtp_block.mlp.gate_proj.weight is [64, 64],"
        " the decoder's config makes it [128, 64]",
    ),
    "moe": (_moe, None, {}, "mtp_block.mlp.experts.0.down_proj.weight (an MoE block"),
    "moe-config": (None, _moe_config, {}, "mtp_moe is true"),
    "mla": (_mla, None, {}, "kv_a_proj_with_mqa.weight (MLA projections"),
    "second-head": (_second_head, None, {}, "draft heads [0, 1] in the checkpoint"),
    "own-norm-missing": (
        None,
        _own_norm,
        {},
        "mtp_share_norm is false but the draft head ships no final norm of its own",
    ),
    "positions": (
        None,
        _short_positions,
        {"FOLIO_VLLM_MAX_TOKENS": "4000"},
        "max_model_len 5125 is more than the decoder's max_position_embeddings 2048,"
        " which vLLM 0.32 refuses at start: set FOLIO_VLLM_MAX_TOKENS to at most 923",
    ),
    "long-prompt": (
        None,
        None,
        {"FOLIO_VLLM_PROMPT": "Transcribe " * 200},
        "the prompt takes 201 text tokens, more than the 192",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_preflight_refuses_what_vllm_would_refuse_naming_it(
    name, tmp_path, monkeypatch, capsys
):
    tensors, cfg, settings, reason = REFUSED[name]
    folder = variant(tmp_path / name, tensors=tensors, config=cfg)
    for key, value in {"FOLIO_VLLM_DEVICE_MEMORY_GIB": "40", **settings}.items():
        monkeypatch.setenv(key, value)
    status = preflight_main([str(folder)])  # in this process: the subprocess form is above
    done = subprocess.CompletedProcess([], status, *capsys.readouterr())
    assert done.returncode == 1
    found = checkpoint_refusals(done)
    assert len(found) == 1 and reason in found[0], done.stderr
    # The worker decides through the same code, and refuses the same.
    with pytest.raises(EngineError) as refused:
        plan_launch(config(folder, **settings), device=GPU_40)
    assert reason in str(refused.value)


def test_unplaced_draft_tensors_are_refused_even_with_speculation_off(tmp_path):
    # vLLM's DeepSeek-OCR class would meet them among the decoder's weights and refuse them.
    folder = variant(tmp_path / "renamed", tensors=_renamed)
    with pytest.raises(EngineError, match="no layout places"):
        plan_launch(config(folder, FOLIO_VLLM_SPECULATION="off"), device=GPU_40)
    # A head Folio's target registration leaves out may be left unserved, by choice.
    second = variant(tmp_path / "second", tensors=_second_head)
    assert plan_launch(config(second, FOLIO_VLLM_SPECULATION="off"), device=GPU_40).route == ""


def test_the_position_limit_is_not_hit_when_the_cap_is_left_to_the_checkpoint(tmp_path):
    folder = variant(tmp_path / "short", config=_short_positions)
    launch = plan_launch(config(folder), device=GPU_40)
    assert launch.engine_args["max_model_len"] == 2048
    assert launch.config.output_cap == 2048 - 933 - 192
