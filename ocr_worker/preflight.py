"""Preflight for the GPU worker: what it would do with a checkpoint, before vLLM starts.

    python -m ocr_worker.preflight CHECKPOINT_DIR [--json]

Prints the checkpoint's architecture and model type, its FastMTP draft head as Folio's loaders
map it (``model.fastmtp.layout``: the layout, the tensors, what the head shares with the
target, the K it states) and which glue would serve it in vLLM, the output cap against the
decoder's positions, the prompt and its length, the memory plan for the GPU this machine shows
(through NVML or ``nvidia-smi``; ``FOLIO_VLLM_DEVICE_MEMORY_GIB`` stands in for one), the
speculation preset, and the vLLM installed here. Reads the same ``FOLIO_VLLM_*`` settings as
the worker (``FOLIO_VLLM_MODEL`` is the argument) and decides through the same code
(``model.engines.vllm.launch``), without importing vLLM or touching the GPU.

Exit status: 0 when the worker would start; 1 with every reason on stderr when it would not
(no checkpoint; draft tensors that no layout places, of the wrong shape, an MoE or MLA draft
block; an MTP preset without a draft head; a max_model_len past the decoder's
max_position_embeddings; a prompt longer than its allowance; a memory plan that cannot fit;
vLLM missing, not at the version Folio pins, or without Folio's entry point); 2 for bad
arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from model.config import ConfigError
from model.engines.base import EngineError
from model.engines.vllm.config import PROMPT_TEXT_ALLOWANCE, VllmConfig
from model.engines.vllm.launch import (
    Launch,
    installed_vllm,
    pinned_vllm,
    plan_launch,
    positions,
    runtime_problems,
)


def report(launch: Launch) -> dict[str, Any]:
    checkpoint, draft = launch.checkpoint, launch.checkpoint.draft
    plan = draft.plan
    return {
        "checkpoint": str(checkpoint.folder),
        "architecture": checkpoint.architecture,
        "model_type": checkpoint.model_type,
        "decoder": {
            key: checkpoint.text.get(key)
            for key in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size")
        },
        "draft_head": {
            "present": draft.present,
            "layout": draft.layout or None,
            "prefix": plan.prefix if plan else None,
            "tensors": len(plan.draft_tensors) if plan else len(draft.tensors),
            "shares": {
                "embedding": not plan.own_embedding,
                "norm": not plan.own_norm,
                "lm_head": not plan.own_head,
            }
            if plan
            else None,
            "ignored_copies": list(plan.ignored) if plan else [],
            "checkpoint_k": plan.head.speculative_steps if plan else None,
            "unserved": draft.error or None,
        },
        "draft_glue": launch.route or None,
        "speculation": {
            "preset": launch.speculation.name,
            "method": launch.speculation.method,
            "num_speculative_tokens": launch.speculation.tokens,
            "cuda_graphs": not launch.speculation.eager,
            "why": launch.speculation_reason,
        },
        "positions": {
            "max_model_len": launch.engine_args.get("max_model_len"),
            "max_position_embeddings": positions(checkpoint),
            "output_cap": launch.config.output_cap,
        },
        "prompt": {
            "text": launch.prompt,
            "text_tokens": launch.prompt_tokens,
            "allowance": PROMPT_TEXT_ALLOWANCE,
        },
        "memory_plan": {**launch.memory.as_dict(), "lines": launch.memory.lines()},
        "engine_args": {k: v for k, v in launch.engine_args.items() if k != "model"},
    }


def text(data: dict[str, Any], vllm: dict[str, Any]) -> str:
    draft = data["draft_head"]
    spec, where, prompt = data["speculation"], data["positions"], data["prompt"]
    shares = draft["shares"] or {}
    shared = [name for name, yes in shares.items() if yes]
    lines = [
        f"checkpoint    {data['checkpoint']}",
        f"architecture  {data['architecture']} (model type {data['model_type']})",
        "decoder       " + ", ".join(f"{k} {v}" for k, v in data["decoder"].items()),
        "draft head    "
        + (
            f"yes: {draft['tensors']} tensors, {draft['layout']} layout ({draft['prefix']}*)"
            f", shares {', '.join(shared) or 'nothing'} with the target"
            + (f", states K={draft['checkpoint_k']}" if draft["checkpoint_k"] else "")
            if draft["present"] and draft["layout"]
            else "none"
        ),
        *(
            [f"draft copies  ignored (shared): {', '.join(draft['ignored_copies'])}"]
            if draft["ignored_copies"]
            else []
        ),
        f"draft glue    {data['draft_glue'] or 'none needed'}",
        f"preset        {spec['preset']} ({spec['why']})",
        f"positions     max_model_len {where['max_model_len']} of the decoder's"
        f" max_position_embeddings {where['max_position_embeddings']}"
        f" (output cap {where['output_cap']} tokens)",
        f"prompt        {prompt['text']!r}",
        f"prompt length {prompt['text_tokens'] if prompt['text_tokens'] is not None else '?'}"
        f" text tokens of the {prompt['allowance']} allowed",
        *(f"memory        {line}" for line in data["memory_plan"]["lines"]),
        f"vllm          {vllm['installed'] or 'not installed'} (Folio pins {vllm['pinned']})",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ocr_worker.preflight", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("checkpoint", help="the checkpoint's folder (FOLIO_VLLM_MODEL)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    refusals = []
    launch = None
    try:
        config = VllmConfig.from_env({**os.environ, "FOLIO_VLLM_MODEL": args.checkpoint})
        launch = plan_launch(config)
    except (ConfigError, EngineError) as exc:
        refusals.append(str(exc))
    have = installed_vllm()
    vllm = {"installed": " ".join(have) if have else None, "pinned": pinned_vllm()}
    refusals.extend(runtime_problems())
    if launch is not None:
        data = report(launch)
        print(json.dumps({**data, "vllm": vllm}, indent=2) if args.json else text(data, vllm))
        if not launch.memory.fits:
            refusals.append("the memory plan does not fit")
    for reason in refusals:
        print(f"preflight: the worker would not start: {reason}", file=sys.stderr)
    return 1 if refusals else 0


if __name__ == "__main__":
    sys.exit(main())
