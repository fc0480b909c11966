"""Everything decided before vLLM starts: the checkpoint, the speculation preset, the glue that
serves the draft head, the memory plan and the engine arguments.

Shared by the engine (which refuses to start on a plan that cannot work) and the preflight
(which prints it), so that what the preflight says is what the worker does. Imports neither
vLLM nor torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.engines.base import EngineError
from model.engines.vllm import memory
from model.engines.vllm.config import Speculation, VllmConfig, default_preset
from model.engines.vllm.draft import Checkpoint, DraftRouteError, read_checkpoint, route
from model.engines.vllm.prompt import vllm_prompt


@dataclass(frozen=True)
class Launch:
    checkpoint: Checkpoint
    speculation: Speculation
    speculation_reason: str
    route: str  # "" (no draft head), "folio" or "plugin:module:function"
    memory: memory.MemoryPlan
    engine_args: dict[str, Any]
    prompt: str


def plan_launch(
    config: VllmConfig, *, device: memory.Device | None = None, environ: Any = None
) -> Launch:
    """The launch for ``config``; raises ``EngineError`` with the reason when it cannot work
    (the memory plan's own verdict is left to ``launch.memory.check()``)."""
    try:
        checkpoint = read_checkpoint(config.model)
    except DraftRouteError as exc:
        raise EngineError(str(exc)) from None
    has_draft = checkpoint.draft.present
    if config.speculation is None:
        speculation = default_preset(has_draft=has_draft, extra_args=config.extra_args)
        reason = (
            "default for a checkpoint without a draft head"
            if not has_draft
            else "default: CUDA graphs are off (enforce_eager)"
            if speculation.eager
            else "default: MTP at K=1 with CUDA graphs"
        )
    else:
        speculation, reason = config.speculation, "FOLIO_VLLM_SPECULATION"
    if speculation.method == "mtp" and not has_draft:
        raise EngineError(
            f"FOLIO_VLLM_SPECULATION={speculation.name} needs a FastMTP draft head, and"
            f" {config.model} has none (no mtp_module.* tensors, nor model.layers."
            f"<num_hidden_layers>.*): choose off or ngram-k3"
        )
    try:
        glue = route(checkpoint, config.plugin)
    except DraftRouteError as exc:
        if speculation.method == "mtp":
            raise EngineError(str(exc)) from None
        glue = ""  # speculation without the draft: the draft tensors are simply not served
    args = config.engine_args(speculation=speculation)
    if speculation.method is not None:
        args.setdefault("per_request_spec_decode_metrics", "summary")
    plan = memory.plan(
        model=checkpoint.folder,
        max_model_len=int(args.get("max_model_len") or config.max_model_len),
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
        speculation=speculation,
        speculation_reason=reason,
        route=glue,
        memory=plan,
        engine_args=args,
        prompt=vllm_prompt(config.prompt),
    )
