"""Does a checkpoint carry a FastMTP draft head, and which glue would serve it in vLLM?

Read from the checkpoint's files only (``config.json`` and the safetensors headers), without
vLLM or torch, so the worker and the preflight decide before anything heavy is imported.

Draft tensors go through the same mapping every loader uses (``model.fastmtp.layout``):
jina-ocr-v1 as published (``mtp_module.heads.0.*``), ``mtp_module.*`` / ``mtp_embed_tokens.*``,
or DeepSeek-V3's ``model.layers.<num_hidden_layers>.*``; every shape is checked against the
decoder's config. What the mapping refuses is kept here as the head's ``error``, which stops an
MTP launch (``launch.plan_launch``).

The routes that can serve them, in order:

- ``FOLIO_VLLM_PLUGIN=module:function``: glue named by the operator (for instance the
  checkpoint's own ``register()``), which then replaces Folio's;
- ``folio``: Folio's own registration (``model.engines.vllm.fastmtp_vllm``), for a
  ``DeepseekOCRForCausalLM`` checkpoint: vLLM 0.32 maps ``method: "mtp"`` only for
  ``deepseek_v3``/``deepseek_v32``/``glm_moe_dsa`` configs (``SpeculativeConfig.
  hf_config_override`` in vllm/config/speculative.py), not for ``deepseek_ocr``.

A checkpoint with draft tensors and no route is an error, never a silent "off".
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.fastmtp.layout import (
    DraftLoadError,
    DraftPlan,
    check_shapes,
    is_draft_like,
    plan_draft,
    text_section,
)
from model.safetensors_index import tensor_shapes

PLUGIN_VARIABLE = "FOLIO_VLLM_PLUGIN"
# The architectures Folio's own FastMTP registration knows how to serve.
FOLIO_ROUTE_ARCHITECTURES = ("DeepseekOCRForCausalLM",)
# What Folio's registration of the target leaves out of the decoder's weights, for the draft
# (``fastmtp_vllm._without_draft``); other draft-like names would reach vLLM's DeepSeek-OCR
# loader, which refuses a tensor it has no parameter for.
FILTERED_PREFIXES = ("mtp_module.", "mtp_embed_tokens.")


class DraftRouteError(RuntimeError):
    """Draft tensors that no glue serves, or glue named that cannot be used."""


@dataclass(frozen=True)
class DraftHead:
    tensors: list[str]  # every draft-like tensor name in the checkpoint
    plan: DraftPlan | None  # how Folio's loaders place them; None with an error or no draft
    error: str = ""  # why the mapping refuses them
    filtered: bool = True  # every draft-like tensor is one the target's loader leaves out

    @property
    def present(self) -> bool:
        return bool(self.tensors)

    @property
    def layout(self) -> str:
        return self.plan.layout if self.plan else ""


@dataclass(frozen=True)
class Checkpoint:
    folder: Path
    architecture: str
    model_type: str
    draft: DraftHead
    config: dict[str, Any]

    @property
    def text(self) -> dict[str, Any]:
        return dict(text_section(self.config))


def read_checkpoint(folder: str | Path) -> Checkpoint:
    folder = Path(folder)
    config_file = folder / "config.json"
    try:
        config = json.loads(config_file.read_text())
    except OSError:
        raise DraftRouteError(f"{folder} has no readable config.json: not a checkpoint") from None
    except ValueError as exc:
        raise DraftRouteError(f"{config_file} is not valid JSON: {exc}") from None
    architectures = config.get("architectures") or [""]
    return Checkpoint(
        folder=folder,
        architecture=str(architectures[0]),
        model_type=str(config.get("model_type", "")),
        draft=draft_head(folder, config),
        config=config,
    )


def draft_head(folder: Path, config: dict[str, Any]) -> DraftHead:
    """The draft tensors, mapped and shape-checked as Folio's loaders would."""
    shapes = tensor_shapes(folder)
    layers = text_section(config).get("num_hidden_layers")
    num_layers = int(layers) if layers is not None else None
    names = sorted(n for n in shapes if is_draft_like(n, num_layers))
    v3 = f"model.layers.{num_layers}."
    filtered = all(n.startswith(FILTERED_PREFIXES) or n.startswith(v3) for n in names)
    try:
        plan = plan_draft(shapes, config)
        if plan is not None:
            check_shapes(plan, shapes, config)
    except (DraftLoadError, KeyError, ValueError) as exc:
        return DraftHead(names, None, str(exc), filtered)
    return DraftHead(names, plan, "", filtered)


def named_plugin(environ: Any = None) -> str:
    env = os.environ if environ is None else environ
    named = env.get(PLUGIN_VARIABLE, "").strip()
    if named and (":" not in named or not all(named.partition(":")[::2])):
        raise DraftRouteError(f"{PLUGIN_VARIABLE}={named!r} is not module:function")
    return named


def route(checkpoint: Checkpoint, named: str = "") -> str:
    """Which glue serves the draft head in vLLM: ``plugin:<module:function>`` (``named``),
    ``folio``, or ``""`` when the checkpoint has no draft head. Raises when it has one that
    nothing serves."""
    if not checkpoint.draft.present:
        return ""
    if named:
        return f"plugin:{named}"
    if checkpoint.architecture in FOLIO_ROUTE_ARCHITECTURES:
        return "folio"
    raise DraftRouteError(
        f"{checkpoint.folder} has {len(checkpoint.draft.tensors)} FastMTP draft tensors"
        f" ({checkpoint.draft.layout or 'unplaced'} layout) but architecture"
        f" {checkpoint.architecture!r} has no route that serves them in vLLM: name its glue with"
        f" {PLUGIN_VARIABLE}=module:function, or choose FOLIO_VLLM_SPECULATION=off"
    )
