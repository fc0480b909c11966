"""Map a checkpoint's draft tensors onto ``MTPDraftBlock``.

jina-ocr-v1 stores its FastMTP head beside the decoder as ``mtp_module.*`` plus
``mtp_embed_tokens.*`` (SGLang skips them in plain mode). DeepSeek-V3 stores the same thing as
``model.layers.<num_hidden_layers>.*``. Inside that prefix the names are DeepSeek-V3's:
``enorm``, ``hnorm``, ``eh_proj``, ``shared_head.norm``, ``shared_head.head`` and one decoder
layer (``self_attn.*``, ``mlp.*``, ``input_layernorm``, ``post_attention_layernorm``).

The mapping is strict: a tensor it cannot place (an MLA projection, MoE experts) is an error
that names it, not a silently half-loaded draft block whose acceptance is quietly zero.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import Tensor

from model.fastmtp.draft import MTPDraftBlock
from model.fastmtp.layers import BlockConfig

logger = logging.getLogger(__name__)

DRAFT_PREFIXES = ("mtp_module.", "mtp_embed_tokens.")

# Wrappers some exporters put between the prefix and DeepSeek-V3's names.
_NESTING = re.compile(r"^(?:layers\.0\.|0\.|block\.|decoder_layer\.|mtp_block\.|transformer\.)")
_LAYER_PARTS = ("self_attn.", "mlp.", "input_layernorm.", "post_attention_layernorm.")
_TOP_LEVEL = {
    "enorm.weight": "enorm.weight",
    "hnorm.weight": "hnorm.weight",
    "eh_proj.weight": "eh_proj.weight",
    "shared_head.norm.weight": "norm.weight",
    "norm.weight": "norm.weight",
    "embed_tokens.weight": "embed_tokens.weight",
}
# The verifier's head is shared; a checkpoint's copy of it is not loaded into the block.
_SHARED = {"shared_head.head.weight", "shared_head.local_head.weight", "lm_head.weight"}


class DraftLoadError(ValueError):
    pass


@dataclass
class LoadReport:
    loaded: list[str] = field(default_factory=list)
    shared_skipped: list[str] = field(default_factory=list)


def block_name(name: str, prefix: str = "mtp_module.") -> str | None:
    """The block parameter a checkpoint tensor belongs to, or None for a shared-head copy.

    Raises ``DraftLoadError`` for a draft tensor this block has no place for.
    """
    if name.startswith("mtp_embed_tokens."):
        return "embed_tokens." + name.removeprefix("mtp_embed_tokens.")
    if not name.startswith(prefix):
        raise DraftLoadError(f"{name!r} is not a draft tensor (prefix {prefix!r})")
    rest = name.removeprefix(prefix)
    while (m := _NESTING.match(rest)) is not None:
        rest = rest[m.end() :]
    if rest in _SHARED:
        return None
    if rest in _TOP_LEVEL:
        return _TOP_LEVEL[rest]
    if rest.startswith(_LAYER_PARTS):
        return "block." + rest
    raise DraftLoadError(f"no place in the draft block for {name!r}")


def load_draft_state(
    block: MTPDraftBlock,
    tensors: Mapping[str, Tensor],
    *,
    prefix: str = "mtp_module.",
) -> LoadReport:
    """Copy ``tensors`` (checkpoint names) into ``block``; every block parameter must be set."""
    report = LoadReport()
    state: dict[str, Tensor] = {}
    for name, tensor in tensors.items():
        target = block_name(name, prefix)
        if target is None:
            report.shared_skipped.append(name)
            continue
        if target in state:
            raise DraftLoadError(f"two checkpoint tensors map onto {target!r}")
        state[target] = tensor
        report.loaded.append(name)
    expected = block.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if unexpected:
        raise DraftLoadError(f"tensors for parameters the block lacks: {unexpected}")
    if missing:
        raise DraftLoadError(f"the checkpoint leaves draft parameters unset: {missing}")
    for key, tensor in state.items():
        if tensor.shape != expected[key].shape:
            raise DraftLoadError(
                f"{key}: checkpoint shape {tuple(tensor.shape)}"
                f" != block {tuple(expected[key].shape)}"
            )
    block.load_state_dict(state, strict=True)
    logger.info(
        "loaded %d draft tensors (%d shared-head copies skipped)",
        len(report.loaded),
        len(report.shared_skipped),
    )
    return report


def rename_layer_prefix(tensors: Mapping[str, Tensor], layer: int) -> dict[str, Tensor]:
    """DeepSeek-V3 layout: ``model.layers.<layer>.*`` (the MTP layer) → ``mtp_module.*``."""
    old = f"model.layers.{layer}."
    return {"mtp_module." + k.removeprefix(old): v for k, v in tensors.items() if k.startswith(old)}


def draft_config_from_tensors(
    tensors: Mapping[str, Tensor],
    *,
    num_heads: int,
    num_kv_heads: int,
    rope_theta: float = 10000.0,
    rms_eps: float = 1e-6,
    prefix: str = "mtp_module.",
    rope_scaling: Mapping[str, Any] | None = None,
) -> tuple[BlockConfig, int, bool]:
    """The block's config, vocabulary size and whether it has its own embedding, from shapes."""
    by_target = {block_name(n, prefix): t for n, t in tensors.items()}
    hidden = by_target["eh_proj.weight"].shape[0]
    inter = by_target["block.mlp.gate_proj.weight"].shape[0]
    embed = by_target.get("embed_tokens.weight")
    cfg = BlockConfig(hidden, num_heads, num_kv_heads, inter, rope_theta, rms_eps, rope_scaling)
    vocab = embed.shape[0] if embed is not None else 0
    return cfg, vocab, embed is not None


def _shards(checkpoint: Path) -> list[Path]:
    return sorted(checkpoint.glob("*.safetensors")) if checkpoint.is_dir() else [checkpoint]


def has_draft_tensors(checkpoint: Path, prefixes: Iterable[str] = DRAFT_PREFIXES) -> bool:
    """Whether a checkpoint carries a FastMTP head, from the shards' tensor names alone."""
    from safetensors import safe_open

    wanted = tuple(prefixes)
    for path in _shards(checkpoint):
        with safe_open(str(path), framework="pt") as f:
            if any(name.startswith(wanted) for name in f.keys()):  # noqa: SIM118
                return True
    return False


def read_draft_tensors(
    checkpoint: Path, prefixes: Iterable[str] = DRAFT_PREFIXES
) -> dict[str, Tensor]:
    """Read only the draft tensors out of a folder of ``*.safetensors`` shards (or one file).

    ``safe_open`` maps the file and reads just the named tensors, so the multi-GB decoder
    weights are never loaded for this.
    """
    from safetensors import safe_open  # with the fastmtp extra (transformers depends on it)

    files = _shards(checkpoint)
    if not files:
        raise DraftLoadError(f"no .safetensors files in {checkpoint}")
    wanted = tuple(prefixes)
    tensors: dict[str, Tensor] = {}
    for path in files:
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 - safe_open is not a Mapping
                if name.startswith(wanted):
                    tensors[name] = f.get_tensor(name)
    if not tensors:
        raise DraftLoadError(f"{checkpoint} has no tensors under {wanted}: no FastMTP head")
    return tensors
