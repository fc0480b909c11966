"""Where a checkpoint's FastMTP draft tensors go: the one mapping every consumer uses.

Torch-free: the preflight reads it with the safetensors headers alone, and the three loaders
(``model.fastmtp.loader`` for Folio's own decoder and the ``transformers`` engine, and the vLLM
draft in ``model.engines.vllm.fastmtp_vllm``) read the same answer, so the preflight refuses
exactly what a loader would refuse.

Layouts (docs/GPU.md cites the public files each fact comes from):

- ``heads``: jina-ocr-v1 as published, ``mtp_module.heads.<i>.{enorm,hnorm,eh_proj}.weight``
  and one dense DeepSeek-V2 decoder layer under ``mtp_module.heads.<i>.mtp_block.*``,
  optionally ``mtp_embed_tokens.weight`` and the head's own ``shared_head.{norm,local_head}``;
- ``mtp_module``: the same names without ``heads.<i>.`` (and ``shared_head.norm``), the layout
  Folio's tier checkpoint used first;
- ``deepseek-v3``: ``model.layers.<num_hidden_layers>.*`` with DeepSeek-V3's MTP names.

The config's ``mtp_*`` keys say which of the target's tensors the head shares
(``mtp_share_embedding_weights``, ``mtp_share_norm``, ``mtp_share_lm_head``): shared, the
target's ``model.embed_tokens`` / ``model.norm`` / ``lm_head`` are used and a copy the head
ships is ignored (vLLM's ``_map_fast_mtp_weight_name`` maps the same way); not shared, the
head's own copy is required. A checkpoint without the key uses its own copy when it ships one.

Everything the mapping cannot place is refused with its name and the reason: an MoE block, MLA
projections, a second head, a draft-like tensor under a prefix no layout knows. A half-loaded
draft would decode with an acceptance quietly near zero; a refused one says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Block parameters, named as ``MTPDraftBlock``'s state_dict names them; ``head.weight`` is the
# head's own output projection (absent when it shares the target's).
CORE = (
    "enorm.weight",
    "hnorm.weight",
    "eh_proj.weight",
    "block.input_layernorm.weight",
    "block.post_attention_layernorm.weight",
    "block.self_attn.q_proj.weight",
    "block.self_attn.k_proj.weight",
    "block.self_attn.v_proj.weight",
    "block.self_attn.o_proj.weight",
    "block.mlp.gate_proj.weight",
    "block.mlp.up_proj.weight",
    "block.mlp.down_proj.weight",
)
NORM, EMBEDDING, HEAD = "norm.weight", "embed_tokens.weight", "head.weight"
# The target's tensors a sharing head reads.
TARGET_NAMES = {
    EMBEDDING: "model.embed_tokens.weight",
    NORM: "model.norm.weight",
    HEAD: "lm_head.weight",
}
SHARE_KEYS = {
    EMBEDDING: "mtp_share_embedding_weights",
    NORM: "mtp_share_norm",
    HEAD: "mtp_share_lm_head",
}
MTP_KEYS = (
    "mtp_num_heads",
    "mtp_moe",
    "mtp_recursive",
    "mtp_num_speculative_steps",
    "num_nextn_predict_layers",
    *SHARE_KEYS.values(),
)

_LAYER = (
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.o_proj.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
)
# Wrappers exporters put between the prefix and the decoder layer's own names.
_NESTING = re.compile(r"^(?:mtp_block\.|layers\.0\.|0\.|block\.|decoder_layer\.|transformer\.)")
_NORM_COPIES = ("shared_head.norm.weight", "shared_head._norm.weight", "norm.weight")
_HEAD_COPIES = (
    "shared_head.head.weight",
    "shared_head.local_head.weight",
    "shared_head._head.weight",
)
_MOE = re.compile(r"^mlp\.(?:experts\.|gate\.|shared_experts\.)")
_MLA = re.compile(r"^self_attn\.(?:q_a_|q_b_|kv_a_|kv_b_)")
_HEADS = re.compile(r"^mtp_module\.heads\.(\d+)\.")
# Anything a FastMTP or NextN export might be called, for names no layout places.
_DRAFT_LIKE = re.compile(r"(?:^|\.)(?:mtp|nextn|draft)[^.]*\.")
_IGNORED = ("rotary_emb.inv_freq",)


class DraftLoadError(ValueError):
    """Draft tensors or ``mtp_*`` settings that no loader can serve; the message says which."""


@dataclass(frozen=True)
class HeadConfig:
    """The checkpoint config's ``mtp_*`` keys (top level, else the decoder's section)."""

    num_heads: int = 1
    moe: bool = False
    recursive: bool = True
    speculative_steps: int | None = None
    nextn_layers: int | None = None
    # None: the key is absent, and the head's own copy is used where it ships one.
    shares: Mapping[str, bool | None] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> HeadConfig:
        text = text_section(config)

        def key(name: str) -> Any:
            return config[name] if name in config else text.get(name)

        steps = key("mtp_num_speculative_steps")
        layers = key("num_nextn_predict_layers")
        return cls(
            num_heads=int(key("mtp_num_heads") or 1),
            moe=bool(key("mtp_moe") or False),
            recursive=bool(True if key("mtp_recursive") is None else key("mtp_recursive")),
            speculative_steps=int(steps) if steps is not None else None,
            nextn_layers=int(layers) if layers is not None else None,
            shares={target: _flag(key(name)) for target, name in SHARE_KEYS.items()},
        )

    def shared(self, target: str) -> bool | None:
        return self.shares.get(target)


def _flag(value: Any) -> bool | None:
    return None if value is None else bool(value)


def text_section(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's section of a DeepSeek-OCR-style config (or the config itself)."""
    for key in ("language_config", "text_config"):
        section = config.get(key)
        if isinstance(section, Mapping):
            return section
    return config


@dataclass(frozen=True)
class DraftPlan:
    """Which checkpoint tensor fills each draft parameter, and what was set aside."""

    layout: str  # "heads" | "mtp_module" | "deepseek-v3"
    prefix: str  # e.g. "mtp_module.heads.0."
    sources: Mapping[str, str]  # block parameter -> checkpoint tensor name
    ignored: tuple[str, ...]  # the head's copies of tensors it shares with the target
    head: HeadConfig

    @property
    def draft_tensors(self) -> list[str]:
        """The checkpoint's own draft tensors that are loaded (the target's shared ones not)."""
        shared = set(TARGET_NAMES.values())
        return sorted(n for n in self.sources.values() if n not in shared)

    @property
    def own_embedding(self) -> bool:
        return EMBEDDING in self.sources and self.sources[EMBEDDING] != TARGET_NAMES[EMBEDDING]

    @property
    def own_head(self) -> bool:
        return HEAD in self.sources and self.sources[HEAD] != TARGET_NAMES[HEAD]

    @property
    def own_norm(self) -> bool:
        return self.sources[NORM] != TARGET_NAMES[NORM]


def is_draft_like(name: str, num_hidden_layers: int | None) -> bool:
    """Whether a tensor looks like part of a draft head, placed or not."""
    if name.startswith(("mtp_module.", "mtp_embed_tokens.")) or _DRAFT_LIKE.search(name):
        return True
    m = re.match(r"^model\.layers\.(\d+)\.", name)
    return m is not None and num_hidden_layers is not None and int(m.group(1)) >= num_hidden_layers


def wanted(name: str, num_hidden_layers: int | None) -> bool:
    """The tensors a draft loader must see: draft-like ones and the target's shareable ones."""
    return name in TARGET_NAMES.values() or is_draft_like(name, num_hidden_layers)


def plan_draft(names: Iterable[str], config: Mapping[str, Any]) -> DraftPlan | None:
    """The draft's plan for a checkpoint with these tensor names, or None when it has no draft
    tensors at all. Raises ``DraftLoadError`` naming whatever cannot be served."""
    text = text_section(config)
    layers = text.get("num_hidden_layers")
    num_layers = int(layers) if layers is not None else None
    names = list(names)
    draft = [n for n in names if is_draft_like(n, num_layers)]
    if not draft:
        return None
    head = HeadConfig.from_config(config)
    _check_head_config(head)
    layout, prefix = _layout(draft, num_layers)
    candidates: dict[str, list[str]] = {}
    refused: list[str] = []
    for name in draft:
        target, reason = _place(name, layout, prefix)
        if target is None:
            if reason:
                refused.append(f"{name} ({reason})")
            continue
        candidates.setdefault(target, []).append(name)
    if refused:
        raise DraftLoadError(
            "draft tensors that no layout places: " + "; ".join(sorted(refused)) + _LAYOUTS
        )
    doubled = {t: ns for t, ns in candidates.items() if len(ns) > 1}
    if doubled:
        raise DraftLoadError(f"two checkpoint tensors map onto one draft parameter: {doubled}")
    present = set(names)
    sources = {t: ns[0] for t, ns in candidates.items() if t in CORE}
    missing = [t for t in CORE if t not in sources]
    if missing:
        raise DraftLoadError(
            f"the checkpoint's draft head ({layout} layout, {prefix}*) leaves unset: "
            + ", ".join(missing)
        )
    ignored: list[str] = []
    for target in (NORM, EMBEDDING, HEAD):
        own = candidates.get(target, [None])[0]
        share = head.shared(target)
        if share is None:  # no key: the head's own copy where it ships one
            share = own is None
        if not share:
            if own is None:
                raise DraftLoadError(
                    f"{SHARE_KEYS[target]} is false but the draft head ships no"
                    f" {_WHAT[target]} of its own (one of {_own_names(target, prefix)})"
                )
            sources[target] = own
            continue
        if own is not None:
            ignored.append(own)
        if TARGET_NAMES[target] in present:
            sources[target] = TARGET_NAMES[target]
        elif target == NORM:
            raise DraftLoadError(
                f"the draft shares the target's final norm ({SHARE_KEYS[NORM]}) but the"
                f" checkpoint has no {TARGET_NAMES[NORM]}"
            )
        # A shared embedding or head absent from the files (a tied embedding, say) is the
        # target's module all the same: the loaders share the module, not a file's tensor.
    return DraftPlan(layout, prefix, sources, tuple(sorted(ignored)), head)


_WHAT = {NORM: "final norm", EMBEDDING: "embedding", HEAD: "output head"}


_LAYOUTS = (
    ". Folio reads mtp_module.heads.0.* (jina-ocr-v1 as published), mtp_module.* and"
    " mtp_embed_tokens.*, or model.layers.<num_hidden_layers>.* (DeepSeek-V3)"
)


def _check_head_config(head: HeadConfig) -> None:
    if head.moe:
        raise DraftLoadError(
            "mtp_moe is true: Folio's draft block (and its vLLM registration) is one dense"
            " decoder layer, an MoE draft block is not served"
        )
    if head.num_heads != 1 or (head.nextn_layers or 1) != 1:
        raise DraftLoadError(
            f"mtp_num_heads={head.num_heads}, num_nextn_predict_layers={head.nextn_layers}:"
            " Folio's draft applies one head recursively, and serves no other"
        )
    if not head.recursive:
        raise DraftLoadError(
            "mtp_recursive is false: Folio's draft (like vLLM's MTP at K > 1) re-applies one"
            " head to its own output, which a non-recursive head was not trained for"
        )


def _layout(draft: Sequence[str], layers: int | None) -> tuple[str, str]:
    heads = sorted({int(m.group(1)) for n in draft if (m := _HEADS.match(n))})
    flat = [n for n in draft if n.startswith("mtp_module.") and not _HEADS.match(n)]
    v3 = f"model.layers.{layers}." if layers is not None else None
    deepseek = [n for n in draft if v3 and n.startswith(v3)]
    kinds = [
        kind for kind, found in (("heads", heads), ("mtp_module", flat), ("v3", deepseek)) if found
    ]
    if len(kinds) > 1:
        raise DraftLoadError(f"draft tensors in more than one layout ({', '.join(kinds)})")
    if heads:
        if heads != [0]:
            raise DraftLoadError(
                f"draft heads {heads} in the checkpoint: Folio serves mtp_module.heads.0 alone"
                " (one head, applied recursively)"
            )
        return "heads", "mtp_module.heads.0."
    if flat:
        return "mtp_module", "mtp_module."
    if deepseek and v3:
        return "deepseek-v3", v3
    return "", ""


def _place(name: str, layout: str, prefix: str) -> tuple[str | None, str]:
    """(block parameter, "") for a placed tensor, (None, reason) for a refused one, (None, "")
    for one that is rightly left alone."""
    if name == "mtp_embed_tokens.weight" and layout in ("heads", "mtp_module"):
        return EMBEDDING, ""
    if not prefix or not name.startswith(prefix):
        return None, "outside the draft head's prefix" if layout else "no layout knows it"
    rest = name.removeprefix(prefix)
    if rest.endswith(_IGNORED):
        return None, ""
    if rest in ("enorm.weight", "hnorm.weight", "eh_proj.weight"):
        return rest, ""
    if rest in _NORM_COPIES:
        return NORM, ""
    if rest in _HEAD_COPIES:
        return HEAD, ""
    if rest == EMBEDDING:
        return EMBEDDING, ""
    while (m := _NESTING.match(rest)) is not None:
        rest = rest[m.end() :]
    if rest in _LAYER:
        return "block." + rest, ""
    if _MOE.match(rest):
        return None, "an MoE block: Folio's draft layer is dense"
    if _MLA.match(rest):
        return None, "MLA projections: Folio's draft layer has plain q/k/v/o projections"
    return None, "no place in the draft block"


def _own_names(target: str, prefix: str) -> str:
    if target == NORM:
        return ", ".join(prefix + n for n in _NORM_COPIES[:2])
    if target == HEAD:
        return ", ".join(prefix + n for n in _HEAD_COPIES[:2])
    return "mtp_embed_tokens.weight, " + prefix + EMBEDDING


def expected_shapes(config: Mapping[str, Any], plan: DraftPlan) -> dict[str, tuple[int, ...]]:
    """Every draft parameter's shape as the decoder's config makes it: vLLM builds the draft
    layer from the decoder's own settings (hidden size, heads, ``intermediate_size`` for the
    dense MLP), so a tensor of another shape cannot load there."""
    text = text_section(config)
    hidden = int(text["hidden_size"])
    heads = int(text["num_attention_heads"])
    kv_heads = int(text.get("num_key_value_heads") or heads)
    head_dim = hidden // heads  # vLLM's multi-head path for DeepSeek-OCR: hidden / heads
    inter = int(text["intermediate_size"])
    vocab = int(text.get("vocab_size") or config.get("vocab_size") or 0)
    shapes: dict[str, tuple[int, ...]] = {
        "enorm.weight": (hidden,),
        "hnorm.weight": (hidden,),
        "eh_proj.weight": (hidden, 2 * hidden),
        "block.input_layernorm.weight": (hidden,),
        "block.post_attention_layernorm.weight": (hidden,),
        "block.self_attn.q_proj.weight": (heads * head_dim, hidden),
        "block.self_attn.k_proj.weight": (kv_heads * head_dim, hidden),
        "block.self_attn.v_proj.weight": (kv_heads * head_dim, hidden),
        "block.self_attn.o_proj.weight": (hidden, heads * head_dim),
        "block.mlp.gate_proj.weight": (inter, hidden),
        "block.mlp.up_proj.weight": (inter, hidden),
        "block.mlp.down_proj.weight": (hidden, inter),
        NORM: (hidden,),
    }
    if vocab:
        shapes[EMBEDDING] = shapes[HEAD] = (vocab, hidden)
    return {t: s for t, s in shapes.items() if t in plan.sources}


def check_shapes(
    plan: DraftPlan, shapes: Mapping[str, Sequence[int]], config: Mapping[str, Any]
) -> None:
    """Refuse every draft tensor whose shape the decoder's config does not give, naming each."""
    wrong = []
    for target, want in expected_shapes(config, plan).items():
        name = plan.sources[target]
        got = tuple(int(d) for d in shapes[name]) if name in shapes else None
        if got is not None and got != want:
            wrong.append(f"{name} is {list(got)}, the decoder's config makes it {list(want)}")
    if wrong:
        raise DraftLoadError(
            "draft tensors of the wrong shape (vLLM builds the draft layer from the decoder's"
            " hidden_size, heads and intermediate_size): " + "; ".join(wrong)
        )
