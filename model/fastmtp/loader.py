"""Build an ``MTPDraftBlock`` from a checkpoint folder, through ``model.fastmtp.layout``.

The mapping (which tensor fills which parameter, what the ``mtp_*`` keys share, what is
refused) is the layout module's, the same one the preflight and the vLLM draft use; this module
only reads the chosen tensors and copies them in. Every shape is checked against the decoder's
config first, as vLLM would build the layer, so a draft this loader accepts is one vLLM loads.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torch import Tensor

from model.fastmtp.draft import MTPDraftBlock
from model.fastmtp.layers import BlockConfig
from model.fastmtp.layout import (
    EMBEDDING,
    HEAD,
    DraftLoadError,
    DraftPlan,
    check_shapes,
    plan_draft,
    text_section,
)
from model.safetensors_index import shards, tensor_shapes

logger = logging.getLogger(__name__)

__all__ = [
    "DraftLoadError",
    "block_config",
    "load_draft",
    "load_draft_state",
    "read_tensors",
]


def block_config(config: Mapping[str, Any]) -> BlockConfig:
    """The draft layer's shape and RoPE as the decoder's config gives them (vLLM builds the
    draft layer from the same settings)."""
    text = text_section(config)
    heads = int(text["num_attention_heads"])
    parameters = dict(text.get("rope_parameters") or config.get("rope_parameters") or {})
    theta = text.get("rope_theta") or parameters.get("rope_theta") or config.get("rope_theta")
    scaling = text.get("rope_scaling") or None
    if scaling is None and parameters.get("rope_type", "default") != "default":
        scaling = parameters  # Transformers 5 folds the scaling into rope_parameters
    return BlockConfig(
        hidden_size=int(text["hidden_size"]),
        num_heads=heads,
        num_kv_heads=int(text.get("num_key_value_heads") or heads),
        intermediate_size=int(text["intermediate_size"]),
        rope_theta=float(theta or 10000.0),
        rms_eps=float(text.get("rms_norm_eps") or config.get("rms_norm_eps") or 1e-6),
        rope_scaling=scaling,
    )


def read_tensors(folder: Path, names: set[str]) -> dict[str, Tensor]:
    """Only the named tensors out of a folder's shards: ``safe_open`` maps each file and reads
    just those, so the multi-GB decoder weights are never loaded for this."""
    from safetensors import safe_open  # with the fastmtp extra (transformers depends on it)

    found: dict[str, Tensor] = {}
    for path in shards(folder):
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 - safe_open is not a Mapping
                if name in names:
                    found[name] = f.get_tensor(name)
    return found


def load_draft(folder: Path, config: Mapping[str, Any]) -> tuple[MTPDraftBlock, DraftPlan] | None:
    """The checkpoint's draft block, loaded, and the plan it was loaded by; None when the
    checkpoint has no draft tensors. Raises ``DraftLoadError`` naming what cannot be served."""
    shapes = tensor_shapes(folder)
    plan = plan_draft(shapes, config)
    if plan is None:
        return None
    check_shapes(plan, shapes, config)
    vocab = int(text_section(config).get("vocab_size") or config.get("vocab_size") or 0)
    block = MTPDraftBlock(
        block_config(config), vocab, own_embedding=plan.own_embedding, own_head=plan.own_head
    )
    load_draft_state(block, plan, read_tensors(folder, set(plan.sources.values())))
    return block, plan


def load_draft_state(block: MTPDraftBlock, plan: DraftPlan, tensors: Mapping[str, Tensor]) -> None:
    """Copy the plan's tensors into ``block``. A shared embedding or head is the verifier's
    module (``MTPDraftBlock.share``), never copied; everything else must be set."""
    state = {
        target: tensors[name]
        for target, name in plan.sources.items()
        if not (target == EMBEDDING and not plan.own_embedding)
        and not (target == HEAD and not plan.own_head)
    }
    expected = block.state_dict()
    missing = sorted(set(expected) - set(state))
    if missing:
        raise DraftLoadError(f"the checkpoint leaves draft parameters unset: {missing}")
    for key, tensor in state.items():
        if tuple(tensor.shape) != tuple(expected[key].shape):
            raise DraftLoadError(
                f"{plan.sources[key]}: shape {tuple(tensor.shape)}"
                f" != the block's {tuple(expected[key].shape)}"
            )
    block.load_state_dict(state, strict=True)
    logger.info(
        "loaded the FastMTP draft (%s layout, %s*): %d tensors, %d shared copies ignored",
        plan.layout,
        plan.prefix,
        len(state),
        len(plan.ignored),
    )
