"""Preflight for the GPU worker: what it would do with a checkpoint, before vLLM starts.

    python -m ocr_worker.preflight CHECKPOINT_DIR [--json]

Prints the checkpoint's architecture and model type, whether it carries a FastMTP draft head and
which glue would serve it in vLLM, the memory plan for the GPU this machine shows (through NVML
or ``nvidia-smi``; ``FOLIO_VLLM_DEVICE_MEMORY_GIB`` stands in for one), the speculation preset
and the prompt. Reads the same ``FOLIO_VLLM_*`` settings as the worker (``FOLIO_VLLM_MODEL`` is
the argument) and decides through the same code (``model.engines.vllm.launch``), without
importing vLLM or touching the GPU.

Exit status: 0 when the worker would start; 1 with the reason on stderr when it would not (no
checkpoint, draft tensors no glue serves, an MTP preset without a draft head, a memory plan
that cannot fit); 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from model.config import ConfigError
from model.engines.base import EngineError
from model.engines.vllm.config import VllmConfig
from model.engines.vllm.launch import Launch, plan_launch


def report(launch: Launch) -> dict[str, Any]:
    checkpoint, draft = launch.checkpoint, launch.checkpoint.draft
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
            "tensors": draft.tensors,
            "own_embedding": draft.own_embedding,
            "own_head": draft.own_head,
        },
        "draft_glue": launch.route or None,
        "speculation": {
            "preset": launch.speculation.name,
            "method": launch.speculation.method,
            "num_speculative_tokens": launch.speculation.tokens,
            "cuda_graphs": not launch.speculation.eager,
            "why": launch.speculation_reason,
        },
        "memory_plan": {**launch.memory.as_dict(), "lines": launch.memory.lines()},
        "engine_args": {k: v for k, v in launch.engine_args.items() if k != "model"},
        "prompt": launch.prompt,
    }


def text(data: dict[str, Any]) -> str:
    draft = data["draft_head"]
    spec = data["speculation"]
    lines = [
        f"checkpoint    {data['checkpoint']}",
        f"architecture  {data['architecture']} (model type {data['model_type']})",
        "decoder       " + ", ".join(f"{k} {v}" for k, v in data["decoder"].items()),
        "draft head    "
        + (
            f"yes: {draft['tensors']} tensors, {draft['layout']} layout"
            f", own embedding {'yes' if draft['own_embedding'] else 'no'}"
            f", own head {'yes' if draft['own_head'] else 'no'}"
            if draft["present"]
            else "none"
        ),
        f"draft glue    {data['draft_glue'] or 'none needed'}",
        f"preset        {spec['preset']} ({spec['why']})",
        *(f"memory        {line}" for line in data["memory_plan"]["lines"]),
        f"max_model_len {data['engine_args'].get('max_model_len')}",
        f"prompt        {data['prompt']!r}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ocr_worker.preflight", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("checkpoint", help="the checkpoint's folder (FOLIO_VLLM_MODEL)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        config = VllmConfig.from_env({**os.environ, "FOLIO_VLLM_MODEL": args.checkpoint})
        launch = plan_launch(config)
    except (ConfigError, EngineError) as exc:
        print(f"preflight: the worker would not start: {exc}", file=sys.stderr)
        return 1
    data = report(launch)
    print(json.dumps(data, indent=2) if args.json else text(data))
    if not launch.memory.fits:
        print(
            "preflight: the worker would not start: the memory plan does not fit",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
